"""The local provider's query path on the real MiniLM GGUF: one thread per query,
the documents' thread count for batches, a cache of recent query vectors, and the
staged query (tokenized by the caller, one call into llama.cpp by the search's
embedding thread) giving ``Llama.embed``'s vector bit for bit.

A query embedded on one thread must be the vector the model gives that text on
every thread (switching the context's thread count changes speed, not numbers),
and a cached vector must be the very vector, not a copy a caller could change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.embeddings import local
from engine.embeddings.local import QUERY_THREADS, LocalProvider

TEXTS = ["Postgres listens on port 5433", "Dana prefers flat white coffee", "rollback plan"]


@pytest.fixture
def provider(minilm_gguf: Path):
    p = LocalProvider(minilm_gguf, n_threads=2)
    yield p
    p.close()


def test_a_query_uses_one_thread_and_batches_the_configured_threads(provider) -> None:
    docs = provider.embed_documents(TEXTS)
    assert provider._threads_now == 2  # documents: every configured thread
    queries = np.stack([provider.embed_query(t) for t in TEXTS])
    assert provider._threads_now == QUERY_THREADS == 1
    again = provider.embed_documents(TEXTS)
    assert provider._threads_now == 2  # switched back for the next batch
    # the same vectors whatever the thread count or batching (float sums may be
    # ordered differently: equal to ~1e-4, cosine 1 to five places)
    every_thread = np.stack([provider._embed([t])[0] for t in TEXTS])
    for a, b in ((queries, every_thread), (queries, docs), (again, docs)):
        np.testing.assert_allclose(a, b, atol=2e-4)
        assert float(np.min(np.sum(a * b, axis=1))) > 0.99999
    sims = queries @ docs.T
    assert [int(i) for i in sims.argmax(axis=1)] == [0, 1, 2]


def _count_model_runs(monkeypatch) -> list[int]:
    """The token lists the query path hands llama.cpp from now on."""
    calls: list[int] = []
    real = local._pooled_embedding
    monkeypatch.setattr(
        local,
        "_pooled_embedding",
        lambda llm, tokens, dims: calls.append(len(tokens)) or real(llm, tokens, dims),
    )
    return calls


def test_repeated_queries_come_from_the_cache(provider, monkeypatch) -> None:
    first = provider.embed_query("staging database port")
    calls = _count_model_runs(monkeypatch)
    second = provider.embed_query("staging database port")
    assert second is first and calls == []  # no model call for a repeat
    assert not second.flags.writeable  # shared, so nobody may change it in place
    with pytest.raises(ValueError):
        second[0] = 1.0
    provider.embed_query("something else")
    assert len(calls) == 1


def test_the_cache_keeps_only_the_newest_queries(provider, monkeypatch) -> None:
    monkeypatch.setattr(local, "QUERY_CACHE", 2)
    provider.embed_query("a")
    provider.embed_query("b")
    provider.embed_query("a")  # a is now the newest
    provider.embed_query("c")  # evicts b
    assert list(provider._queries) == ["a", "c"]
    provider.close()
    assert not provider._queries  # a closed provider keeps nothing


def test_forgotten_queries_are_embedded_again(provider, monkeypatch) -> None:
    """What the benchmarks use so that "query embedding included" is the model's time."""
    first = provider.embed_query("staging database port")
    calls = _count_model_runs(monkeypatch)
    provider.forget_queries()
    again = provider.embed_query("staging database port")
    assert len(calls) == 1 and again is not first
    np.testing.assert_allclose(again, first, atol=1e-6)


EDGE_TEXTS = [
    "visit to the tooth doctor",
    "",  # [CLS] [SEP] only
    "word " * 700,  # beyond the 512-token context: truncated as Llama.embed truncates
    "Caroline: Researching adoption agencies — 日本語のテスト",
]


@pytest.mark.parametrize("text", EDGE_TEXTS, ids=["short", "empty", "over-context", "unicode"])
def test_a_staged_query_is_llama_embed_bit_for_bit(provider, text) -> None:
    """One decode call with the caller's tokens gives exactly the vector the whole
    ``Llama.embed`` path gives (same thread count: the query's)."""
    staged = provider.stage_query(text)()  # the first stage loads nothing: see below
    provider.forget_queries()
    rest = provider.stage_query(text)  # loaded now: tokenized here, the model in rest()
    vec = rest()
    via_embed = provider._embed([text], threads=QUERY_THREADS)[0]
    assert vec.dtype == np.float32 and vec.shape == (384,)
    assert np.array_equal(vec, via_embed) and np.array_equal(staged, via_embed)
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5


def test_staging_never_waits_for_the_model_or_loads_it(minilm_gguf: Path, monkeypatch) -> None:
    """The search stages on its own thread, outside its time budget: staging must not
    block behind a sync embedding documents, nor load (perhaps download) the model."""
    p = LocalProvider(minilm_gguf, n_threads=2)
    try:
        rest = p.stage_query("rollback plan")
        assert p._llm is None  # not loaded by staging: the rest loads it
        first = rest()
        assert p._llm is not None
        p.forget_queries()
        p._lock.acquire()  # the model busy (held by "another caller")
        try:
            busy_rest = p.stage_query("rollback plan")  # returns at once: no deadlock here
        finally:
            p._lock.release()
        calls = _count_model_runs(monkeypatch)
        assert np.array_equal(busy_rest(), first) and len(calls) == 1
    finally:
        p.close()


def test_a_query_falls_back_to_llama_embed_if_its_internals_move(provider, monkeypatch) -> None:
    """The single-call path reads llama-cpp-python's private batch and context; if a
    release renames them, queries take ``Llama.embed`` and give the same vector."""
    want = provider.embed_query("rollback plan")
    provider.forget_queries()

    def moved(llm, tokens, dims):
        raise AttributeError("'Llama' object has no attribute '_batch'")

    monkeypatch.setattr(local, "_pooled_embedding", moved)
    got = provider.embed_query("rollback plan")
    assert np.array_equal(got, want) and got is not want
