"""``memorySearch.fallback`` through the real engine: a failing primary hands over
to the fallback, the new fingerprint forces exactly one atomic full reindex, and
status / memory_search say what happened and why."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.core import Engine
from engine.events import SyncDone
from engine.searchers import search_answer
from tests.engine_fixtures import write
from tests.provider_servers import FAST_ENV as FAST
from tests.provider_servers import ProviderServer, Reply, always, write_notes

KEY = "sk-primary-123456"
GKEY = "gemini-key-654321"


@pytest.fixture
def primary() -> Iterator[ProviderServer]:
    with ProviderServer(api_key=KEY, dims=16) as s:
        yield s


@pytest.fixture
def backup() -> Iterator[ProviderServer]:
    with ProviderServer(api_key=GKEY, dims=24) as s:
        yield s


@pytest.fixture
def notes(workspace_dir: Path) -> Path:
    return write_notes(workspace_dir)


@pytest.fixture
def fallback_engine(make_settings, primary, backup, notes) -> Iterator[Engine]:
    settings = make_settings(
        **{
            "provider": "openai",
            "fallback": "gemini",
            "remote.base_url": primary.url + "/v1",
            "remote.api_key": KEY,
        }
    )
    # the fallback has its own endpoint and key (models.providers.google.*)
    settings = dataclasses.replace(
        settings,
        provider_base_urls={"google": backup.url + "/v1beta"},
        provider_api_keys={"google": GKEY},
    )
    eng = Engine(settings, env=FAST)
    yield eng
    eng.close()


def _fallback_settings(make_settings, primary: ProviderServer, backup: ProviderServer):
    settings = make_settings(
        **{
            "provider": "openai",
            "fallback": "gemini",
            "remote.base_url": primary.url + "/v1",
            "remote.api_key": KEY,
        }
    )
    return dataclasses.replace(
        settings,
        provider_base_urls={"google": backup.url + "/v1beta"},
        provider_api_keys={"google": GKEY},
    )


def full_flags(eng: Engine) -> list[bool]:
    flags: list[bool] = []
    eng.bus.subscribe(lambda e: flags.append(e.full) if isinstance(e, SyncDone) else None)
    return flags


def test_healthy_primary_never_touches_the_fallback(fallback_engine, primary, backup) -> None:
    fallback_engine.sync()
    st = fallback_engine.status()
    assert st.provider == "openai" and st.provider_fallback is None
    assert st.provider_detail["fallback_provider"] == "configured, not started"
    assert backup.requests == []


def test_primary_down_at_start_switches_before_indexing(fallback_engine, primary, backup) -> None:
    primary.faults = always(Reply(500, {"error": {"message": "boom"}}))
    flags = full_flags(fallback_engine)
    done = fallback_engine.sync()
    assert done.full and done.chunks_embedded == 2 and not done.errors
    assert flags == [True]
    st = fallback_engine.status()
    assert (st.provider, st.model, st.dims) == ("gemini", "gemini-embedding-001", 24)
    assert st.provider_fallback["from"] == "openai" and st.provider_fallback["to"] == "gemini"
    assert "HTTP 500" in st.provider_fallback["reason"]
    assert st.provider_detail["endpoint"] == backup.url + "/v1beta"
    assert st.provider_detail["api_key"] == "<redacted> from models.providers.google.apiKey"
    assert backup.embed_requests()[0].headers["x-goog-api-key"] == GKEY
    assert KEY not in repr(st) and GKEY not in repr(st)


def test_primary_failing_mid_sync_forces_exactly_one_full_reindex(
    fallback_engine, primary, backup, notes
) -> None:
    first = fallback_engine.sync()
    assert first.full and fallback_engine.store.fingerprint()["provider"] == "openai"
    primary.faults = always(Reply(401, {"error": {"message": f"key {KEY} revoked"}}))
    write(notes, "memory/2026-03-02.md", "# 2026-03-02\n\nBought oat milk for the office.\n")
    flags = full_flags(fallback_engine)
    done = fallback_engine.sync()
    # the incremental sync stopped at the failure; one full rebuild replaced it
    assert flags == [True]
    assert done.full and done.files_indexed == 3 and done.chunks_embedded == 3
    assert fallback_engine.store.fingerprint()["provider"] == "gemini"
    assert fallback_engine.store.dims == 24
    st = fallback_engine.status()
    assert not st.needs_full_reindex
    reason = st.provider_fallback["reason"]
    assert "HTTP 401" in reason and KEY not in reason
    # later syncs are incremental again and re-embed nothing
    again = fallback_engine.sync()
    assert not again.full and again.chunks_embedded == 0
    outcome = fallback_engine.search(
        "oat milk", fallback_engine.default_options().with_(min_score=0)
    )
    assert outcome.mode == "hybrid" and outcome.results[0].path == "memory/2026-03-02.md"
    result = search_answer(fallback_engine, outcome)
    assert result.provider == "gemini"
    assert result.fallback is not None and result.fallback["from"] == "openai"


def test_query_failure_switches_and_search_degrades_to_keywords(
    fallback_engine, primary, backup
) -> None:
    fallback_engine.sync()
    primary.faults = always(Reply(503, "down"))
    outcome = fallback_engine.search(
        "flat white", fallback_engine.default_options().with_(min_score=0)
    )
    assert "switched to the fallback" in outcome.retrieval.vector_error
    assert outcome.results[0].path == "MEMORY.md"  # keyword hit still served
    st = fallback_engine.status()
    assert st.needs_full_reindex and st.provider == "gemini"
    # until the rebuild, the old vectors are not compared with the new provider's
    during = fallback_engine.search(
        "flat white", fallback_engine.default_options().with_(min_score=0)
    )
    assert during.mode == "fts" and during.retrieval.vector_hits == []
    flags = full_flags(fallback_engine)
    assert fallback_engine.sync().full and flags == [True]
    after = fallback_engine.search(
        "flat white coffee", fallback_engine.default_options().with_(min_score=0)
    )
    assert after.mode == "hybrid" and after.retrieval.vector_hits


def test_both_failing_reports_both_reasons(make_settings, notes, primary) -> None:
    primary.faults = always(Reply(500, "boom"))
    settings = make_settings(
        **{
            "provider": "openai",
            "fallback": "voyage",  # no Voyage key anywhere
            "remote.base_url": primary.url + "/v1",
            "remote.api_key": KEY,
        }
    )
    eng = Engine(settings, env=FAST)
    try:
        st = eng.status()
        assert st.provider == "none" and st.mode == "fts"
        assert "fallback could not start" in st.provider_error
        assert "VOYAGE_API_KEY" in st.provider_error
        assert eng.sync().files_indexed == 2  # keyword search still works
    finally:
        eng.close()


def test_missing_local_model_falls_back_to_remote(make_settings, notes, primary) -> None:
    settings = make_settings(
        **{
            "provider": "local",
            "fallback": "openai",
            "local.explicit": True,
            "local.model_path": str(notes / "missing.gguf"),
            "remote.base_url": primary.url + "/v1",
            "remote.api_key": KEY,
        }
    )
    eng = Engine(settings, env=FAST)
    try:
        st = eng.status()
        assert st.provider == "openai"
        assert st.provider_fallback["from"] == "local"
        assert st.provider_fallback["reason"].startswith("local could not start: ")
        assert "local embedding model not found" in st.provider_fallback["reason"]
        assert eng.sync().chunks_embedded == 2
    finally:
        eng.close()


def test_unit_vectors_follow_the_active_provider(fallback_engine, primary, backup) -> None:
    """openai (primary) carries the units in its chunks' requests, as it does without a
    fallback; gemini (the fallback) keeps them off, as it does on its own."""
    fallback_engine.sync()
    st = fallback_engine.status()
    assert (st.unit_vectors, st.unit_vectors_reason, st.units_missing) == (
        True,
        "each unit an input of its chunk's request",
        0,
    )
    (first,) = [r.json["input"] for r in primary.embed_requests() if len(r.json["input"]) > 1]
    assert "Dana prefers flat white coffee." in first  # a unit beside its chunk
    primary.faults = always(Reply(500, {"error": {"message": "boom"}}))
    write(fallback_engine.workspace.root, "memory/2026-03-02.md", "# 2026-03-02\n\nNew note.\n")
    fallback_engine.sync()
    st = fallback_engine.status()
    assert st.provider == "gemini" and not st.unit_vectors
    assert st.unit_vectors_reason.startswith("off by default with gemini")


def test_later_processes_use_the_index_the_fallback_built(
    make_settings, notes, primary, backup
) -> None:
    """Each CLI command is a new engine that starts with the primary. While the
    primary stays down, the index the fallback built is kept (no second full
    reindex), and a reader (status, search) embeds the query with the fallback
    without asking the primary; once the primary answers, the next sync rebuilds
    with it, exactly once."""
    settings = _fallback_settings(make_settings, primary, backup)
    primary.faults = always(Reply(503, "down"))

    def run(read_only: bool = False) -> Engine:
        return Engine(settings, env=FAST, read_only=read_only)

    first = run()
    assert first.sync().full
    first.close()
    again = run()  # `memdeck index` again: asks the primary, which is still down
    done = again.sync()
    assert not done.full and done.chunks_embedded == 0
    again.close()
    asked = len(primary.requests)
    reader = run(read_only=True)  # `memdeck status`, `memdeck search`
    st = reader.status()
    assert (st.provider, st.dims, st.dirty) == ("gemini", 24, False)
    assert st.provider_fallback is not None
    assert "the index was built with the fallback after openai failed" in str(
        st.provider_fallback["reason"]
    )
    found = reader.search("flat white coffee", reader.default_options().with_(min_score=0))
    assert found.mode == "hybrid" and found.retrieval.vector_hits
    assert found.retrieval.vector_error is None
    reader.close()
    assert len(primary.requests) == asked  # the reader never asked the primary
    primary.faults = None  # the primary is back
    back = run()
    assert back.sync().full
    st = back.status()
    assert (st.provider, st.dims, st.provider_fallback) == ("openai", 16, None)
    back.close()
    reader = run(read_only=True)
    found = reader.search("flat white coffee", reader.default_options().with_(min_score=0))
    assert found.mode == "hybrid" and reader.status().provider_fallback is None
    reader.close()


def test_status_says_searches_are_keyword_only_after_a_refused_index(
    make_settings, notes, primary
) -> None:
    """No fallback and a primary that fails the index: the index holds text only, and
    ``status`` (a reader that asks no provider) says so, with the reason a search
    gives, instead of "hybrid"."""
    settings = make_settings(
        **{"provider": "openai", "remote.base_url": primary.url + "/v1", "remote.api_key": KEY}
    )
    primary.faults = always(Reply(500, {"error": {"message": "boom"}}))
    writer = Engine(settings, env=FAST)
    writer.sync()
    writer.close()
    reader = Engine(settings, env=FAST, read_only=True)
    st = reader.status()
    found = reader.search("flat white", reader.default_options().with_(min_score=0))
    reader.close()
    assert (st.chunks, st.embedded_chunks, st.mode) == (2, 0, "fts")
    said = [w for w in st.warnings if w.startswith("searches are keyword-only: the last index")]
    assert said and "HTTP 500" in said[0], st.warnings
    assert found.mode == "fts"
