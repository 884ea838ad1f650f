"""Recall tracking: every ``memory_search`` hit, kept in the index database.

Dreaming (``engine.memory.dreaming``) decides what deserves a place in ``MEMORY.md``
from how often, how well and for how many different questions a note was
recalled. That evidence is collected here, one row per hit: the query, the hit
(path, line range, text hash, chunk id), its score and the time.

Three promises shape the module:

* **Cheap.** One ``executemany`` inside one short transaction per search, after
  the results are ranked; a failure to record is counted and swallowed, never
  turned into a failed search.
* **Survives a full reindex.** A full reindex builds a new index file and swaps
  it in; :func:`carry_over` copies the events into the new file under the
  engine's swap lock, so the history is not lost with the old file. Rows carry
  the chunk's text hash and line range rather than relying on chunk ids, which
  a rebuild renumbers.
* **Bounded.** Events older than :data:`RETENTION_DAYS` are pruned now and then,
  and the table never holds more than :data:`MAX_EVENTS` rows.

Besides the per-hit rows, each search leaves one :class:`RecallSearch` row naming
the client that asked (``cli``, or the MCP client's name) and everything it got
back, including searches that found nothing: that is the app's "Agent activity"
log, where a user sees (and replays) the ranking their agent actually got.
Dreaming reads only the per-hit rows.

On the PostgreSQL store (``store.backend == "postgres"``) the same rows live in
that database, per namespace (``engine.memory.pg_recall``): a reindex there
switches generations, not files, so the history stays without a carry-over.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import unicodedata
import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from engine.index.db import DatabaseError
from engine.index.store import Store
from engine.memory import pg_recall

if TYPE_CHECKING:
    from engine.index.pg_store import PgStore
    from engine.search.pipeline import SearchOutcome


class PinsStore(Protocol):
    """What recording needs from the engine: its live store, held against a swap
    (:meth:`engine.core.Engine.pinned_store`). A protocol, so this module does not
    import the engine that imports it."""

    def pinned_store(self) -> AbstractContextManager[Store]: ...


#: Longer than any dreaming window (deep maxAgeDays 30, recovery lookback 30).
RETENTION_DAYS = 120
MAX_EVENTS = 200_000
#: Prune every this many recorded searches (pruning is a cheap indexed delete).
PRUNE_EVERY = 500

_SCHEMA = (
    """create table if not exists {db}recall_events (
        id integer primary key,
        at real not null,
        query text not null,
        query_key text not null,
        path text not null,
        source text not null,
        start_line integer not null,
        end_line integer not null,
        chunk_id integer,
        chunk_hash text not null,
        score real not null
    )""",
    "create index if not exists {db}recall_events_at on recall_events(at)",
    "create index if not exists {db}recall_events_path on recall_events(path, start_line)",
    """create table if not exists {db}recall_searches (
        id integer primary key,
        at real not null,
        client text not null,
        query text not null,
        mode text not null,
        max_results integer not null,
        min_score real not null,
        results text not null
    )""",
    "create index if not exists {db}recall_searches_at on recall_searches(at)",
)
_SEARCH_COLUMNS = "at, client, query, mode, max_results, min_score, results"
#: The activity log keeps the newest this many searches.
MAX_SEARCHES = 20_000
#: The ``mode`` of a search qmd answered starts with this (``qmd:query``).
QMD_MODE_PREFIX = "qmd:"
_COLUMNS = "at, query, query_key, path, source, start_line, end_line, chunk_id, chunk_hash, score"

_ready: weakref.WeakSet[Store] = weakref.WeakSet()
_ready_lock = threading.Lock()
_searches_recorded = 0
_failures = 0
_last_failure: str | None = None


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
        """Which backend answered: ``"qmd"`` or ``"builtin"``."""
        return "qmd" if self.mode.startswith(QMD_MODE_PREFIX) else "builtin"


def query_key(query: str) -> str:
    """The form under which two queries count as the same question.

    NFC, lower case and collapsed whitespace: "Postgres  port" and "postgres
    port" are one question, "postgres port?" is another (punctuation can change
    the meaning and costs nothing to keep).
    """
    return " ".join(unicodedata.normalize("NFC", query).lower().split())


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ensure_schema(store: Store) -> None:
    """Create the table on this store's connection once per Store object."""
    with _ready_lock:
        if store in _ready:
            return
    pg = _pg(store)
    if pg is not None:
        pg_recall.ensure_schema(pg)
    else:
        for stmt in _SCHEMA:
            store.db.execute(stmt.format(db=""))
    with _ready_lock:
        _ready.add(store)


def _pg(store: Store) -> PgStore | None:
    """The PostgreSQL store behind ``store``, or None for SQLite."""
    return cast("PgStore", store) if store.backend == "postgres" else None


def record_events(store: Store, events: Sequence[RecallEvent]) -> int:
    """Insert events in one transaction; returns how many were written."""
    if not events:
        return 0
    ensure_schema(store)
    pg = _pg(store)
    if pg is not None:
        return pg_recall.insert(pg, None, _event_rows(events))
    with store.db.transaction():
        return _insert_events(store, events)


def _event_rows(events: Sequence[RecallEvent]) -> list[tuple[object, ...]]:
    """Rows in ``_COLUMNS`` order."""
    return [
        (
            e.at,
            e.query,
            e.query_key,
            e.path,
            e.source,
            e.start_line,
            e.end_line,
            e.chunk_id,
            e.chunk_hash,
            float(e.score),
        )
        for e in events
    ]


def _insert_events(store: Store, events: Sequence[RecallEvent]) -> int:
    """The insert itself, inside the caller's transaction."""
    rows = _event_rows(events)
    store.db.executemany(
        f"insert into recall_events({_COLUMNS}) values (?,?,?,?,?,?,?,?,?,?)", rows
    )
    return len(rows)


class Returned(Protocol):
    """One returned result as recording needs it: a builtin ``Candidate`` or a
    :class:`ReturnedText` built from another backend's hit."""

    @property
    def path(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def chunk_id(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class ReturnedText:
    """A hit another backend (qmd) returned: no chunk id, the text it showed."""

    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    score: float
    chunk_id: int | None = None


def events_from_outcome(query: str, outcome: SearchOutcome, at: float) -> list[RecallEvent]:
    """The rows one search produces: one per returned result (not per candidate)."""
    return events_from_results(query, outcome.results, at)


def events_from_results(query: str, results: Sequence[Returned], at: float) -> list[RecallEvent]:
    key = query_key(query)
    return [
        RecallEvent(
            at=at,
            query=query,
            query_key=key,
            path=c.path,
            source=c.source,
            start_line=c.start_line,
            end_line=c.end_line,
            chunk_hash=text_hash(c.text),
            score=min(1.0, max(0.0, float(c.score))),
            chunk_id=c.chunk_id,
        )
        for c in results
    ]


def record_search(
    engine: PinsStore,
    query: str,
    outcome: SearchOutcome,
    *,
    at: float | None = None,
    client: str = "cli",
) -> int:
    """Record one builtin ``memory_search`` (its hits, and the call in the activity
    log); returns how many hits were written; never raises."""
    opts = outcome.options
    return record_results(
        engine,
        query,
        outcome.results,
        mode=outcome.mode,
        max_results=int(opts.max_results),
        min_score=float(opts.min_score),
        at=at,
        client=client,
    )


def record_results(
    engine: PinsStore,
    query: str,
    results: Sequence[Returned],
    *,
    mode: str,
    max_results: int,
    min_score: float,
    at: float | None = None,
    client: str = "cli",
) -> int:
    """Record one ``memory_search`` answered by any backend: ``results`` best first,
    ``mode`` as the answer named it (``qmd:<searchMode>`` when qmd answered).

    Holds the engine's swap lock for the insert so a full reindex cannot swap
    the file out between "which store" and "write": the event lands either in
    the old file (and is carried over) or in the new one.
    """
    global _searches_recorded, _failures
    if not query.strip():
        return 0
    at = time.time() if at is None else at
    events = events_from_results(query, results, at)
    hits = [[c.path, c.start_line, c.end_line, round(float(c.score), 6)] for c in results]
    row = (
        at,
        client or "unknown",
        query,
        mode,
        int(max_results),
        float(min_score),
        json.dumps(hits, ensure_ascii=False),
    )
    try:
        with engine.pinned_store() as store:
            ensure_schema(store)
            pg = _pg(store)
            if pg is not None:
                written = pg_recall.insert(pg, row, _event_rows(events))
            else:
                with store.db.transaction():  # one commit (one fsync) per search
                    store.db.execute(
                        f"insert into recall_searches({_SEARCH_COLUMNS}) values (?,?,?,?,?,?,?)",
                        row,
                    )
                    written = _insert_events(store, events) if events else 0
            _searches_recorded += 1
            if _searches_recorded % PRUNE_EVERY == 0:
                prune(store)
        return written
    except (DatabaseError, OSError) as exc:
        global _last_failure
        _failures += 1
        _last_failure = f"{type(exc).__name__}: {exc}"  # store errors mask the DSN already
        return 0


def failures() -> int:
    """How many searches could not be recorded in this process (for status/debugging)."""
    return _failures


def last_failure() -> str | None:
    """Why the latest search could not be recorded (None if none failed)."""
    return _last_failure


def prune(store: Store, *, now: float | None = None) -> int:
    """Drop events older than the retention window and above the row cap."""
    ensure_schema(store)
    now = time.time() if now is None else now
    cutoff = now - RETENTION_DAYS * 86400
    pg = _pg(store)
    if pg is not None:
        return pg_recall.prune(pg, cutoff, MAX_EVENTS, MAX_SEARCHES)
    with store.db.transaction():
        store.db.execute("delete from recall_events where at < ?", (cutoff,))
        removed = int(store.db.scalar("select changes()") or 0)
        count = int(store.db.scalar("select count(*) from recall_events") or 0)
        if count > MAX_EVENTS:
            store.db.execute(
                "delete from recall_events where id in "
                "(select id from recall_events order by at limit ?)",
                (count - MAX_EVENTS,),
            )
            removed += count - MAX_EVENTS
        store.db.execute("delete from recall_searches where at < ?", (cutoff,))
        store.db.execute(
            "delete from recall_searches where id <= "
            "(select id from recall_searches order by id desc limit 1 offset ?)",
            (MAX_SEARCHES,),
        )
    return removed


def load_events(
    store: Store, *, since: float | None = None, until: float | None = None
) -> list[RecallEvent]:
    """Events in [since, until], oldest first."""
    ensure_schema(store)
    lo = float("-inf") if since is None else since
    hi = float("inf") if until is None else until
    pg = _pg(store)
    if pg is not None:
        return [_event(r) for r in pg_recall.load_events(pg, lo, hi)]
    sql = f"select {_COLUMNS} from recall_events where at >= ? and at <= ? order by at, id"
    return [_event(r) for r in store.db.execute(sql, (lo, hi))]


def _event(row: Sequence[Any]) -> RecallEvent:
    at, query, key, path, source, start, end, chunk_id, chunk_hash, score = row
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


def load_searches(
    store: Store, *, limit: int = 200, after_id: int | None = None
) -> list[RecallSearch]:
    """The newest ``limit`` searches (newest first), only those after ``after_id`` if given."""
    ensure_schema(store)
    after = -1 if after_id is None else int(after_id)
    pg = _pg(store)
    if pg is not None:
        rows: Any = pg_recall.load_searches(pg, int(limit), after)
    else:
        rows = store.db.execute(
            f"select id, {_SEARCH_COLUMNS} from recall_searches where id > ?"
            " order by id desc limit ?",
            (after, int(limit)),
        )
    out = []
    for sid, at, client, query, mode, max_results, min_score, results in rows:
        try:
            hits = tuple(
                ReturnedHit(str(p), int(a), int(b), float(sc))
                for p, a, b, sc in json.loads(results)
            )
        except (ValueError, TypeError):
            hits = ()
        out.append(
            RecallSearch(
                id=int(sid),
                at=float(at),
                client=str(client),
                query=str(query),
                mode=str(mode),
                max_results=int(max_results),
                min_score=float(min_score),
                results=hits,
            )
        )
    return out


def count_events(store: Store) -> int:
    ensure_schema(store)
    pg = _pg(store)
    if pg is not None:
        return pg_recall.count_events(pg)
    return int(store.db.scalar("select count(*) from recall_events") or 0)


def carry_over(old: Store, new_path: Path | str) -> int:
    """Copy every recall event from ``old`` into the (closed) index file at ``new_path``.

    Called by the engine just before a rebuilt index replaces the old one.
    Uses ATTACH so the rows never pass through Python. Never raises: losing
    the history is bad, failing a reindex over it would be worse.
    """
    try:
        ensure_schema(old)
        with old.db.attached(new_path, "carried") as db:
            for stmt in _SCHEMA:
                db.execute(stmt.format(db="carried."))
            db.execute(
                f"insert into carried.recall_events({_COLUMNS}) "
                f"select {_COLUMNS} from main.recall_events order by id"
            )
            carried = int(db.scalar("select changes()") or 0)
            db.execute(
                f"insert into carried.recall_searches(id, {_SEARCH_COLUMNS}) "
                f"select id, {_SEARCH_COLUMNS} from main.recall_searches order by id"
            )
            return carried
    except DatabaseError:
        return 0
