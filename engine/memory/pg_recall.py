"""Recall history on the PostgreSQL store: the same rows as ``recall``'s SQLite tables.

Why here and not in the index tables: recall history belongs to a *namespace*
(an agent or workspace), not to one generation of its index, so a full reindex
(a new space, then one switch) keeps it without copying anything. Rows of every
namespace share two tables, ``memdeck_recall_events`` (one row per returned
hit, read by dreaming) and ``memdeck_recall_searches`` (one row per search, the
app's "Agent activity" log).

Ids order the activity log and the app polls "newer than the last id I saw".
With several processes searching one namespace (the CLI, an MCP server, the
app), a sequence hands out ids in call order but transactions commit in any
order, so a poller could step over an id committed late. Inserts of one
namespace therefore take a transaction-scoped advisory lock first: ids of a
namespace are handed out, and become visible, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.index.pg_store import PgStore

_SCHEMA = """
create table if not exists memdeck_recall_events (
    id bigserial primary key, namespace text not null, at double precision not null,
    query text not null, query_key text not null, path text not null, source text not null,
    start_line integer not null, end_line integer not null, chunk_id bigint,
    chunk_hash text not null, score double precision not null
);
create index if not exists memdeck_recall_events_at on memdeck_recall_events (namespace, at);
create table if not exists memdeck_recall_searches (
    id bigserial primary key, namespace text not null, at double precision not null,
    client text not null, query text not null, mode text not null,
    max_results integer not null, min_score double precision not null, results text not null
);
create index if not exists memdeck_recall_searches_id on memdeck_recall_searches (namespace, id);
"""
#: the same key ``PgStore`` takes to create its own tables (one schema change at a time)
_SCHEMA_LOCK = 7210001
EVENT_COLUMNS = (
    "at, query, query_key, path, source, start_line, end_line, chunk_id, chunk_hash, score"
)
SEARCH_COLUMNS = "at, client, query, mode, max_results, min_score, results"


#: every object ``_SCHEMA`` creates
_OBJECTS = (
    "memdeck_recall_events",
    "memdeck_recall_events_at",
    "memdeck_recall_searches",
    "memdeck_recall_searches_id",
)


def ensure_schema(store: PgStore) -> None:
    """Create the two tables if this database has none yet.

    Only when something is missing: ``create index if not exists`` locks its
    table (SHARE) before it sees that the index exists, and two such locks taken
    while other processes insert into both tables deadlock with them, so a
    process starting beside busy ones would lose a search or fail its own.
    """
    with store.transaction() as c:
        present = c.execute(
            "select " + ", ".join(["to_regclass(%s) is not null"] * len(_OBJECTS)), _OBJECTS
        ).fetchone()
        if present is not None and all(present):
            return
        c.execute("select pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        c.execute(_SCHEMA)


def _in_order(c: Any, namespace: str) -> None:
    """Serialise this namespace's inserts until commit (see the module docstring)."""
    c.execute(
        "select pg_advisory_xact_lock(hashtextextended(%s, 0))", ("memdeck-recall:" + namespace,)
    )


def insert(
    store: PgStore, search: Sequence[object] | None, events: Sequence[Sequence[object]]
) -> int:
    """One search row (if given) and its hit rows, in one transaction."""
    with store.transaction() as c:
        _in_order(c, store.namespace)
        if search is not None:
            c.execute(
                f"insert into memdeck_recall_searches(namespace, {SEARCH_COLUMNS})"
                " values (%s,%s,%s,%s,%s,%s,%s,%s)",
                (store.namespace, *search),
            )
        if events:
            with c.cursor() as cur:
                cur.executemany(
                    f"insert into memdeck_recall_events(namespace, {EVENT_COLUMNS})"
                    " values (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    [(store.namespace, *e) for e in events],
                )
    return len(events)


def load_events(store: PgStore, since: float, until: float) -> list[tuple[Any, ...]]:
    """Rows in ``EVENT_COLUMNS`` order, oldest first."""
    with store.transaction() as c:
        return list(
            c.execute(
                f"select {EVENT_COLUMNS} from memdeck_recall_events where namespace = %s"
                " and at >= %s and at <= %s order by at, id",
                (store.namespace, since, until),
            ).fetchall()
        )


def load_searches(store: PgStore, limit: int, after_id: int) -> list[tuple[Any, ...]]:
    """Rows ``(id, *SEARCH_COLUMNS)``, newest first."""
    with store.transaction() as c:
        return list(
            c.execute(
                f"select id, {SEARCH_COLUMNS} from memdeck_recall_searches where namespace = %s"
                " and id > %s order by id desc limit %s",
                (store.namespace, after_id, limit),
            ).fetchall()
        )


def count_events(store: PgStore) -> int:
    with store.transaction() as c:
        row = c.execute(
            "select count(*) from memdeck_recall_events where namespace = %s", (store.namespace,)
        ).fetchone()
    return int(row[0]) if row else 0


def prune(store: PgStore, cutoff: float, max_events: int, max_searches: int) -> int:
    """Drop this namespace's rows older than ``cutoff`` and above the row caps."""
    ns = store.namespace
    with store.transaction() as c:
        _in_order(c, ns)
        removed = c.execute(
            "delete from memdeck_recall_events where namespace = %s and at < %s", (ns, cutoff)
        ).rowcount
        removed += c.execute(
            "delete from memdeck_recall_events where id in (select id from memdeck_recall_events"
            " where namespace = %s order by at desc, id desc offset %s)",
            (ns, max_events),
        ).rowcount
        c.execute(
            "delete from memdeck_recall_searches where namespace = %s and at < %s", (ns, cutoff)
        )
        c.execute(
            "delete from memdeck_recall_searches where id in (select id from"
            " memdeck_recall_searches where namespace = %s order by id desc offset %s)",
            (ns, max_searches),
        )
    return int(removed or 0)
