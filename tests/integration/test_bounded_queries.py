"""What one ``memory_search`` may cost the index: bounded whatever the agent sends.

A query over the limit is refused with its length (never echoed back); the
recall log stores a query once per search, not once per hit, and cuts a huge
client name; an index written with the older per-hit layout is moved over.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import anyio
import pytest

from engine.core import Engine
from engine.index.db import Database
from engine.memory import recall
from engine.search.results import MAX_QUERY_CHARS, QueryRefused
from engine.tools import memory_search
from tests.cli_process import cli_env, run_cli
from tests.engine_fixtures import write
from tests.mcp_process import TRANSPORTS, connect, error_text, structured


@pytest.fixture
def notes(workspace_dir: Path) -> Path:
    for i in range(60):
        write(workspace_dir, f"memory/notes/n{i}.md", f"# Note {i}\n\n- deploy {i} to staging\n")
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- Deploys go out on Tuesday\n")
    return workspace_dir


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_huge_query_over_mcp_is_refused_by_length_and_stores_nothing(
    transport, notes, state_dir, make_settings
) -> None:
    env = cli_env(state_dir)
    assert run_cli("index", "--workspace", str(notes), env=env).returncode == 0
    index = make_settings().index_path
    before = index.stat().st_size
    huge = "deploy " * (2 * 1024 * 1024 // 7)  # 2 MB of words

    async def go():
        name = "agent-" + "x" * 100_000
        async with connect(transport, "--workspace", str(notes), env=env, name=name) as c:
            refused = error_text(
                await c.call_tool("memory_search", {"query": huge, "maxResults": 50})
            )
            nan = error_text(
                await c.call_tool("memory_search", {"query": "deploy", "minScore": math.nan})
            )
            ok = structured(
                await c.call_tool(
                    "memory_search", {"query": "deploy staging", "maxResults": 50, "minScore": 0}
                )
            )
        return refused, nan, ok

    refused, nan, ok = anyio.run(go)
    assert f"{len(huge):,} characters; at most {MAX_QUERY_CHARS:,}" in refused
    assert len(refused) < 600 and "deploy deploy deploy" not in refused  # never echoed
    assert "argument 'minScore' is invalid" in nan  # the SDK sends NaN as null
    assert len(ok["results"]) > 20
    engine = Engine(make_settings(), provider=None, read_only=True)
    try:
        [search] = recall.load_searches(engine.store)
        counts = recall.counts(engine.store)
    finally:
        engine.close()
    assert search.query == "deploy staging"
    assert len(search.client) <= recall.MAX_CLIENT_CHARS
    assert search.client.endswith("[cut: 100,006 characters]")
    assert (counts.searches, counts.hits) == (1, len(ok["results"]))
    # one search with 50 hits adds kilobytes, not the query times the hits
    wal = Path(str(index) + "-wal")
    grown = index.stat().st_size + (wal.stat().st_size if wal.exists() else 0) - before
    assert grown < 512 * 1024, grown


def test_a_nan_argument_is_refused_by_the_schema_check() -> None:
    """Python's JSON parser takes a bare ``NaN`` (a raw stdio client can send one):
    every comparison with NaN is false, so the range check alone would pass it."""
    from engine.mcp.schemas import MEMORY_SEARCH, BadArguments, validate

    with pytest.raises(BadArguments, match=r"'minScore' is invalid .* not a finite number"):
        validate(MEMORY_SEARCH, {"query": "deploy", "minScore": math.nan})
    with pytest.raises(BadArguments, match=r"'minScore' is invalid .* greater than the maximum"):
        validate(MEMORY_SEARCH, {"query": "deploy", "minScore": math.inf})
    assert validate(MEMORY_SEARCH, {"query": "deploy", "minScore": 0.5})["minScore"] == 0.5


def test_the_cli_and_the_engine_refuse_a_query_over_the_limit(notes, state_dir, make_engine):
    env = cli_env(state_dir)
    assert run_cli("index", "--workspace", str(notes), env=env).returncode == 0
    long = "a" * (MAX_QUERY_CHARS + 1)
    out = run_cli("search", long, "--workspace", str(notes), env=env)
    assert out.returncode == 1
    assert f"the query is {MAX_QUERY_CHARS + 1:,} characters" in out.stderr
    assert long not in out.stderr
    engine = make_engine(provider=None)
    with pytest.raises(QueryRefused, match="at most 4,096"):
        engine.search(long)
    with pytest.raises(QueryRefused):
        memory_search(engine, long)
    # exactly at the limit is searched
    assert memory_search(engine, "deploy " + "b" * (MAX_QUERY_CHARS - 7))["results"] == []


def test_stored_texts_are_cut_and_say_so(notes, make_engine) -> None:
    engine = make_engine(provider=None)
    engine.sync()
    hits = engine.search("deploy", engine.default_options().with_(min_score=0.0)).results
    assert hits
    recall.record_results(
        engine, "q" * 10_000, hits, mode="hybrid", max_results=6, min_score=0.0, client="c" * 500
    )
    [search] = recall.load_searches(engine.store)
    assert len(search.query) == recall.MAX_STORED_QUERY_CHARS
    assert search.query.endswith("… [cut: 10,000 characters]")
    assert len(search.client) == recall.MAX_CLIENT_CHARS
    events = recall.load_events(engine.store)
    assert len(events) == len(hits) and {e.query for e in events} == {search.query}


def test_a_log_of_the_per_hit_layout_is_moved_over_once(make_settings, notes) -> None:
    """Indexes written before the query was stored once per search kept it per hit
    (``recall_events``): opening one moves each hit under its search."""
    engine = Engine(make_settings(), provider=None)
    engine.sync()
    path = engine.index_path
    engine.close()
    db = Database(path)
    db.execute("drop table if exists recall_hits")  # as an index of the old layout had none
    db.execute("drop table if exists recall_searches")
    db.execute(
        "create table recall_events (id integer primary key, at real not null, query text not"
        " null, query_key text not null, path text not null, source text not null, start_line"
        " integer not null, end_line integer not null, chunk_id integer, chunk_hash text not"
        " null, score real not null)"
    )
    db.execute(
        "create table recall_searches (id integer primary key, at real not null, client text"
        " not null, query text not null, mode text not null, max_results integer not null,"
        " min_score real not null, results text not null)"
    )
    db.execute(
        "insert into recall_searches(at, client, query, mode, max_results, min_score, results)"
        " values (10, 'cli', 'Deploy day', 'fts', 6, 0.35, '[[\"MEMORY.md\", 3, 3, 0.5]]')"
    )
    rows = [
        (10, "Deploy day", "deploy day", "MEMORY.md", "memory", 3, 3, None, "h1", 0.5),
        (10, "Deploy day", "deploy day", "memory/2026-03-01.md", "memory", 3, 9, None, "h2", 0.4),
        (20, "imported", "imported", "MEMORY.md", "memory", 1, 3, 7, "h3", 0.9),
    ]
    db.executemany(
        "insert into recall_events(at, query, query_key, path, source, start_line, end_line,"
        " chunk_id, chunk_hash, score) values (?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    db.close()
    engine = Engine(make_settings(), provider=None)
    try:
        events = recall.load_events(engine.store)
        shown = recall.load_searches(engine.store)
        tables = {r[0] for r in engine.store.db.execute("select name from sqlite_master")}
    finally:
        engine.close()
    assert [(e.at, e.query, e.query_key, e.path, e.chunk_hash, e.chunk_id) for e in events] == [
        (10.0, "Deploy day", "deploy day", "MEMORY.md", "h1", None),
        (10.0, "Deploy day", "deploy day", "memory/2026-03-01.md", "h2", None),
        (20.0, "imported", "imported", "MEMORY.md", "h3", 7),
    ]
    # the activity log shows the real search, not the synthetic one made for "imported"
    assert [(s.client, s.query) for s in shown] == [("cli", "Deploy day")]
    assert "recall_events" not in tables and os.fspath(path)
