"""Runs the ``openclaw`` profile for an engine: keeps its profile index current and
adds the vector side when the engine has an embedding provider.

The profile index lives in memory (see :class:`OpenClawIndex`); chunk vectors
come from memdeck's embedding cache when a chunk's text is already embedded
(same text hash), otherwise from the provider — and are cached here, never
written to disk by a read-only engine, nor ever to OpenClaw's own index.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from engine.embeddings.base import EmbeddingProvider
from engine.index.index_store import IndexStore
from engine.openclaw.chunking import text_hash
from engine.openclaw.profile import (
    OpenClawIndex,
    OpenClawOutcome,
    cosine_scores,
    search_openclaw,
)


class OpenClawRunner:
    def __init__(self, root: Path, extra_dirs: tuple[Path, ...] = ()):
        self.root = root
        self.extra_dirs = extra_dirs
        self.index = OpenClawIndex()
        self.vectors: dict[str, np.ndarray] = {}  # text hash -> vector
        self.lock = threading.Lock()

    def search(
        self,
        query: str,
        *,
        max_results: int,
        min_score: float,
        provider: EmbeddingProvider | None = None,
        store: IndexStore | None = None,
        now_ms: float | None = None,
    ) -> OpenClawOutcome:
        with self.lock:
            self.index.load_workspace(self.root, self.extra_dirs)
            scores = None
            if provider is not None and query.strip() and self.index.chunks:
                scores = self._vector_scores(query.strip(), provider, store)
        return search_openclaw(
            self.index,
            query,
            max_results=max_results,
            min_score=min_score,
            now_ms=now_ms,
            vector_scores=scores,
        )

    def cache_model_vectors(self, provider: EmbeddingProvider, store: IndexStore) -> int:
        """Embed the profile's chunks whose vectors the store's cache lacks, and put
        them there; returns how many. A writer's sync calls this where memdeck's own
        chunk vectors are pooled from unit vectors, not the model's vectors of the
        texts (``engine.index.pooled_chunks``), so that the profile's searches, in
        any process, need not embed every chunk again."""
        with self.lock:
            self.index.load_workspace(self.root, self.extra_dirs)
            if not self.index.chunks:
                return 0
            fresh = self._fill(provider, store, self._hashes())
        if fresh:
            fp = provider.fingerprint()
            store.cache_put(
                str(fp.get("provider")), str(fp.get("model")), str(fp.get("provider_key")), fresh
            )
        return len(fresh)

    def _hashes(self) -> dict[str, str]:
        """chunk id → its text's hash (the key of its vector)."""
        return {cid: text_hash(c.text) for cid, c in self.index.chunks.items()}

    def _fill(
        self, provider: EmbeddingProvider, store: IndexStore | None, hashes: dict[str, str]
    ) -> dict[str, np.ndarray]:
        """Every chunk's vector (``hashes``: chunk id → text hash) into
        ``self.vectors``: from the store's cache, else from the provider; returns
        those the provider gave."""
        missing = [h for h in dict.fromkeys(hashes.values()) if h not in self.vectors]
        if missing and store is not None:
            fp = provider.fingerprint()
            cached = store.cache_get(
                str(fp.get("provider")), str(fp.get("model")), str(fp.get("provider_key")), missing
            )
            self.vectors.update({h: v for h, v in cached.items() if v.shape[0] == provider.dims})
        text_of = {hashes[cid]: c.text for cid, c in self.index.chunks.items()}
        missing = [h for h in dict.fromkeys(hashes.values()) if h not in self.vectors]
        if not missing:
            return {}
        matrix = provider.embed_documents([text_of[h] for h in missing])
        fresh = dict(zip(missing, matrix, strict=True))
        self.vectors.update(fresh)
        return fresh

    def _vector_scores(
        self, query: str, provider: EmbeddingProvider, store: IndexStore | None
    ) -> dict[str, float]:
        hashes = self._hashes()
        self._fill(provider, store, hashes)
        query_vec = provider.embed_query(query)
        return cosine_scores(
            self.index, query_vec, {cid: self.vectors[h] for cid, h in hashes.items()}
        )
