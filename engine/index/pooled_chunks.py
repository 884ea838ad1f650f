"""A chunk's vector pooled from its units' vectors, so the text is embedded once.

The calibrated ranking needs a vector per unit (line, or paragraph of wrapped
prose: ``engine.index.line_vectors``). Embedding each chunk as well ran the model
over the same text a second time: a cold index took 1.8–2.0 times as long as one
without unit vectors. When the units are embedded on their own (the local model's
default), the chunk's vector is made from them instead: the mean of its units'
vectors, each weighted by its length in characters (mean pooling weighs every
token alike, and a unit's tokens go with its length), normalised.

It is not the model's vector of the chunk's text, so:

* the index fingerprint names the rule (:data:`CHUNK_POOLING`): an index made the
  other way is rebuilt, and its unit vectors are reused;
* the embedding cache never holds these vectors. The ``openclaw`` profile borrows
  cached chunk vectors as OpenClaw's own and finds none of these: it embeds the
  chunks itself, or, configured, a sync caches them (``Engine._cache_profile_vectors``);
* it is pooled from the unit vectors as stored (5-bit codes read back at length 1,
  ``engine.index.line_codec``), so the same stored units give the same vector,
  whether they were embedded now or kept from before; SQLite keeps it in 8 bits
  (``engine.index.chunk_vector_codec``);
* a chunk without units (only headings, say) is embedded as a whole.

A heading is no unit, so it is not part of the pooled vector; keyword search
still finds its words. With κ fitted again for these vectors, every LoCoMo measure is
within 0.2 point of the model's chunk vectors or better
(``docs/benchmarks/2026-11-29-pooled-chunks.md``, ``2026-11-29-kappa.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from engine.embeddings.base import EmbeddingProvider, EmbedProgress, ProgressCallback, UnitSpan
from engine.index.index_store import IndexStore
from engine.index.line_codec import LineMatrix, unit_key
from engine.index.line_vectors import lines_setting, unit_spans, units_with_chunks

#: the pooling rule, part of the index fingerprint (another rule rebuilds the index)
CHUNK_POOLING = "unit-mean-1"
#: the fingerprint's key for it, absent from an index whose chunk vectors are the model's
FINGERPRINT_KEY = "chunk_vectors"


def fingerprint_pools(fingerprint: Mapping[str, object]) -> bool:
    """Whether an index with this fingerprint holds pooled chunk vectors."""
    return FINGERPRINT_KEY in fingerprint


def pools_chunks(provider: EmbeddingProvider | None, wanted: bool | None) -> bool:
    """Whether chunk vectors are pooled from unit vectors: unit vectors are on
    (``store.vector.lines``, ``wanted``) and embedded on their own, not in the
    chunk's own call (``units_with_chunks``)."""
    if provider is None or not lines_setting(provider, wanted).on:
        return False
    return units_with_chunks(provider) is None


def pooled_vector(matrix: np.ndarray, spans: list[UnitSpan]) -> np.ndarray:
    """The units' vectors (rows of ``matrix``) averaged, each weighted by its text's
    length, and normalised."""
    weights = np.array([max(1, len(s.text)) for s in spans], dtype=np.float32)
    vec = weights @ np.asarray(matrix, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    return (vec / norm if norm > 0 else vec).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class Pooled:
    """What :func:`embed_pooled_chunks` made: the chunks' vectors, in order, and how
    many of them came from unit vectors already stored (no provider call)."""

    vectors: np.ndarray
    from_stored: int


def embed_pooled_chunks(
    store: IndexStore,
    provider: EmbeddingProvider,
    key: str,
    texts: dict[str, str],
    progress: ProgressCallback | None = None,
    known: Mapping[int, np.ndarray] | None = None,
) -> Pooled:
    """The vectors of chunks ``texts`` (hash → text, in order), pooled from their
    units' vectors, which are stored under ``key`` (``line_vectors.space_key``).

    A chunk whose units are stored already costs nothing; a unit in ``known`` (unit
    key → vector: the units of the files' chunks before this edit) is not embedded
    again; each remaining distinct unit text is embedded once, in one provider
    call with the texts of the chunks that have no unit."""
    dims = provider.dims
    spans = {h: unit_spans(text) for h, text in texts.items()}
    stored = store.line_vectors([h for h, sp in spans.items() if sp], key)
    ready = {h for h, sp in spans.items() if sp and _fits(stored.get(h), len(sp), dims)}
    reuse = known or {}
    units: dict[str, None] = {}  # unit texts to embed, in order, once each
    for h, sp in spans.items():
        if h not in ready:
            units.update((s.text, None) for s in sp if unit_key(s.text) not in reuse)
    whole = [h for h, sp in spans.items() if not sp]
    asked = list(units) + [texts[h] for h in whole]
    got = np.zeros((0, dims), dtype=np.float32)
    if asked:
        got = np.asarray(provider.embed_documents(asked, _per_chunk(progress, len(texts))))
    fresh = dict(zip(units, got[: len(units)], strict=True))
    new: dict[str, LineMatrix] = {}
    for h, sp in spans.items():
        if h in ready or not sp:
            continue
        keys = tuple(unit_key(s.text) for s in sp)
        rows = [reuse[k] if k in reuse else fresh[s.text] for s, k in zip(sp, keys, strict=True)]
        new[h] = LineMatrix(np.stack(rows).astype(np.float32), keys)
    for h in whole:  # stored as empty, so no later pass looks for their units
        new[h] = LineMatrix(np.zeros((0, dims), dtype=np.float32), ())
    if new:
        store.put_line_vectors(key, new)
        stored.update(store.line_vectors([h for h in new if spans[h]], key))
    chunk_of_whole = dict(zip(whole, got[len(units) :], strict=True))
    vectors = [pooled_vector(stored[h], spans[h]) if spans[h] else chunk_of_whole[h] for h in texts]
    out = np.stack(vectors) if vectors else np.zeros((0, dims), dtype=np.float32)
    return Pooled(out.astype(np.float32), len(ready))


def _fits(matrix: np.ndarray | None, units: int, dims: int) -> bool:
    return matrix is not None and matrix.shape == (units, dims)


def _per_chunk(progress: ProgressCallback | None, chunks: int) -> ProgressCallback | None:
    """The provider's progress over unit texts, told in chunks (what a sync counts)."""
    if progress is None:
        return None

    def tell(p: EmbedProgress) -> None:
        share = p.items_done / p.items_total if p.items_total else 1.0
        progress(dataclasses.replace(p, items_done=int(share * chunks), items_total=chunks))

    return tell
