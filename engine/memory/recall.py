"""Recall tracking: every ``memory_search``, kept beside the index.

Dreaming (``engine.memory.dreaming``) decides what deserves a place in ``MEMORY.md``
from how often, how well and for how many different questions a note was
recalled. That evidence is collected here: one row per search (who asked, the
query, the options, what came back — the app's "Agent activity" log) and one
small row per returned hit (path, line range, text hash, chunk id, score).
Where the rows live is the store's business (``store.recall``, a
:class:`~engine.index.recall_log.RecallLog`: the SQLite index file, or the
PostgreSQL namespace); this module decides what is written.

Four promises shape the module:

* **Cheap.** One short transaction per search, after the results are ranked; a
  failure to record is counted and swallowed, never turned into a failed search.
* **Bounded.** The query is stored once per search, never per hit, and cut to
  :data:`MAX_STORED_QUERY_CHARS` (the cut is said in the stored text); a client
  name to :data:`MAX_CLIENT_CHARS`. Rows older than :data:`RETENTION_DAYS` are
  pruned now and then, and the tables never hold more than :data:`MAX_EVENTS`
  hits and :data:`MAX_SEARCHES` searches.
* **Survives a full reindex.** A full reindex builds a new index file and swaps
  it in; :func:`carry_over` copies the log into the new file under the engine's
  swap lock. Rows carry the chunk's text hash and line range rather than relying
  on chunk ids, which a rebuild renumbers.
* **Honest.** Searches that found nothing are logged too.
"""

from __future__ import annotations

import hashlib
import time
import unicodedata
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from engine.index.db import DatabaseError
from engine.index.index_store import IndexStore
from engine.index.recall_log import (
    OPENCLAW_MODE_PREFIX,
    QMD_MODE_PREFIX,
    HitRow,
    RecallCounts,
    RecallEvent,
    RecallSearch,
    ReturnedHit,
    SearchRow,
    hits_of,
)
from engine.search.results import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from engine.search.model import SearchOutcome

__all__ = [
    "MAX_CLIENT_CHARS",
    "MAX_STORED_QUERY_CHARS",
    "OPENCLAW_MODE_PREFIX",
    "QMD_MODE_PREFIX",
    "RecallEvent",
    "RecallSearch",
    "ReturnedHit",
    "ReturnedText",
    "bounded_text",
    "carry_over",
    "count_events",
    "counts",
    "load_events",
    "load_searches",
    "prune",
    "query_key",
    "record_events",
    "record_results",
    "record_search",
]


class PinsStore(Protocol):
    """What recording needs from the engine: its live store, held against a swap
    (:meth:`engine.core.Engine.pinned_store`). A protocol, so this module does not
    import the engine that imports it."""

    def pinned_store(self) -> AbstractContextManager[IndexStore]: ...


#: Longer than any dreaming window (deep maxAgeDays 30, recovery lookback 30).
RETENTION_DAYS = 120
MAX_EVENTS = 200_000
#: Prune every this many recorded searches (pruning is a cheap indexed delete).
PRUNE_EVERY = 500

#: The activity log keeps the newest this many searches.
MAX_SEARCHES = 20_000
#: A stored query is cut to this many characters (a longer one is refused by the
#: search itself; this bounds what any other caller can store).
MAX_STORED_QUERY_CHARS = MAX_QUERY_CHARS
#: A stored client name (the MCP client's ``clientInfo.name``) is cut to this.
MAX_CLIENT_CHARS = 64

_searches_recorded = 0
_failures = 0
_last_failure: str | None = None


def query_key(query: str) -> str:
    """The form under which two queries count as the same question.

    NFC, lower case and collapsed whitespace: "Postgres  port" and "postgres
    port" are one question, "postgres port?" is another (punctuation can change
    the meaning and costs nothing to keep).
    """
    return " ".join(unicodedata.normalize("NFC", query).lower().split())


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bounded_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut said at its end."""
    if len(text) <= limit:
        return text
    note = f" … [cut: {len(text):,} characters]"
    return text[: max(0, limit - len(note))] + note


def record_events(store: IndexStore, events: Sequence[RecallEvent]) -> int:
    """IndexStore hits recorded outside a visible search (imports, tests): one hidden
    search row per (time, query), its hits pointing at it; returns the hits written."""
    groups: dict[tuple[float, str], list[RecallEvent]] = {}
    for e in events:
        groups.setdefault((e.at, e.query), []).append(e)
    written = 0
    for (at, query), group in groups.items():
        search = SearchRow(
            at=at,
            client="unknown",
            query=bounded_text(query, MAX_STORED_QUERY_CHARS),
            query_key=bounded_text(group[0].query_key, MAX_STORED_QUERY_CHARS),
            mode="",
            max_results=0,
            min_score=0.0,
            results=(),
            shown=False,
        )
        written += store.recall.record(search, hits_of(group))
    return written


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


def hit_rows(results: Sequence[Returned]) -> list[HitRow]:
    """The hit rows one search produces: one per returned result (not per candidate)."""
    return [
        HitRow(
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
    the file out between "which store" and "write": the rows land either in
    the old file (and are carried over) or in the new one.
    """
    global _searches_recorded, _failures, _last_failure
    if not query.strip():
        return 0
    at = time.time() if at is None else at
    hits = hit_rows(results)
    search = SearchRow(
        at=at,
        client=bounded_text(client or "unknown", MAX_CLIENT_CHARS),
        query=bounded_text(query, MAX_STORED_QUERY_CHARS),
        query_key=bounded_text(query_key(query), MAX_STORED_QUERY_CHARS),
        mode=bounded_text(mode, MAX_CLIENT_CHARS),
        max_results=int(max_results),
        min_score=float(min_score),
        results=tuple(ReturnedHit(h.path, h.start_line, h.end_line, h.score) for h in hits),
    )
    try:
        with engine.pinned_store() as store:
            written = store.recall.record(search, hits)
            _searches_recorded += 1
            if _searches_recorded % PRUNE_EVERY == 0:
                prune(store)
        return written
    except (DatabaseError, OSError) as exc:
        _failures += 1
        _last_failure = f"{type(exc).__name__}: {exc}"  # store errors mask the DSN already
        return 0


def failures() -> int:
    """How many searches could not be recorded in this process (for status/debugging)."""
    return _failures


def last_failure() -> str | None:
    """Why the latest search could not be recorded (None if none failed)."""
    return _last_failure


def prune(store: IndexStore, *, now: float | None = None) -> int:
    """Drop rows older than the retention window and above the row caps."""
    now = time.time() if now is None else now
    cutoff = now - RETENTION_DAYS * 86400
    return store.recall.prune(cutoff, MAX_EVENTS, MAX_SEARCHES)


def load_events(
    store: IndexStore, *, since: float | None = None, until: float | None = None
) -> list[RecallEvent]:
    """Hits in [since, until] with their search's query, oldest first."""
    lo = float("-inf") if since is None else since
    hi = float("inf") if until is None else until
    return store.recall.events(lo, hi)


def load_searches(
    store: IndexStore, *, limit: int = 200, after_id: int | None = None
) -> list[RecallSearch]:
    """The newest ``limit`` searches (newest first), only those after ``after_id`` if given."""
    return store.recall.searches(int(limit), -1 if after_id is None else int(after_id))


def count_events(store: IndexStore) -> int:
    """How many hits the log holds."""
    return store.recall.counts().hits


def counts(store: IndexStore) -> RecallCounts:
    """How many searches and hits the log holds (``memdeck status``)."""
    return store.recall.counts()


def carry_over(old: IndexStore, new_path: Path | str) -> int:
    """Copy the recall log of ``old`` into the (closed) index file at ``new_path``.

    Called by the engine just before a rebuilt index replaces the old one. Never
    raises: losing the history is bad, failing a reindex over it would be worse.
    """
    return old.recall.carry_into(Path(new_path))
