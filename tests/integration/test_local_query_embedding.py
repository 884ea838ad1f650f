"""The local provider's query path on the real MiniLM GGUF: one thread per query,
the documents' thread count for batches, and a cache of recent query vectors.

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


def test_repeated_queries_come_from_the_cache(provider, monkeypatch) -> None:
    first = provider.embed_query("staging database port")
    calls = []
    real = provider._embed
    monkeypatch.setattr(
        provider, "_embed", lambda texts, **kw: calls.append(texts) or real(texts, **kw)
    )
    second = provider.embed_query("staging database port")
    assert second is first and calls == []  # no model call for a repeat
    assert not second.flags.writeable  # shared, so nobody may change it in place
    with pytest.raises(ValueError):
        second[0] = 1.0
    provider.embed_query("something else")
    assert calls == [["something else"]]


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
    calls = []
    real = provider._embed
    monkeypatch.setattr(
        provider, "_embed", lambda texts, **kw: calls.append(texts) or real(texts, **kw)
    )
    provider.forget_queries()
    again = provider.embed_query("staging database port")
    assert calls == [["staging database port"]] and again is not first
    np.testing.assert_allclose(again, first, atol=1e-6)
