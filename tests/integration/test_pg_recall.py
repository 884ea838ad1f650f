"""Recall history (dreaming's evidence, the app's "Agent activity") on the PostgreSQL
store: recorded per namespace, kept across a reindex, pruned, in id order for a poller.

Real server (``tests.pg_fixtures``); every search goes through ``memory_search``.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import pytest

from engine.index.pg_store import PgStore
from engine.memory import recall
from engine.memory.dreaming.service import Dreamer
from engine.memory.recall import RecallEvent, count_events, load_events, load_searches, query_key
from engine.tools import SearchAnswer, memory_search, search_memory
from tests.engine_fixtures import write
from tests.pg_fixtures import engine_for, pg_env

psycopg = pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")


def _workspace(ws: Path) -> None:
    write(ws, "MEMORY.md", "# Memory\n\n- The staging database is Postgres on port 5433\n")
    write(ws, "memory/2026-03-10.md", "# 2026-03-10\n\n- Deploy window is Tuesday 14:00\n")


def test_searches_are_recorded_per_namespace_and_survive_a_reindex(
    tmp_path: Path, pg_dsn: str
) -> None:
    ws = tmp_path / "ws"
    _workspace(ws)
    eng = engine_for(ws, pg_env(tmp_path / "s1", pg_dsn, namespace="team-a"), None)
    other = engine_for(ws, pg_env(tmp_path / "s2", pg_dsn, namespace="team-b"), None)
    try:
        assert isinstance(eng.store, PgStore)
        eng.sync()
        other.sync()
        failures = recall.failures()
        out = memory_search(eng, "Postgres  port", min_score=0.0)
        assert [r["path"] for r in out["results"]] == ["MEMORY.md"]
        search_memory(eng, "kubernetes", min_score=0.0, client="claude-code")  # no hit
        memory_search(eng, "   ")  # a blank query records nothing
        assert recall.failures() == failures, "recording failed on PostgreSQL"

        events = load_events(eng.store)
        assert [(e.query, e.query_key, e.path, e.source) for e in events] == [
            ("Postgres  port", "postgres port", "MEMORY.md", "memory")
        ]
        assert events[0].score == pytest.approx(out["results"][0]["score"], abs=1e-6)
        assert len(events[0].chunk_hash) == 64 and events[0].chunk_id is not None
        searches = load_searches(eng.store)  # newest first, with who asked
        assert [(s.client, s.query, len(s.results)) for s in searches] == [
            ("claude-code", "kubernetes", 0),
            ("cli", "Postgres  port", 1),
        ]
        hit = searches[1].results[0]
        assert (hit.path, hit.start_line, hit.end_line) == (
            "MEMORY.md",
            events[0].start_line,
            events[0].end_line,
        )
        assert [s.query for s in load_searches(eng.store, after_id=searches[1].id)] == [
            "kubernetes"
        ]
        # the other namespace shares the database, not the history
        assert load_events(other.store) == [] and load_searches(other.store) == []
        memory_search(other, "deploy window", min_score=0.0)
        assert [e.query for e in load_events(other.store)] == ["deploy window"]
        assert count_events(eng.store) == 1

        space = eng.store.current_space()
        eng.sync(reason="test", force=True)  # a new generation, then one switch
        assert eng.store.current_space() != space
        assert load_events(eng.store) == events
        assert [s.id for s in load_searches(eng.store)] == [s.id for s in searches]

        # dreaming reads the same evidence
        now = dt.datetime.now(dt.UTC)
        assert [e.query for e in Dreamer(eng).events(now)] == ["Postgres  port"]
    finally:
        eng.close()
        other.close()


def test_prune_drops_old_rows_and_caps_them_per_namespace(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = PgStore(pg_dsn, "agent-a"), PgStore(pg_dsn, "agent-b")
    try:
        now = 1_800_000_000.0
        old = now - (recall.RETENTION_DAYS + 1) * 86400

        def ev(at: float, q: str) -> RecallEvent:
            return RecallEvent(at, q, query_key(q), "MEMORY.md", "memory", 1, 2, "h", 0.5)

        recall.record_events(a, [ev(old, "old"), ev(now - 10, "a1"), ev(now - 5, "a2")])  # type: ignore[arg-type]
        recall.record_events(b, [ev(old, "b-old"), ev(now - 7, "b1")])  # type: ignore[arg-type]
        assert recall.prune(a, now=now) == 1  # type: ignore[arg-type]
        assert [e.query for e in load_events(a)] == ["a1", "a2"]  # type: ignore[arg-type]
        assert [e.query for e in load_events(b)] == ["b-old", "b1"]  # type: ignore[arg-type]
        monkeypatch.setattr(recall, "MAX_EVENTS", 1)
        assert recall.prune(a, now=now) == 1  # type: ignore[arg-type]
        assert [e.query for e in load_events(a)] == ["a2"]  # type: ignore[arg-type]
        assert [e.query for e in load_events(b)] == ["b-old", "b1"]  # type: ignore[arg-type]
    finally:
        a.close()
        b.close()


def test_a_poller_sees_every_search_of_concurrent_writers(tmp_path: Path, pg_dsn: str) -> None:
    """The app polls "ids after the last one I saw"; two processes recording into one
    namespace must not commit an older id after the poller has passed it."""
    ws = tmp_path / "ws"
    _workspace(ws)
    env = pg_env(tmp_path / "s", pg_dsn, namespace="shared")
    writers = [engine_for(ws, env, None) for _ in range(3)]
    reader = PgStore(pg_dsn, "shared")
    per_writer = 25
    try:
        writers[0].sync()
        failures = recall.failures()
        done = threading.Event()

        answers: list[object] = []

        def write_searches(i: int) -> None:
            for j in range(per_writer):
                answers.append(
                    search_memory(writers[i], f"deploy {i}-{j}", min_score=0.0, client=f"w{i}")
                )

        threads = [threading.Thread(target=write_searches, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        seen: dict[int, str] = {}
        last: int | None = None
        while not done.is_set():
            if not any(t.is_alive() for t in threads):
                done.set()  # one more poll after the last commit
            new = load_searches(reader, limit=1000, after_id=last)  # type: ignore[arg-type]
            for s in new:
                seen[s.id] = s.query
            if new:
                last = max(last or 0, new[0].id)
            time.sleep(0.005)
        for t in threads:
            t.join()
        every = {s.id: s.query for s in load_searches(reader, limit=1000)}  # type: ignore[arg-type]
        failed = [a for a in answers if not isinstance(a, SearchAnswer)]
        assert failed == [] and recall.failures() == failures, recall.last_failure()
        assert len(every) == 3 * per_writer
        assert seen == every, f"the poller missed {sorted(set(every) - set(seen))}"
    finally:
        for w in writers:
            w.close()
        reader.close()


def test_a_new_process_does_not_lock_the_tables_others_record_into(pg_dsn: str) -> None:
    """A store opened while another process is mid-insert must not take table locks
    for its schema check: ``create index if not exists`` would wait for that insert
    while holding the other table, and the insert's next row would deadlock."""
    first = PgStore(pg_dsn, "busy")
    first.recall.ensure_schema()
    busy = psycopg.connect(pg_dsn)
    late = PgStore(pg_dsn, "late")
    try:
        busy.execute(  # an insert transaction left open, as a recording process's is
            "insert into memdeck_recall_searches(namespace, at, client, query, mode,"
            " max_results, min_score, results) values ('busy', 1, 'x', 'q', 'fts', 6, 0, '[]')"
        )
        checked = threading.Event()

        def check() -> None:
            late.recall.ensure_schema()
            checked.set()

        thread = threading.Thread(target=check, daemon=True)
        thread.start()
        thread.join(timeout=30)
        assert checked.is_set(), "the schema check waited for another process's insert"
        busy.execute(  # the open transaction goes on into the second table
            "insert into memdeck_recall_hits(namespace, search_id, at, path, source,"
            " start_line, end_line, chunk_hash, score) values"
            " ('busy', (select max(id) from memdeck_recall_searches), 1, 'MEMORY.md', 'memory',"
            " 1, 2, 'h', 0.5)"
        )
        busy.commit()
        assert count_events(first) == 1  # type: ignore[arg-type]
    finally:
        busy.close()
        first.close()
        late.close()
