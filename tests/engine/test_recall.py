"""Recall tracking: memory_search hits land in the index DB and survive a full reindex."""

from __future__ import annotations

import pytest

from engine.memory import recall
from engine.memory.recall import RecallEvent, count_events, load_events, query_key
from engine.tools import memory_search
from tests.engine_fixtures import write


def _workspace(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- The staging database is Postgres on port 5433\n")
    write(ws, "memory/2026-03-10.md", "# 2026-03-10\n\n- Deploy window is Tuesday 14:00\n")


def test_memory_search_records_each_returned_hit(make_engine, workspace_dir):
    _workspace(workspace_dir)
    engine = make_engine(provider=None)
    out = memory_search(engine, "Postgres  port", min_score=0.0)
    assert len(out["results"]) == 1
    events = load_events(engine.store)
    assert len(events) == 1
    e = events[0]
    assert (e.query, e.query_key, e.path, e.source) == (
        "Postgres  port",
        "postgres port",
        "MEMORY.md",
        "memory",
    )
    assert (e.start_line, e.end_line) == (1, 3)  # the chunk, as the index stores it (3 lines)
    assert e.score == pytest.approx(out["results"][0]["score"], abs=1e-6)
    assert len(e.chunk_hash) == 64 and e.chunk_id is not None
    # No hit, no row; a blank query records nothing either.
    memory_search(engine, "kubernetes", min_score=0.0)
    memory_search(engine, "   ")
    assert count_events(engine.store) == 1


def test_events_survive_a_full_reindex(make_engine, workspace_dir):
    _workspace(workspace_dir)
    engine = make_engine(provider=None)
    memory_search(engine, "deploy window", min_score=0.0)
    memory_search(engine, "staging database", min_score=0.0)
    before = load_events(engine.store)
    assert len(before) == 2
    engine.sync(reason="test", force=True)  # rebuilt in a temp file, copied in
    after = load_events(engine.store)
    assert [(e.query, e.path, e.at) for e in after] == [(e.query, e.path, e.at) for e in before]


def test_prune_drops_old_events_and_caps_rows(make_engine, monkeypatch):
    engine = make_engine(provider=None)
    now = 1_800_000_000.0
    old = now - (recall.RETENTION_DAYS + 1) * 86400

    def ev(at: float, q: str) -> RecallEvent:
        return RecallEvent(at, q, query_key(q), "MEMORY.md", "memory", 1, 2, "h", 0.5)

    recall.record_events(engine.store, [ev(old, "old"), ev(now - 10, "a"), ev(now - 5, "b")])
    assert recall.prune(engine.store, now=now) == 1
    assert [e.query for e in load_events(engine.store)] == ["a", "b"]
    monkeypatch.setattr(recall, "MAX_EVENTS", 1)
    assert recall.prune(engine.store, now=now) == 1
    assert [e.query for e in load_events(engine.store)] == ["b"]


def test_recording_failure_never_fails_the_search(make_engine, workspace_dir):
    _workspace(workspace_dir)
    engine = make_engine(provider=None)
    memory_search(engine, "deploy", min_score=0.0)  # creates the table
    engine.store.db.execute("drop table recall_hits")
    engine.store.db.execute("create table recall_hits (id integer primary key)")  # wrong shape
    failures = recall.failures()
    out = memory_search(engine, "deploy", min_score=0.0)
    assert len(out["results"]) == 1 and "disabled" not in out
    assert recall.failures() == failures + 1


def test_each_search_is_logged_with_its_client_even_without_hits(make_engine, workspace_dir):
    _workspace(workspace_dir)
    engine = make_engine(provider=None)
    memory_search(engine, "postgres port", min_score=0.0, max_results=3, client="claude-code")
    memory_search(engine, "kubernetes")  # no hit: logged, no recall event
    memory_search(engine, "   ")  # blank: nothing at all
    newest, oldest = recall.load_searches(engine.store)
    assert (newest.client, newest.query, newest.results) == ("cli", "kubernetes", ())
    assert (oldest.client, oldest.max_results, oldest.min_score) == ("claude-code", 3, 0.0)
    [hit] = oldest.results
    assert (hit.path, hit.start_line, hit.end_line) == ("MEMORY.md", 1, 3)
    assert newest.id > oldest.id and count_events(engine.store) == 1
    assert recall.load_searches(engine.store, after_id=oldest.id) == [newest]
    engine.sync(reason="test", force=True)  # the log survives a rebuild, ids included
    assert recall.load_searches(engine.store) == [newest, oldest]
