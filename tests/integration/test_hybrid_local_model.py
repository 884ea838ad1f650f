"""Hybrid search on the real converted MiniLM model, llama.cpp and sqlite-vec."""

from __future__ import annotations

import pytest

from engine.core import Engine
from tests.engine_fixtures import write

pytestmark = pytest.mark.model


@pytest.fixture
def local_engine(minilm_gguf, make_settings, workspace_dir):
    from engine.embeddings.local import LocalProvider

    write(
        workspace_dir, "MEMORY.md", "# Memory\n\nDana's partner Inês is allergic to penicillin.\n"
    )
    write(
        workspace_dir,
        "memory/2026-03-02.md",
        "# 2026-03-02\n\nThe cat needs her thyroid tablet every morning with food.\n",
    )
    write(
        workspace_dir,
        "memory/2026-03-03.md",
        "# 2026-03-03\n\nMigrated the billing database from Postgres 13 to 16.\n",
    )
    write(
        workspace_dir,
        "memory/2026-03-04.md",
        "# 2026-03-04\n\nBooked a train to Porto, departing 08:04, seat 42.\n",
    )
    engine = Engine(make_settings(), provider=LocalProvider(minilm_gguf))
    engine.sync()
    yield engine
    engine.close()


def test_status_reports_sqlite_vec_and_the_local_model(local_engine: Engine) -> None:
    st = local_engine.status()
    assert st.vector == "sqlite-vec" and st.provider == "local"
    assert st.dims == 384 and st.embedded_chunks == st.chunks == 4
    assert st.mode == "hybrid"
    assert (st.unit_vectors, st.unit_vectors_reason, st.units_missing) == (
        True,
        "the local model",
        0,
    )
    # a chunk whose units are gone is counted until a sync embeds them again
    local_engine.store.db.execute("delete from line_vectors")
    assert local_engine.status().units_missing == 4
    local_engine.sync()
    assert local_engine.status().units_missing == 0


def test_semantic_query_without_shared_words_is_found_by_the_vector_side(
    local_engine: Engine,
) -> None:
    query = "medication for my pet"  # no word in common with the note
    out = local_engine.search(query, local_engine.default_options().with_(min_score=0.0))
    top = out.results[0]
    assert top.path == "memory/2026-03-02.md"
    assert top.lists == ("vector",) and top.bm25_rank is None
    assert top.vector_score is not None and top.vector_score > 0.3


@pytest.mark.parametrize("vector_path", ["sqlite-vec", "numpy"])
def test_both_vector_paths_agree(local_engine: Engine, vector_path: str) -> None:
    local_engine.vector_path = vector_path
    out = local_engine.search("train journey", local_engine.default_options().with_(min_score=0.0))
    assert out.results[0].path == "memory/2026-03-04.md"
    hits = dict(out.retrieval.vector_hits)
    local_engine.vector_path = "numpy" if vector_path == "sqlite-vec" else "sqlite-vec"
    other = dict(
        local_engine.search("train journey", local_engine.default_options()).retrieval.vector_hits
    )
    for cid, sim in hits.items():
        assert other[cid] == pytest.approx(sim, abs=1e-5)


def test_memory_search_tool_shape_with_hybrid_results(local_engine: Engine) -> None:
    from engine.tools import memory_search

    res = memory_search(local_engine, "postgres upgrade of billing", max_results=2, min_score=0)
    assert res["mode"] == "hybrid" and res["provider"] == "local" and len(res["results"]) == 2
    first = res["results"][0]
    assert first["path"] == "memory/2026-03-03.md"
    assert set(first) == {"path", "startLine", "endLine", "score", "snippet", "source", "citation"}


def test_the_apps_status_line_does_not_load_the_model(
    minilm_gguf, make_settings, workspace_dir
) -> None:
    """``status(load_provider=False)`` (the app's status line) on a workspace not
    indexed yet names the provider without loading llama.cpp; the full status
    afterwards loads it and learns the size, nothing stale cached in between."""
    from engine.embeddings.local import LocalProvider

    write(workspace_dir, "MEMORY.md", "# Memory\n\nThe train to Porto leaves at 08:04.\n")
    provider = LocalProvider(minilm_gguf)
    engine = Engine(make_settings(), provider=provider)
    try:
        quick = engine.status(load_provider=False)
        assert provider._llm is None  # the model was not loaded
        assert quick.provider == "local" and quick.model == provider.model
        assert quick.dims is None and quick.fingerprint["dims"] is None
        assert quick.needs_full_reindex and quick.dirty  # never indexed
        full = engine.status()
        assert provider._llm is not None and full.dims == 384
        assert engine.fingerprint(load=False)["dims"] == 384  # known now: no load needed
        engine.sync()
        assert not engine.status(load_provider=False).dirty
    finally:
        engine.close()
