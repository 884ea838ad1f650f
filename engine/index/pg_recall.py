"""The recall log on the PostgreSQL store: the same rows as ``recall_log``'s SQLite tables.

Why here and not in the index tables: recall history belongs to a *namespace*
(an agent or workspace), not to one generation of its index, so a full reindex
(a new space, then one switch) keeps it without copying anything. Rows of every
namespace share two tables, ``memdeck_recall_searches`` (one row per search, the
app's "Agent activity" log, the query stored once) and ``memdeck_recall_hits``
(one row per returned hit, read by dreaming).

Ids order the activity log and the app polls "newer than the last id I saw".
With several processes searching one namespace (the CLI, an MCP server, the
app), a sequence hands out ids in call order but transactions commit in any
order, so a poller could step over an id committed late. Inserts of one
namespace therefore take a transaction-scoped advisory lock first: ids of a
namespace are handed out, and become visible, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.index.recall_log import (
    EVENT_SELECT,
    HIT_COLUMNS,
    SEARCH_COLUMNS,
    HitRow,
    RecallCounts,
    RecallEvent,
    RecallSearch,
    SearchRow,
    event_of,
    search_of,
)

if TYPE_CHECKING:
    from engine.index.pg_store import PgStore

_SCHEMA = """
create table if not exists memdeck_recall_searches (
    id bigserial primary key, namespace text not null, at double precision not null,
    client text not null, query text not null, mode text not null,
    max_results integer not null, min_score double precision not null, results text not null
);
alter table memdeck_recall_searches add column if not exists query_key text not null default '';
alter table memdeck_recall_searches add column if not exists shown boolean not null default true;
create index if not exists memdeck_recall_searches_id on memdeck_recall_searches (namespace, id);
create table if not exists memdeck_recall_hits (
    id bigserial primary key, namespace text not null, search_id bigint not null,
    at double precision not null, path text not null, source text not null,
    start_line integer not null, end_line integer not null, chunk_id bigint,
    chunk_hash text not null, score double precision not null
);
create index if not exists memdeck_recall_hits_at on memdeck_recall_hits (namespace, at);
create index if not exists memdeck_recall_hits_search on memdeck_recall_hits (search_id);
"""
#: the layout before the query was stored once per search: moved over, then dropped
_MOVE_PER_HIT_QUERIES = """
insert into memdeck_recall_searches
    (namespace, at, client, query, query_key, mode, max_results, min_score, results, shown)
select distinct e.namespace, e.at, 'unknown', e.query, e.query_key, '', 0, 0, '[]', false
from memdeck_recall_events e where not exists (select 1 from memdeck_recall_searches s
    where s.namespace = e.namespace and s.at = e.at and s.query = e.query);
update memdeck_recall_searches s set query_key = e.query_key from memdeck_recall_events e
where s.namespace = e.namespace and s.at = e.at and s.query = e.query and s.query_key = '';
insert into memdeck_recall_hits (namespace, search_id, at, path, source, start_line, end_line,
    chunk_id, chunk_hash, score)
select e.namespace, (select min(s.id) from memdeck_recall_searches s where
    s.namespace = e.namespace and s.at = e.at and s.query = e.query), e.at, e.path, e.source,
    e.start_line, e.end_line, e.chunk_id, e.chunk_hash, e.score
from memdeck_recall_events e order by e.id;
drop table memdeck_recall_events;
"""
#: the same key ``PgStore`` takes to create its own tables (one schema change at a time)
_SCHEMA_LOCK = 7210001
#: every object ``_SCHEMA`` creates
_OBJECTS = (
    "memdeck_recall_searches",
    "memdeck_recall_searches_id",
    "memdeck_recall_hits",
    "memdeck_recall_hits_at",
    "memdeck_recall_hits_search",
)
_SEARCH_SELECT = "id, at, client, query, mode, max_results, min_score, results"


def _in_order(c: Any, namespace: str) -> None:
    """Serialise this namespace's inserts until commit (see the module docstring)."""
    c.execute(
        "select pg_advisory_xact_lock(hashtextextended(%s, 0))", ("memdeck-recall:" + namespace,)
    )


class PgRecallLog:
    """The recall log of one namespace of a PostgreSQL store."""

    def __init__(self, store: PgStore):
        self.store = store
        self._ready = False
        self._lock = threading.Lock()

    def ensure_schema(self) -> None:
        """Create the tables if this database has none yet.

        Only when something is missing: ``create index if not exists`` locks its
        table (SHARE) before it sees that the index exists, and two such locks taken
        while other processes insert into both tables deadlock with them, so a
        process starting beside busy ones would lose a search or fail its own.
        """
        with self._lock:
            if self._ready:
                return
            with self.store.transaction() as c:
                present = c.execute(
                    "select "
                    + ", ".join(["to_regclass(%s) is not null"] * len(_OBJECTS))
                    + ", to_regclass('memdeck_recall_events') is not null",
                    _OBJECTS,
                ).fetchone()
                if present is None or not all(present[:-1]) or present[-1]:
                    c.execute("select pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    c.execute(_SCHEMA)
                    old = c.execute("select to_regclass('memdeck_recall_events') is not null")
                    if old.fetchone()[0]:
                        c.execute(_MOVE_PER_HIT_QUERIES)
            self._ready = True

    @property
    def namespace(self) -> str:
        return self.store.namespace

    def record(self, search: SearchRow, hits: Sequence[HitRow]) -> int:
        self.ensure_schema()
        with self.store.transaction() as c:
            _in_order(c, self.namespace)
            values = list(search.values())
            values[-1] = bool(values[-1])  # shown: a boolean column here
            row = c.execute(
                f"insert into memdeck_recall_searches(namespace, {SEARCH_COLUMNS})"
                " values (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) returning id",
                (self.namespace, *values),
            ).fetchone()
            sid = int(row[0])
            if hits:
                with c.cursor() as cur:
                    cur.executemany(
                        f"insert into memdeck_recall_hits(namespace, {HIT_COLUMNS})"
                        " values (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                        [(self.namespace, *h.values(sid, search.at)) for h in hits],
                    )
        return len(hits)

    def events(self, since: float, until: float) -> list[RecallEvent]:
        self.ensure_schema()
        with self.store.transaction() as c:
            rows = c.execute(
                f"select {EVENT_SELECT} from memdeck_recall_hits h join memdeck_recall_searches s"
                " on s.id = h.search_id where h.namespace = %s and h.at >= %s and h.at <= %s"
                " order by h.at, h.id",
                (self.namespace, since, until),
            ).fetchall()
        return [event_of(r) for r in rows]

    def searches(self, limit: int, after_id: int) -> list[RecallSearch]:
        self.ensure_schema()
        with self.store.transaction() as c:
            rows = c.execute(
                f"select {_SEARCH_SELECT} from memdeck_recall_searches where namespace = %s"
                " and id > %s and shown order by id desc limit %s",
                (self.namespace, after_id, limit),
            ).fetchall()
        return [search_of(r) for r in rows]

    def counts(self) -> RecallCounts:
        self.ensure_schema()
        with self.store.transaction() as c:
            searches = c.execute(
                "select count(*) from memdeck_recall_searches where namespace = %s",
                (self.namespace,),
            ).fetchone()
            hits = c.execute(
                "select count(*) from memdeck_recall_hits where namespace = %s",
                (self.namespace,),
            ).fetchone()
        return RecallCounts(int(searches[0]), int(hits[0]))

    def prune(self, cutoff: float, max_hits: int, max_searches: int) -> int:
        self.ensure_schema()
        ns = self.namespace
        with self.store.transaction() as c:
            _in_order(c, ns)
            removed = c.execute(
                "delete from memdeck_recall_hits where namespace = %s and at < %s", (ns, cutoff)
            ).rowcount
            removed += c.execute(
                "delete from memdeck_recall_hits where id in (select id from memdeck_recall_hits"
                " where namespace = %s order by at desc, id desc offset %s)",
                (ns, max_hits),
            ).rowcount
            c.execute(
                "delete from memdeck_recall_searches where namespace = %s and at < %s", (ns, cutoff)
            )
            c.execute(
                "delete from memdeck_recall_searches where id in (select id from"
                " memdeck_recall_searches where namespace = %s order by id desc offset %s)",
                (ns, max_searches),
            )
            removed += c.execute(
                "delete from memdeck_recall_hits h where namespace = %s and not exists"
                " (select 1 from memdeck_recall_searches s where s.id = h.search_id)",
                (ns,),
            ).rowcount
        return int(removed or 0)

    def carry_into(self, path: Path) -> int:
        return 0  # the log belongs to the namespace: a rebuild keeps it as it is
