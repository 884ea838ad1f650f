"""One embedding per line of a chunk (memdeck extension), for the ``calibrated`` fusion.

A 400-token chunk of a chat log holds ~20 turns and usually one of them answers
a question; the chunk's single vector averages that line with nineteen others,
so its cosine with the question is low and close to an unrelated query's. The
best *line's* cosine is not: on LoCoMo conversations 0–4 the vector side alone
finds the evidence chunk in the top 6 for 74 % of questions by best-line cosine
against 57 % by chunk cosine, and off-topic queries stay below 0.2 (README
"Benchmarks"). So after a sync writes the chunks, each text chunk's non-empty
lines are embedded (through the same embedding cache as chunks) and stored as one
matrix per chunk content hash in the ``line_vectors`` table; the search reads
the matrices of its candidates only, so nothing grows in memory with the index.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import numpy as np

from engine.embeddings.base import EmbeddingProvider
from engine.index.store import Store
from engine.index.tokens import WORD_RE

#: chunks whose lines are embedded per provider call batch
CHUNK_BATCH = 16


def line_units(text: str) -> list[tuple[int, str]]:
    """(0-based line offset in the chunk, line) of every line holding a word."""
    return [(i, line) for i, line in enumerate(text.split("\n")) if WORD_RE.search(line)]


def line_hash(line: str) -> str:
    """The embedding-cache key of a line (same scheme as chunk texts: sha256)."""
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def space_key(provider: EmbeddingProvider) -> str:
    """Which vector space line vectors belong to: provider, model and endpoint key."""
    fp = provider.fingerprint()
    return json.dumps(
        [fp.get("provider"), fp.get("model"), fp.get("provider_key")], separators=(",", ":")
    )


def embed_missing_lines(
    store: Store,
    provider: EmbeddingProvider,
    *,
    use_cache: bool,
    check_cancel: Callable[[], None] = lambda: None,
) -> int:
    """Embed the lines of every chunk that has none stored yet; returns lines embedded.

    Lines already in the embedding cache (an unchanged line of an edited chunk,
    a re-sync after a rebuild) are not sent to the provider again.
    """
    key = space_key(provider)
    fp = provider.fingerprint()
    pid, model, pkey = str(fp.get("provider")), str(fp.get("model")), str(fp.get("provider_key"))
    todo = store.chunks_without_line_vectors(key)
    dims = provider.dims
    embedded = 0
    for start in range(0, len(todo), CHUNK_BATCH):
        check_cancel()
        batch = todo[start : start + CHUNK_BATCH]
        units = {h: [line for _, line in line_units(text)] for h, text in batch}
        hashes = list(dict.fromkeys(line_hash(line) for lines in units.values() for line in lines))
        cached = store.cache_get(pid, model, pkey, hashes) if use_cache else {}
        vectors = {h: v for h, v in cached.items() if v.shape == (dims,)}
        missing_text = {
            line_hash(line): line
            for lines in units.values()
            for line in lines
            if line_hash(line) not in vectors
        }
        if missing_text:
            order = list(missing_text)
            fresh = provider.embed_documents([missing_text[h] for h in order])
            got = dict(zip(order, np.asarray(fresh, dtype=np.float32), strict=True))
            vectors.update(got)
            embedded += len(got)
            if use_cache:
                store.cache_put(pid, model, pkey, got)
        store.put_line_vectors(
            key,
            {
                h: np.stack([vectors[line_hash(line)] for line in lines])
                if lines
                else np.zeros((0, dims), dtype=np.float32)
                for h, lines in units.items()
            },
        )
    store.prune_line_vectors()
    return embedded


def best_lines(
    store: Store,
    provider: EmbeddingProvider,
    query_vector: np.ndarray,
    chunks: dict[int, tuple[str, str, int]],
) -> dict[int, tuple[int, float]]:
    """chunk id → (file line number, cosine) of its line most similar to the query.

    ``chunks`` maps each candidate id to (content hash, text, first line). A
    chunk without stored line vectors (not embedded yet, a media chunk) is left
    out; the caller falls back to the chunk's own cosine.
    """
    mats = store.line_vectors([h for h, _, _ in chunks.values()], space_key(provider))
    out: dict[int, tuple[int, float]] = {}
    for cid, (h, text, first) in chunks.items():
        mat = mats.get(h)
        if mat is None or mat.shape[0] == 0 or mat.shape[1] != query_vector.shape[0]:
            continue
        units = line_units(text)
        if len(units) != mat.shape[0]:
            continue
        sims = mat @ query_vector
        i = int(np.argmax(sims))
        out[cid] = (first + units[i][0], float(sims[i]))
    return out
