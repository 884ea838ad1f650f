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

A *line* is the unit where lines are units: a chat turn, a list item, a short
note line. In hard-wrapped prose it is not: there a line is a sentence fragment
(Cranfield's abstracts, wrapped at ~70 characters: best-line cosine ranks them at
nDCG@10 0.355, the chunk's cosine at 0.399). So a paragraph (lines up to a blank
line or a line that opens a Markdown block: list item, heading, quote, table row,
fence) whose lines read as wrapped prose — the lines before its last average
``WRAP_MIN_CHARS`` characters or more and most of them end mid-sentence — is one
unit (:func:`unit_spans`); every other line is its own. A heading is no unit: it
names what follows, and keyword search finds its words. Where the units are
embedded on their own, the chunk's vector is pooled from theirs
(``engine.index.pooled_chunks``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import NamedTuple

import numpy as np

from engine.embeddings.base import EmbeddingProvider, ProgressCallback, UnitSpan, UnitsWithChunks
from engine.index.index_store import IndexStore
from engine.index.line_codec import LineMatrix, unit_key
from engine.index.tokens import has_word

#: chunks whose lines are embedded per provider call batch
CHUNK_BATCH = 16
#: chunks read per page of a sync's missing unit vectors: their texts, not every
#: chunk's at once (100k chunks' texts held ~300 MB through a cold index)
MISSING_PAGE = 2048


#: wrapped prose: its lines (but the last) average at least this many characters
WRAP_MIN_CHARS = 25
#: the version of the unit rule, part of :func:`space_key`: matrices stored under
#: another rule are embedded again (unchanged units come from the embedding cache)
UNIT_RULE = "units-2"
#: a Markdown heading: no unit (see the module docstring)
_HEADING = re.compile(r"\s*#{1,6}(?:\s|$)")
#: a line that opens a Markdown block: it starts a unit, it never continues one
_BLOCK_START = re.compile(r"\s*(?:#{1,6}(?:\s|$)|[-*+]\s|\d{1,9}[.)]\s|>|\||```|~~~)")
#: a line that is a block of its own (heading, table row, fence): nothing continues it
_ONE_LINE_BLOCK = re.compile(r"\s*(?:#{1,6}(?:\s|$)|\||```|~~~)")
#: how a line that ends a sentence ends (closing quotes and brackets allowed)
_SENTENCE_END = re.compile(r"[.!?:;…][\"'”’)\]*_]*\s*$")


def _opens_block(line: str) -> bool:
    return not line.strip() or _BLOCK_START.match(line) is not None


def _wrapped_prose(lines: list[str]) -> bool:
    """Whether a paragraph's lines are one text broken at a width, not separate lines."""
    body = lines[:-1]
    if not body:
        return False
    mid_sentence = sum(1 for line in body if not _SENTENCE_END.search(line))
    chars = sum(len(line.strip()) for line in body)
    return chars >= WRAP_MIN_CHARS * len(body) and 2 * mid_sentence > len(body)


def unit_spans(text: str) -> list[UnitSpan]:
    """(first, last 0-based line offset in the chunk, text) of every vector unit.

    A unit is one line (its text as it is), or a paragraph of wrapped prose, its
    lines joined by spaces (see the module docstring). Headings and units without
    a word are left out.
    """
    lines = text.split("\n")
    out: list[UnitSpan] = []
    i = 0
    while i < len(lines):
        if _HEADING.match(lines[i]):
            i += 1
            continue
        j = i + 1  # the paragraph: a line, then the lines that do not open a block
        alone = not lines[i].strip() or _ONE_LINE_BLOCK.match(lines[i]) is not None
        while j < len(lines) and not alone and not _opens_block(lines[j]):
            j += 1
        if _wrapped_prose(lines[i:j]):
            out.append(UnitSpan(i, j - 1, " ".join(line.strip() for line in lines[i:j])))
        else:
            out += [UnitSpan(k, k, lines[k]) for k in range(i, j) if has_word(lines[k])]
        i = j
    return out


#: chunk content hash → its units' line offsets, flat (first, last, first, last, …)
_BOUNDS: dict[str, tuple[int, ...]] = {}
#: how many chunks' offsets are remembered (~0.4 kB each); the whole cache is dropped
#: when it is full
BOUNDS_CACHE_MAX = 20_000


def unit_bounds(chunk_hash: str, text: str) -> tuple[int, ...]:
    """The (first, last) line offsets of :func:`unit_spans` of ``text``, flattened,
    remembered by the chunk's content hash (a sha256 of the text, the key of its
    line vectors too): a search ranks ~50 candidates, and splitting each into units
    again per query cost more than the rest of ``chunk_units``."""
    got = _BOUNDS.get(chunk_hash)
    if got is None:
        got = tuple(offset for first, last, _ in unit_spans(text) for offset in (first, last))
        if len(_BOUNDS) >= BOUNDS_CACHE_MAX:
            _BOUNDS.clear()
        _BOUNDS[chunk_hash] = got
    return got


def line_units(text: str) -> list[tuple[int, str]]:
    """(0-based line offset in the chunk of its first line, text) of every vector unit."""
    return [(first, unit) for first, _, unit in unit_spans(text)]


def line_hash(line: str) -> str:
    """The embedding-cache key of a line (same scheme as chunk texts: sha256)."""
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def late_units(provider: EmbeddingProvider) -> UnitsWithChunks | None:
    """The provider, when it pools units from the chunk's own run of the model
    (``engine.embeddings.late_units``); else None (units are embedded on their own)."""
    if isinstance(provider, UnitsWithChunks) and provider.unit_pooling.startswith("late"):
        return provider
    return None


def units_with_chunks(provider: EmbeddingProvider) -> UnitsWithChunks | None:
    """The provider, when it gives a chunk's unit vectors in the chunk's own call:
    pooled from the chunk's run (:func:`late_units`) or packed into the chunk's
    request (``"packed"``, a remote API); else None."""
    if isinstance(provider, UnitsWithChunks) and (
        provider.unit_pooling == "packed" or provider.unit_pooling.startswith("late")
    ):
        return provider
    return None


class LinesSetting(NamedTuple):
    """Whether an index's chunks get unit vectors, and why (``memdeck status``)."""

    on: bool
    reason: str


def lines_setting(provider: EmbeddingProvider | None, wanted: bool | None) -> LinesSetting:
    """``store.vector.lines`` (``wanted``) for ``provider``, with its reason. Unset,
    they are on with the local model (they cost time, not money) and with a remote
    API that carries them in their chunks' requests (tokens, ~2× chunk-only, but no
    more requests), off with any other provider."""
    if provider is None:
        return LinesSetting(False, "no embedding provider")
    if wanted is not None:
        return LinesSetting(wanted, f"store.vector.lines: {'true' if wanted else 'false'}")
    if provider.id == "local":
        return LinesSetting(True, "the local model")
    if units_with_chunks(provider) is not None:
        return LinesSetting(True, "each unit an input of its chunk's request")
    return LinesSetting(
        False, f"off by default with {provider.id}; store.vector.lines: true turns them on"
    )


def space_key(provider: EmbeddingProvider) -> str:
    """Which vector space line vectors belong to: provider, model and endpoint key,
    the unit rule, and how units are pooled when not on their own (a unit's vector
    from its chunk's run is not the vector of its text alone: the two never mix)."""
    fp = provider.fingerprint()
    key = [fp.get("provider"), fp.get("model"), fp.get("provider_key"), UNIT_RULE]
    late = late_units(provider)
    if late is not None:
        key.append(late.unit_pooling)
    return json.dumps(key, separators=(",", ":"))


def embed_chunks_with_units(
    store: IndexStore,
    provider: UnitsWithChunks,
    key: str,
    texts: dict[str, str],
    progress: ProgressCallback | None = None,
    known: Mapping[int, np.ndarray] | None = None,
) -> tuple[np.ndarray, set[str]]:
    """The vectors of chunks ``texts`` (hash → text, in order), their units' vectors
    taken from the same call and stored under ``key`` (:func:`space_key`); returns
    the chunks' vectors and the hashes whose units could not be pooled (for
    :func:`embed_missing_lines` to embed their units on their own).

    ``known`` (unit key → vector: the units of the files' chunks before this edit,
    ``IndexStore.orphan_line_units``) spares a provider that sends each unit as an
    input of its own (``"packed"``) the units it embedded before: an appended line
    costs its chunk and itself, not its chunk's every line again. Pooled units
    (``"late-…"``) come from the chunk's run, so they are all taken from it."""
    spans = [unit_spans(text) for text in texts.values()]
    keys = [tuple(unit_key(u.text) for u in units) for units in spans]
    reuse = known if known and provider.unit_pooling == "packed" else {}
    ask = [
        [u for u, k in zip(units, ks, strict=True) if k not in reuse]
        for units, ks in zip(spans, keys, strict=True)
    ]
    vectors, mats = provider.embed_with_units(list(texts.values()), ask, progress)
    got: dict[str, LineMatrix] = {}
    for h, ks, m in zip(texts, keys, mats, strict=True):
        if m is None:
            continue
        if len(m) != sum(k not in reuse for k in ks):
            raise ValueError(f"{len(m)} unit vectors for a chunk that asked another number")
        new = iter(m)  # the asked units' rows, in order: the units not reused
        rows = [reuse[k] if k in reuse else next(new) for k in ks]
        matrix = np.stack(rows) if rows else np.zeros((0, vectors.shape[1]), dtype=np.float32)
        got[h] = LineMatrix(matrix, ks)
    if got:
        store.put_line_vectors(key, got)
    return vectors, {h for h in texts if h not in got}


def _batches(
    store: IndexStore, key: str, first: list[tuple[str, str]]
) -> Iterator[list[tuple[str, str]]]:
    """``CHUNK_BATCH`` chunks at a time from pages of ``MISSING_PAGE``, the next page
    read after the last one is done (the caller stores each batch's vectors)."""
    page = first
    while page:
        for start in range(0, len(page), CHUNK_BATCH):
            yield page[start : start + CHUNK_BATCH]
        if len(page) < MISSING_PAGE:
            return
        page = store.chunks_without_line_vectors(key, after=page[-1][0], limit=MISSING_PAGE)


def embed_missing_lines(
    store: IndexStore,
    provider: EmbeddingProvider,
    *,
    use_cache: bool,
    check_cancel: Callable[[], None] = lambda: None,
    separate: Collection[str] = (),
) -> int:
    """Embed the units of every chunk that has none stored yet; returns units embedded.

    A unit that an edited chunk had before keeps its vector: the old matrix (not
    pruned yet) holds it under the unit's key. Units of indexes written before the
    keys were stored may still sit in the embedding cache and are taken from there.
    New unit vectors are stored once, in the chunk's matrix (never in the cache).

    A provider that pools units from the chunk's run (:func:`late_units`) gives
    every chunk's units that way, except the chunks in ``separate`` (their units
    could not be pooled: too long for the model's context) and those it cannot
    pool now, whose units are embedded on their own as above.
    """
    key = space_key(provider)
    fp = provider.fingerprint()
    pid, model, pkey = str(fp.get("provider")), str(fp.get("model")), str(fp.get("provider_key"))
    dims = provider.dims
    embedded = 0
    late = late_units(provider)
    todo = store.chunks_without_line_vectors(key, limit=MISSING_PAGE)
    kept = store.orphan_line_units(key) if todo and use_cache and late is None else {}
    kept = {k: v for k, v in kept.items() if v.shape == (dims,)}
    for batch in _batches(store, key, todo):
        check_cancel()
        if late is not None:
            pool = {h: text for h, text in batch if h not in separate}
            if pool:
                _, left = embed_chunks_with_units(store, late, key, pool)
                embedded += sum(len(line_units(text)) for h, text in pool.items() if h not in left)
                batch = [(h, text) for h, text in batch if h not in pool or h in left]
        units = {h: [line for _, line in line_units(text)] for h, text in batch}
        keys = {line: unit_key(line) for lines in units.values() for line in lines}
        vectors = {line: kept[k] for line, k in keys.items() if k in kept}
        rest = [line for line in keys if line not in vectors]
        if rest and use_cache:  # an index from before unit keys: its cache has them
            by_hash = {line_hash(line): line for line in rest}
            cached = store.cache_get(pid, model, pkey, list(by_hash))
            vectors.update({by_hash[h]: v for h, v in cached.items() if v.shape == (dims,)})
            rest = [line for line in rest if line not in vectors]
        if rest:
            fresh = provider.embed_documents(rest, lambda _: check_cancel())
            vectors.update(zip(rest, np.asarray(fresh, dtype=np.float32), strict=True))
            embedded += len(rest)
        store.put_line_vectors(
            key,
            {
                h: LineMatrix(
                    np.stack([vectors[line] for line in lines])
                    if lines
                    else np.zeros((0, dims), dtype=np.float32),
                    tuple(keys[line] for line in lines),
                )
                for h, lines in units.items()
            },
        )
    store.prune_line_vectors()
    return embedded


class UnitHit(NamedTuple):
    """A chunk's unit most similar to the query: its file lines and cosine."""

    first_line: int
    cosine: float
    last_line: int


class ChunkUnits(NamedTuple):
    """A chunk's unit vectors (one L2-normalised row per unit) and each unit's file
    lines: what a ranking needs to score the chunk's units against any query vector."""

    matrix: np.ndarray
    first_lines: tuple[int, ...]
    last_lines: tuple[int, ...]

    def best(self, query_vector: np.ndarray) -> UnitHit:
        """The unit most similar to ``query_vector`` (the first of equals)."""
        sims = self.matrix @ query_vector
        i = int(np.argmax(sims))
        return UnitHit(self.first_lines[i], float(sims[i]), self.last_lines[i])


def chunk_units(
    store: IndexStore,
    provider: EmbeddingProvider,
    query_dims: int,
    chunks: dict[int, tuple[str, str, int]],
    mats: Mapping[str, np.ndarray] | None = None,
) -> dict[int, ChunkUnits]:
    """chunk id → its :class:`ChunkUnits` (one line, or a paragraph of wrapped prose each).

    ``chunks`` maps each candidate id to (content hash, text, first line). A
    chunk without stored line vectors (not embedded yet, a media chunk) or with
    vectors of another dimension than the query's is left out; the caller falls
    back to the chunk's own cosine. ``mats`` are the line matrices by chunk hash
    when the caller read them already (the search reads them while the query is
    being embedded); else they are read here.
    """
    if mats is None:
        mats = store.line_vectors([h for h, _, _ in chunks.values()], space_key(provider))
    out: dict[int, ChunkUnits] = {}
    for cid, (h, text, first) in chunks.items():
        mat = mats.get(h)
        if mat is None or mat.shape[0] == 0 or mat.shape[1] != query_dims:
            continue
        bounds = unit_bounds(h, text)
        if len(bounds) != 2 * mat.shape[0]:
            continue
        out[cid] = ChunkUnits(
            mat, tuple(first + b for b in bounds[0::2]), tuple(first + b for b in bounds[1::2])
        )
    return out
