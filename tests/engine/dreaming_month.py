"""A synthetic month of daily logs and recall events, shared by the dreaming tests.

"Now" is 2026-03-31 12:00 UTC. The cast (every number in the tests follows
from these lines):

A  2026-03-20 "Postgres runs on port `5433` in the staging cluster #postgres"
   (under "## Infra"), 9 words.
F  2026-03-27 the same plus "today": 10 words, Jaccard(A, F) = 9/10 = 0.9, so
   A and F are one candidate whose representative is F (the newer one).
   Recalls (6, five distinct questions):
     e1 03-20 12:00 .90 "postgres port"                on A
     e2 03-22 12:00 .80 "staging database"             chunk with A and Z; only A
                                                       shares a word ("staging")
     e3 03-25 12:00 .85 "which port does postgres use" on A
     e4 03-28 12:00 .95 "db cluster"                   on F
     e5 03-30 12:00 .70 "Postgres  Port" (= e1's key)  on A
     e6 03-31 06:00 .80 "staging db port"              on F
B  2026-03-10 "Deploys happen on Tuesdays after standup" (under "## 09:30")
   recalls .8/.7/.6 at 03-11, 03-14, 03-17 12:00, three questions.
C  2026-03-21 "Alice prefers async updates …" (under "## People", 6 tags)
   ten recalls at 03-22 … 03-31 12:00, all .8, all "alice preferences".
D  2026-03-26 "The VPN config lives in `ops/vpn.md`": two recalls (.9) at
   03-27 and 03-29 12:00, two questions.
E  2026-02-20 (39 days old) "Quarterly planning doc …": six recalls .95 at
   03-26 … 03-31 12:00, five questions.
R  "Standup moved to `9:15` on Mondays #standup" written on 03-24, 26, 28,
   30 and 31; one recall (.9, "standup time") at 03-31 00:00 on the 03-31 copy.
M  two MEMORY.md entries, two recalls on MEMORY.md at 03-15 12:00.
plus filler: Z (lunch), TLS reminder on 03-30 and 03-31 (+"please", 0.9),
#postgres notes on 03-25, 03-29, 03-30, #release `v2.4` notes on 03-26, 03-28.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from engine.core import Engine
from engine.memory.dreaming.entries import split_entries
from engine.memory.recall import RecallEvent, query_key, record_events

UTC = dt.UTC
NOW = dt.datetime(2026, 3, 31, 12, 0, tzinfo=UTC)

A = "Postgres runs on port `5433` in the staging cluster #postgres"
F = "Postgres runs on port `5433` in the staging cluster today #postgres"
Z = "Lunch with the team at noon"
B = "Deploys happen on Tuesdays after standup"
C = "Alice prefers async updates over meetings #team #alice #comms `slack` `email`"
D = "The VPN config lives in `ops/vpn.md`"
E = "Quarterly planning doc is in the shared drive #planning"
R = "Standup moved to `9:15` on Mondays #standup"
TLS = "Remember to renew the TLS certificate before April 5"
TLS2 = "Remember to renew the TLS certificate before April 5 please"
PG25 = "Read the #postgres release notes for version 17"
PG29 = "Bumped #postgres shared_buffers to 2GB"
PG30 = "Rotated #postgres passwords for the staging cluster"
REL26 = "Cut #release `v2.4` after QA sign-off"
REL28 = "Announce #release `v2.4` in the changelog"
MEMORY = "# Memory\n\n- The user prefers #python for tooling scripts\n- Dog's name is Biscuit\n"

DAYS: dict[str, str] = {
    "2026-02-20": f"# 2026-02-20\n\n- {E}\n",
    "2026-03-10": f"# 2026-03-10\n\n## 09:30\n\n{B}\n",
    "2026-03-20": f"# 2026-03-20\n\n## Infra\n\n- {A}\n- {Z}\n",
    "2026-03-21": f"# 2026-03-21\n\n## People\n\n- {C}\n",
    "2026-03-24": f"# 2026-03-24\n\n- {R}\n",
    "2026-03-25": f"# 2026-03-25\n\n- {PG25}\n",
    "2026-03-26": f"# 2026-03-26\n\n- {R}\n- {D}\n- {REL26}\n",
    "2026-03-27": f"# 2026-03-27\n\n## Infra\n\n- {F}\n",
    "2026-03-28": f"# 2026-03-28\n\n- {R}\n- {REL28}\n",
    "2026-03-29": f"# 2026-03-29\n\n## Infra\n\n- {PG29}\n",
    "2026-03-30": f"# 2026-03-30\n\n- {R}\n- {TLS}\n\n## Infra\n\n- {PG30}\n",
    "2026-03-31": f"# 2026-03-31\n\n- {R}\n- {TLS2}\n",
}


def write_month(ws: Path) -> None:
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    for day, text in DAYS.items():
        (ws / "memory" / f"{day}.md").write_text(text, encoding="utf-8")


def month_engine(make_engine: Callable[..., Engine], ws: Path) -> Engine:
    """An FTS-only engine over the month written into ``ws``, its recall events recorded:
    what every dreaming and promotion test starts from."""
    write_month(ws)
    engine = make_engine(provider=None)
    record_events(engine.store, month_events())
    return engine


def line_of(day: str, text: str) -> int:
    """1-based line of the entry ``text`` in that day's log."""
    path = f"memory/{day}.md"
    for e in split_entries(DAYS[day], path=path, source="daily", day=None):
        if text in e.text:
            return e.start_line
    raise KeyError(text)


def at(day: int, hour: int = 12, month: int = 3) -> float:
    return dt.datetime(2026, month, day, hour, 0, tzinfo=UTC).timestamp()


def hit(when: float, query: str, score: float, day: str, text: str, *, end: int | None = None):
    start = line_of(day, text)
    return RecallEvent(
        at=when,
        query=query,
        query_key=query_key(query),
        path=f"memory/{day}.md",
        source="memory",
        start_line=start if end is None else 1,
        end_line=start if end is None else end,
        chunk_hash="h",
        score=score,
    )


def month_events() -> list[RecallEvent]:
    ev = [
        hit(at(20), "postgres port", 0.90, "2026-03-20", A),
        hit(at(22), "staging database", 0.80, "2026-03-20", A, end=7),  # chunk: A and Z
        hit(at(25), "which port does postgres use", 0.85, "2026-03-20", A),
        hit(at(28), "db cluster", 0.95, "2026-03-27", F),
        hit(at(30), "Postgres  Port", 0.70, "2026-03-20", A),
        hit(at(31, 6), "staging db port", 0.80, "2026-03-27", F),
    ]
    ev += [
        hit(at(11), "deploy day", 0.8, "2026-03-10", B),
        hit(at(14), "when do we deploy", 0.7, "2026-03-10", B),
        hit(at(17), "release schedule", 0.6, "2026-03-10", B),
    ]
    ev += [hit(at(d), "alice preferences", 0.8, "2026-03-21", C) for d in range(22, 32)]
    ev += [
        hit(at(27), "vpn config", 0.9, "2026-03-26", D),
        hit(at(29), "vpn setup", 0.9, "2026-03-26", D),
    ]
    questions = ["planning doc", "quarterly plan", "q1 planning", "drive folder", "planning doc"]
    questions.append("where is the plan")
    ev += [
        hit(at(d), q, 0.95, "2026-02-20", E) for d, q in zip(range(26, 32), questions, strict=True)
    ]
    ev.append(hit(at(31, 0), "standup time", 0.9, "2026-03-31", R))
    for q in ("python tooling", "dog name"):
        ev.append(
            RecallEvent(
                at=at(15),
                query=q,
                query_key=query_key(q),
                path="MEMORY.md",
                source="memory",
                start_line=3,
                end_line=4,
                chunk_hash="m",
                score=0.9,
            )
        )
    return ev
