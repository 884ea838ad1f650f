"""The recall log's storage: who searched what, and what came back.

Two tables beside the index (``engine.memory.recall`` decides what goes in them):

* ``recall_searches`` — one row per ``memory_search`` call: time, client, the
  query (once), its normalised key, the mode, the options and the returned hits
  as JSON. The app's "Agent activity" log reads it.
* ``recall_hits`` — one row per returned hit (path, line range, chunk hash and
  score), pointing at its search. Dreaming reads these, joined with the query.

The query is stored once per search, never per hit, and every text column has
a cap applied by the caller (:mod:`engine.memory.recall`), so what one search can
add to the file is bounded. An index written before this layout kept the query
in every hit row (``recall_events``); :meth:`SqliteRecallLog.ensure_schema`
moves those rows over once.

:class:`RecallLog` is the interface; :class:`SqliteRecallLog` keeps the tables in
the SQLite index file and ``engine.index.pg_recall.PgRecallLog`` in the
PostgreSQL database. Each store creates its own when it opens (``store.recall``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.index.db import Database, DatabaseError

#: The ``mode`` of a search qmd answered starts with this (``qmd:query``).
QMD_MODE_PREFIX = "qmd:"
#: The ``mode`` of a search the ``openclaw`` profile answered (``openclaw:hybrid``).
OPENCLAW_MODE_PREFIX = "openclaw:"


@dataclass(frozen=True, slots=True)
class RecallEvent:
    """One search hit as it was recorded."""

    at: float  # unix time
    query: str
    query_key: str  # normalised query, for counting distinct questions
    path: str
    source: str
    start_line: int
    end_line: int
    chunk_hash: str
    score: float
    chunk_id: int | None = None


@dataclass(frozen=True, slots=True)
class ReturnedHit:
    """One result as a search returned it (for the activity log)."""

    path: str
    start_line: int
    end_line: int
    score: float


@dataclass(frozen=True, slots=True)
class RecallSearch:
    """One ``memory_search`` call: who asked, what, and what came back (best first)."""

    id: int
    at: float  # unix time
    client: str  # "cli" for ``memdeck search``, else the MCP client's name
    query: str
    mode: str
    max_results: int  # the options the search ran with, so it can be replayed as it was
    min_score: float
    results: tuple[ReturnedHit, ...]

    @property
    def backend(self) -> str:
        """Who answered: ``"qmd"``, ``"openclaw"`` (the profile: OpenClaw 2026.9.6's
        ranking on the builtin files) or ``"builtin"`` (memdeck's ranking)."""
        if self.mode.startswith(QMD_MODE_PREFIX):
            return "qmd"
        return "openclaw" if self.mode.startswith(OPENCLAW_MODE_PREFIX) else "builtin"

    @property
    def mode_name(self) -> str:
        """The mode without the backend's prefix (``fts``, ``hybrid``, qmd's ``query``…)."""
        for prefix in (QMD_MODE_PREFIX, OPENCLAW_MODE_PREFIX):
            if self.mode.startswith(prefix):
                return self.mode[len(prefix) :]
        return self.mode


@dataclass(frozen=True, slots=True)
class SearchRow:
    """What one search writes to ``recall_searches`` (texts already capped)."""

    at: float
    client: str
    query: str
    query_key: str
    mode: str
    max_results: int
    min_score: float
    results: tuple[ReturnedHit, ...]
    #: False for hits recorded without a visible search (the activity log hides them)
    shown: bool = True

    def results_json(self) -> str:
        return json.dumps(
            [[h.path, h.start_line, h.end_line, round(h.score, 6)] for h in self.results],
            ensure_ascii=False,
        )

    def values(self) -> tuple[object, ...]:
        """In :data:`SEARCH_COLUMNS` order."""
        return (
            self.at,
            self.client,
            self.query,
            self.query_key,
            self.mode,
            self.max_results,
            self.min_score,
            self.results_json(),
            int(self.shown),
        )


@dataclass(frozen=True, slots=True)
class HitRow:
    """What one returned hit writes to ``recall_hits``."""

    path: str
    source: str
    start_line: int
    end_line: int
    chunk_hash: str
    score: float
    chunk_id: int | None = None

    def values(self, search_id: int, at: float) -> tuple[object, ...]:
        """In :data:`HIT_COLUMNS` order."""
        return (
            search_id,
            at,
            self.path,
            self.source,
            self.start_line,
            self.end_line,
            self.chunk_id,
            self.chunk_hash,
            float(self.score),
        )


SEARCH_COLUMNS = "at, client, query, query_key, mode, max_results, min_score, results, shown"
HIT_COLUMNS = "search_id, at, path, source, start_line, end_line, chunk_id, chunk_hash, score"
#: a hit joined with its search, in :class:`RecallEvent` field order
EVENT_SELECT = (
    "h.at, s.query, s.query_key, h.path, h.source, h.start_line, h.end_line,"
    " h.chunk_hash, h.score, h.chunk_id"
)


@dataclass(frozen=True, slots=True)
class RecallCounts:
    """How big the recall log is (``memdeck status``)."""

    searches: int
    hits: int


class RecallLog(Protocol):
    """The recall log of one index, on whichever store holds it."""

    def record(self, search: SearchRow, hits: Sequence[HitRow]) -> int:
        """One search and its hits, in one transaction; returns the hits written."""
        ...

    def events(self, since: float, until: float) -> list[RecallEvent]:
        """Hits in [since, until] with their search's query, oldest first."""
        ...

    def searches(self, limit: int, after_id: int) -> list[RecallSearch]:
        """The newest ``limit`` shown searches with an id above ``after_id``, newest first."""
        ...

    def counts(self) -> RecallCounts: ...

    def prune(self, cutoff: float, max_hits: int, max_searches: int) -> int:
        """Drop rows older than ``cutoff`` and above the caps; returns the hits removed."""
        ...

    def carry_into(self, path: Path) -> int:
        """Copy the log into the rebuilt index file at ``path`` (SQLite); returns the
        hits copied. A store whose log outlives a rebuild by itself returns 0."""
        ...


def event_of(row: Sequence[Any]) -> RecallEvent:
    """A row in :data:`EVENT_SELECT` order."""
    at, query, key, path, source, start, end, chunk_hash, score, chunk_id = row
    return RecallEvent(
        at=float(at),
        query=str(query),
        query_key=str(key),
        path=str(path),
        source=str(source),
        start_line=int(start),
        end_line=int(end),
        chunk_hash=str(chunk_hash),
        score=float(score),
        chunk_id=None if chunk_id is None else int(chunk_id),
    )


def search_of(row: Sequence[Any]) -> RecallSearch:
    """A row ``(id, at, client, query, mode, max_results, min_score, results)``."""
    sid, at, client, query, mode, max_results, min_score, results = row
    try:
        hits = tuple(
            ReturnedHit(str(p), int(a), int(b), float(sc)) for p, a, b, sc in json.loads(results)
        )
    except (ValueError, TypeError):
        hits = ()
    return RecallSearch(
        id=int(sid),
        at=float(at),
        client=str(client),
        query=str(query),
        mode=str(mode),
        max_results=int(max_results),
        min_score=float(min_score),
        results=hits,
    )


_SCHEMA = (
    """create table if not exists {db}recall_searches (
        id integer primary key,
        at real not null,
        client text not null,
        query text not null,
        query_key text not null default '',
        mode text not null,
        max_results integer not null,
        min_score real not null,
        results text not null,
        shown integer not null default 1
    )""",
    "create index if not exists {db}recall_searches_at on recall_searches(at)",
    """create table if not exists {db}recall_hits (
        id integer primary key,
        search_id integer not null,
        at real not null,
        path text not null,
        source text not null,
        start_line integer not null,
        end_line integer not null,
        chunk_id integer,
        chunk_hash text not null,
        score real not null
    )""",
    "create index if not exists {db}recall_hits_at on recall_hits(at)",
    "create index if not exists {db}recall_hits_search on recall_hits(search_id)",
)
_SEARCH_SELECT = "id, at, client, query, mode, max_results, min_score, results"


class SqliteRecallLog:
    """The recall log in the SQLite index file."""

    def __init__(self, db: Database):
        self.db = db
        self._ready = False
        self._lock = threading.Lock()

    def ensure_schema(self) -> None:
        """Create the tables once per connection; move a pre-split log over once."""
        with self._lock:
            if self._ready:
                return
            with self.db.transaction():
                old_searches = self._columns("recall_searches")
                if old_searches and "query_key" not in old_searches:
                    self.db.execute(
                        "alter table recall_searches add column query_key text not null default ''"
                    )
                    self.db.execute(
                        "alter table recall_searches add column shown integer not null default 1"
                    )
                for stmt in _SCHEMA:
                    self.db.execute(stmt.format(db=""))
                if "query" in self._columns("recall_events"):
                    self._move_per_hit_queries()
            self._ready = True

    def _columns(self, table: str) -> set[str]:
        return {str(r[1]) for r in self.db.execute(f"pragma table_info({table})")}

    def _move_per_hit_queries(self) -> None:
        """Rows of the old layout (the query in every hit) → one search row per
        (time, query), the hits pointing at it; then the old table goes."""
        rows = self.db.execute(
            "select at, query, query_key, path, source, start_line, end_line, chunk_id,"
            " chunk_hash, score from recall_events order by id"
        )
        search_ids: dict[tuple[float, str], int] = {}
        for at, query, key, *hit in rows:
            sid = search_ids.get((at, query))
            if sid is None:
                found = self.db.execute(
                    "select id from recall_searches where at = ? and query = ? limit 1",
                    (at, query),
                )
                if found:
                    sid = int(found[0][0])
                    self.db.execute(
                        "update recall_searches set query_key = ? where id = ?", (key, sid)
                    )
                else:
                    self.db.execute(
                        f"insert into recall_searches({SEARCH_COLUMNS})"
                        " values (?, 'unknown', ?, ?, '', 0, 0, '[]', 0)",
                        (at, query, key),
                    )
                    sid = int(self.db.scalar("select last_insert_rowid()") or 0)
                search_ids[(at, query)] = sid
            self.db.execute(
                f"insert into recall_hits({HIT_COLUMNS}) values (?,?,?,?,?,?,?,?,?)",
                (sid, at, *hit),
            )
        self.db.execute("drop table recall_events")

    def record(self, search: SearchRow, hits: Sequence[HitRow]) -> int:
        self.ensure_schema()
        with self.db.transaction():  # one commit (one fsync) per search
            self.db.execute(
                f"insert into recall_searches({SEARCH_COLUMNS}) values (?,?,?,?,?,?,?,?,?)",
                search.values(),
            )
            sid = int(self.db.scalar("select last_insert_rowid()") or 0)
            if hits:
                self.db.executemany(
                    f"insert into recall_hits({HIT_COLUMNS}) values (?,?,?,?,?,?,?,?,?)",
                    [h.values(sid, search.at) for h in hits],
                )
        return len(hits)

    def events(self, since: float, until: float) -> list[RecallEvent]:
        self.ensure_schema()
        rows = self.db.execute(
            f"select {EVENT_SELECT} from recall_hits h join recall_searches s"
            " on s.id = h.search_id where h.at >= ? and h.at <= ? order by h.at, h.id",
            (since, until),
        )
        return [event_of(r) for r in rows]

    def searches(self, limit: int, after_id: int) -> list[RecallSearch]:
        self.ensure_schema()
        rows = self.db.execute(
            f"select {_SEARCH_SELECT} from recall_searches where id > ? and shown = 1"
            " order by id desc limit ?",
            (after_id, limit),
        )
        return [search_of(r) for r in rows]

    def counts(self) -> RecallCounts:
        """Never writes: an index that has no log yet (or an older one) counts 0."""
        if not self._ready and not self.db.scalar(
            "select 1 from sqlite_master where name = 'recall_hits'"
        ):
            return RecallCounts(0, 0)
        return RecallCounts(
            searches=int(self.db.scalar("select count(*) from recall_searches") or 0),
            hits=int(self.db.scalar("select count(*) from recall_hits") or 0),
        )

    def prune(self, cutoff: float, max_hits: int, max_searches: int) -> int:
        self.ensure_schema()
        with self.db.transaction():
            self.db.execute("delete from recall_hits where at < ?", (cutoff,))
            removed = int(self.db.scalar("select changes()") or 0)
            count = int(self.db.scalar("select count(*) from recall_hits") or 0)
            if count > max_hits:
                self.db.execute(
                    "delete from recall_hits where id in "
                    "(select id from recall_hits order by at limit ?)",
                    (count - max_hits,),
                )
                removed += count - max_hits
            self.db.execute("delete from recall_searches where at < ?", (cutoff,))
            self.db.execute(
                "delete from recall_searches where id <= "
                "(select id from recall_searches order by id desc limit 1 offset ?)",
                (max_searches,),
            )
            # a hit whose search went is no evidence any more (its query is gone)
            self.db.execute(
                "delete from recall_hits where search_id not in (select id from recall_searches)"
            )
            removed += int(self.db.scalar("select changes()") or 0)
        return removed

    def carry_into(self, path: Path) -> int:
        try:
            self.ensure_schema()
            with self.db.attached(path, "carried") as db:
                for stmt in _SCHEMA:
                    db.execute(stmt.format(db="carried."))
                db.execute(
                    f"insert into carried.recall_searches(id, {SEARCH_COLUMNS}) "
                    f"select id, {SEARCH_COLUMNS} from main.recall_searches order by id"
                )
                db.execute(
                    f"insert into carried.recall_hits({HIT_COLUMNS}) "
                    f"select {HIT_COLUMNS} from main.recall_hits order by id"
                )
                return int(db.scalar("select changes()") or 0)
        except DatabaseError:
            return 0


def hits_of(events: Iterable[RecallEvent]) -> list[HitRow]:
    return [
        HitRow(e.path, e.source, e.start_line, e.end_line, e.chunk_hash, e.score, e.chunk_id)
        for e in events
    ]
