"""Retrieval: the search's I/O, from a query to the raw material of its ranking.

``retrieve`` asks the index store for the keyword candidates (AND, then OR when
AND finds nothing) while the provider embeds the query on another thread
(``engine.embeddings.query_lane``), then for the vector candidates and what the
ranking reads about every candidate (rows, stored vectors, line vectors, file
mtimes, and in a hybrid search both sides' numbers for each). It returns a
:class:`Retrieval`; ``engine.search.rank`` ranks it without further I/O.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from engine.embeddings.base import EmbeddingProvider, ProviderError
from engine.embeddings.query_lane import QueryVector, embed_query_in_background
from engine.index.db import CorruptIndexError, DatabaseError
from engine.index.index_store import IndexStore
from engine.index.line_vectors import ChunkUnits, UnitHit, chunk_units, space_key, unit_bounds
from engine.index.store import ChunkRow
from engine.search import scoring
from engine.search.model import Retrieval, SearchOptions
from engine.search.query import ParsedQuery, match_expression, parse_query
from engine.search.words import function_word, name_words, token_counts, word_terms

__all__ = [
    "COMPLETE_WINDOW",
    "PRUNE_MIN_ROWS",
    "VEC_DAMAGED",
    "QueryTerms",
    "VecTableDamaged",
    "retrieve",
]

#: below this many chunks the OR fallback keeps every term (``QueryTerms.or_words``)
PRUNE_MIN_ROWS = 2000
#: length of the FTS ranking a hybrid retrieval reads to score vector candidates
COMPLETE_WINDOW = 1000
#: FTS5's bm25 replaces an idf <= 0 (a word in half the rows or more) with this
FTS5_IDF_FLOOR = 1e-6
#: every |rank| below this means every query word hit the idf floor
IDF_FLOOR_RANK = 1e-4


#: The start of ``vector_error`` when sqlite-vec's table could not be read.
VEC_DAMAGED = "the sqlite-vec table is damaged; answered keyword-only"


class VecTableDamaged(DatabaseError):
    """Reading sqlite-vec's table failed: its rows can be rebuilt from ``chunks``."""


def retrieve(
    store: IndexStore,
    provider: EmbeddingProvider | None,
    query: str,
    options: SearchOptions,
    *,
    vector_path: str = "auto",
    budget_s: float | None = None,
) -> Retrieval:
    """Fetch both candidate lists. Never raises for a failing provider: the
    vector side is then empty and ``vector_error`` says why.

    ``budget_s`` bounds the wait for the query embedding (measured from the
    start of the search): a provider that is slow or hangs makes the search
    keyword-only, with the reason, instead of making it wait.

    The query is split into its words once (:func:`parse_query`); its document
    counts are read at most once (:class:`QueryTerms`).
    """
    limit = options.candidates
    parsed = parse_query(query)
    terms = QueryTerms(store, parsed)
    fts_hits: list[tuple[int, float]] = []
    fts_q = parsed.and_match
    operator: str | None = None
    t0 = time.perf_counter()
    # Hybrid retrievals give vector candidates their text score too. Where the store
    # can compute FTS5's bm25 for chosen rows (``Store.fts_ranks_of``) that costs a
    # few rows; otherwise a longer FTS ranking is read and looked up (FTS5 ranks every
    # match for ORDER BY rank anyway, so the window costs only the rows handed back).
    complete = options.mode == "hybrid" and provider is not None and store.dims is not None
    by_rows = complete and store.can_rank_rows()
    window = max(limit, COMPLETE_WINDOW) if complete and not by_rows else limit
    ranked: list[tuple[int, float]] = []
    idf_scale = 1.0
    vector_ok = provider is not None and store.dims is not None
    wants_vector = vector_ok and options.mode != "fts" and bool(query.strip())
    run_fts = bool(fts_q) and store.fts_available and options.mode != "vector"
    # The query embedding (llama.cpp or HTTP, both release the GIL) runs while
    # SQLite ranks the keyword side: a hybrid search costs max(embed, FTS), not the sum.
    pending: Future[QueryVector] | None = None
    if wants_vector and provider is not None:
        pending = embed_query_in_background(provider, query)
    if run_fts and fts_q:
        # The keyword side's postings rank the AND (and OR) query's top-k in numpy
        # (``engine.index.keyword_index``); FTS5's exhaustive ranking when they cannot.
        ranked = _keyword_ranking(store, parsed.words, fts_q, window, limit, options, True)
        operator = "AND"
        if not ranked:
            or_q = terms.or_match()
            if or_q and or_q != fts_q:
                ranked = _keyword_ranking(
                    store, terms.or_words(), or_q, window, limit, options, False
                )
                fts_q, operator = or_q, "OR"
        idf_scale = terms.idf_floor_scale(ranked)
        if idf_scale != 1.0:
            ranked = [(cid, value * idf_scale) for cid, value in ranked]
        fts_hits = ranked[:limit]
    t1 = time.perf_counter()
    # While the query is still being embedded, read what the keyword side's hits
    # need later (rows, vectors, line vectors, mtimes): after the query vector only
    # the vector side's new candidates are left to read.
    data = _CandidateData(
        store,
        line_space=space_key(provider) if complete and wants_vector and provider else None,
        vectors=wants_vector and (complete or options.mmr_similarity == "cosine"),
    )
    data.load([i for i, _ in fts_hits])
    idf_sum = terms.idf_sum() if complete and store.fts_available else 0.0
    vector_hits: list[tuple[int, float]] = []
    vector_error = None
    embed_ms = 0.0
    qvec: np.ndarray | None = None
    vector_ms = 0.0
    if wants_vector:
        try:
            assert pending is not None
            wait = None if budget_s is None else max(0.0, budget_s - (time.perf_counter() - t0))
            try:
                qvec, embed_ms = pending.result(timeout=wait)
            except FutureTimeout:
                pending.cancel()
                raise ProviderError(
                    f"the query embedding took longer than the search budget "
                    f"({budget_s:g} s, MEMDECK_SEARCH_BUDGET_S); answered keyword-only"
                ) from None
            tv = time.perf_counter()
            try:
                vector_hits = store.vector_search(
                    qvec, limit, options.sources, path=vector_path, read_vectors=data.read_vectors
                )
            except CorruptIndexError:
                raise  # the whole file: the engine moves it aside and rebuilds
            except DatabaseError as exc:  # sqlite-vec's table: rebuilt from chunks
                raise VecTableDamaged(f"{VEC_DAMAGED}: {exc}") from exc
            vector_ms = (time.perf_counter() - tv) * 1000
        except VecTableDamaged as exc:
            vector_error = str(exc)
            qvec = None
        except ProviderError as exc:
            vector_error = str(exc)
    t2 = time.perf_counter()
    ids = list(dict.fromkeys([i for i, _ in fts_hits] + [i for i, _ in vector_hits]))
    data.load(ids)
    text_ranks: dict[int, float] = {}
    cosines: dict[int, float] = {}
    word_weights: dict[str, tuple[float, int, int]] = {}
    if complete and fts_q and qvec is not None and store.fts_available:
        # Both sides for every candidate. Text: the bm25 rank from the window (a
        # vector candidate that the AND query missed gets its OR rank, which for a
        # chunk holding every word equals the AND rank); beyond the window a chunk
        # counts as not matching. Vector: the cosine with its stored embedding.
        window_ranks = dict(ranked)
        if by_rows:
            _rank_rows(
                terms,
                operator,
                [i for i in ids if i not in window_ranks],
                idf_scale,
                window_ranks,
            )
        elif operator == "AND" and any(i not in window_ranks for i in ids):
            or_q = terms.or_match()
            if or_q and or_q != fts_q:
                for cid, value in store.fts_search(or_q, window, options.sources):
                    window_ranks.setdefault(cid, value * idf_scale)
        text_ranks = {i: window_ranks[i] for i in ids if i in window_ranks}
        word_weights = terms.weights()
        t3 = time.perf_counter()
        cosines = {i: float(s) for i, s in vector_hits}
        for cid in ids:
            vec = data.vectors.get(cid)
            if cid not in cosines and vec is not None and vec.shape == qvec.shape:
                cosines[cid] = float(np.dot(vec, qvec))
        t4 = time.perf_counter()
        fts_extra, vec_extra = t3 - t2, t4 - t3
    else:
        fts_extra = vec_extra = 0.0
    rows = data.rows_of(ids)
    word_counts: dict[int, dict[str, int]] = {}
    lengths: dict[int, int] = {}
    if word_weights:
        tw = time.perf_counter()
        word_counts, lengths = _word_counts(store, terms, rows, by_rows)
        fts_extra += time.perf_counter() - tw
    line_hits: dict[int, UnitHit] = {}
    units: dict[int, ChunkUnits] = {}
    if complete and qvec is not None and provider is not None:
        tl = time.perf_counter()
        hashes = data.hashes
        units = chunk_units(
            store,
            provider,
            qvec.shape[0],
            {cid: (hashes[cid], r.text, r.start_line) for cid, r in rows.items() if cid in hashes},
            data.line_mats,
        )
        line_hits = {cid: u.best(qvec) for cid, u in units.items()}
        vec_extra += time.perf_counter() - tl
    keep_vectors = (complete and qvec is not None) or (
        options.mmr_similarity == "cosine" and bool(vector_hits)
    )
    vectors = data.vectors_of(ids) if keep_vectors else {}
    paths = {r.path for r in rows.values()}
    mtimes = {p: data.mtimes[p] for p in sorted(paths) if p in data.mtimes}
    return Retrieval(
        query=query,
        fts_query=fts_q if store.fts_available else None,
        fts_operator=operator,
        fts_hits=fts_hits,
        vector_hits=vector_hits,
        rows=rows,
        vectors=vectors,
        file_mtimes=mtimes,
        fts_available=store.fts_available,
        vector_available=vector_ok,
        vector_error=vector_error,
        embed_ms=embed_ms,
        fts_ms=(t1 - t0 + fts_extra) * 1000,
        vector_ms=vector_ms + vec_extra * 1000,
        text_ranks=text_ranks,
        cosines=cosines,
        bm25_idf_scale=idf_scale,
        line_hits=line_hits,
        query_idf_sum=idf_sum,
        word_weights=word_weights,
        word_counts=word_counts,
        chunk_lengths=lengths,
        query_vector=qvec if complete else None,
        units=units,
    )


def _word_counts(
    store: IndexStore, terms: QueryTerms, rows: dict[int, ChunkRow], by_rows: bool
) -> tuple[dict[int, dict[str, int]], dict[int, int]]:
    """(chunk id → query term → how often the chunk holds it, chunk id → its length
    in terms): bm25's tf and dl, for the terms each chunk holds.

    From the keyword postings when the store keeps them in step; else counted in the
    rows' text (``token_counts``, the same unicode61 terms) for the terms FTS5
    matches in each chunk, each at least once (a stemming tokenizer matches other
    forms), or, when the store cannot say, those counted. A word of several terms
    (``foo_bar``, a phrase for FTS5) counts its rarest term's occurrences."""
    words = list(terms.query.terms)
    got = store.term_frequencies(words, list(rows))
    if got is not None:
        return got.counts, got.lengths
    present = terms.presence(list(rows)) if by_rows else None
    parts = {t: word_terms(t) for t in words}
    out: dict[int, dict[str, int]] = {}
    lengths: dict[int, int] = {}
    for cid, row in rows.items():
        counts = token_counts(row.text)
        lengths[cid] = sum(counts.values())
        if present is None:
            held = {t: n for t in words if (n := _occurrences(counts, parts[t]))}
        else:  # a chunk FTS5 matches no term in holds none
            held = {t: max(1, _occurrences(counts, parts[t])) for t in present.get(cid, ())}
        if held:
            out[cid] = held
    return out, lengths


def _occurrences(counts: Counter[str], parts: tuple[str, ...]) -> int:
    return min((counts[p] for p in parts), default=0)


class _CandidateData:
    """What the ranking reads per candidate, read once per chunk and batched.

    ``load`` reads the rows of chunks not read yet (plus, as asked, their stored
    vectors, their line vectors in ``line_space`` and their files' mtimes); the
    search calls it for the keyword side's hits while the query is being
    embedded, then for all candidates. The ``*_of`` views give exactly what one
    read of those ids would have (a chunk deleted meanwhile is simply absent).
    """

    def __init__(self, store: IndexStore, *, line_space: str | None, vectors: bool):
        self._store = store
        self._line_space = line_space
        self._want_vectors = vectors
        self._seen: set[int] = set()
        self._hashes_asked: set[str] = set()
        self._vectors_read: set[int] = set()
        self.rows: dict[int, ChunkRow] = {}
        self.hashes: dict[int, str] = {}
        self.vectors: dict[int, np.ndarray] = {}
        self.line_mats: dict[str, np.ndarray] = {}
        self.mtimes: dict[str, float] = {}

    def load(self, ids: list[int]) -> None:
        new = [i for i in dict.fromkeys(ids) if i not in self._seen]
        if not new:
            return
        self._seen.update(new)
        store = self._store
        rows = store.chunk_rows(new)
        self.rows.update(rows)
        if self._want_vectors:
            self.read_vectors(new)
        if self._line_space is not None and rows:
            hashes = store.chunk_hashes(list(rows))
            self.hashes.update(hashes)
            ask = [h for h in dict.fromkeys(hashes.values()) if h not in self._hashes_asked]
            self._hashes_asked.update(ask)
            if ask:
                self.line_mats.update(store.line_vectors(ask, self._line_space))
            for cid, h in hashes.items():  # split into units now: off the query vector's path
                mat = self.line_mats.get(h)
                if mat is not None and mat.shape[0]:
                    unit_bounds(h, rows[cid].text)
        paths = sorted({r.path for r in rows.values()} - self.mtimes.keys())
        if paths:
            self.mtimes.update(store.file_mtimes(paths))
        for row in rows.values():  # what each chunk is called: remembered for the ranking
            name_words(row.path, row.text, row.start_line)

    def read_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors of ``ids``, each read once: the vector scan's exact
        rescoring reads its candidates' here, and the ranking reuses them."""
        new = [i for i in dict.fromkeys(ids) if i not in self._vectors_read]
        if new:
            self._vectors_read.update(new)
            self.vectors.update(self._store.chunk_vectors(new))
        return {i: self.vectors[i] for i in ids if i in self.vectors}

    def rows_of(self, ids: list[int]) -> dict[int, ChunkRow]:
        return {i: self.rows[i] for i in sorted(ids) if i in self.rows}

    def vectors_of(self, ids: list[int]) -> dict[int, np.ndarray]:
        if not self._want_vectors:  # not read ahead (no query vector was expected)
            return self._store.chunk_vectors(ids)
        return {i: self.vectors[i] for i in sorted(ids) if i in self.vectors}


def _keyword_ranking(
    store: IndexStore,
    words: Sequence[str],
    match: str,
    window: int,
    limit: int,
    options: SearchOptions,
    require_all: bool,
) -> list[tuple[int, float]]:
    """The keyword ranking of ``match`` (the AND/OR of ``words``): from the store's
    postings when they can give it, else FTS5's ``fts_search`` (the same list)."""
    if window == limit:
        got = store.keyword_search(words, window, options.sources, require_all=require_all)
        if got is not None:
            return got
    return store.fts_search(match, window, options.sources)


class QueryTerms:
    """A parsed query against one store: bm25's N, each term's document count
    (bm25's n) and the OR fallback's words, each read from the store at most once
    per search, when first needed."""

    def __init__(self, store: IndexStore, query: ParsedQuery) -> None:
        self.store = store
        self.query = query
        self._total: int | None = None
        self._counts: dict[str, int] | None = None
        self._or_words: tuple[str, ...] | None = None

    def total(self) -> int:
        """Rows in the keyword index (all sources: bm25's N)."""
        if self._total is None:
            self._total = self.store.fts_row_count()
        return self._total

    def doc_counts(self) -> dict[str, int]:
        """How many rows hold each of the query's terms (as the store tokenizes them)."""
        if self._counts is None:
            self._counts = self.store.term_doc_counts(list(self.query.terms))
        return self._counts

    def idf_sum(self) -> float:
        """The summed FTS5 idf of the query's terms: the calibrated text side's scale."""
        terms = self.query.terms
        if not terms:
            return 0.0
        total = self.total()
        counts = self.doc_counts()
        return sum(scoring.fts5_idf(counts.get(w, 0), total) for w in terms)

    def weights(self) -> dict[str, tuple[float, int, int]]:
        """Each term's weight on the calibrated keyword side, with bm25's N and the
        term's document count n it comes from (``scoring.word_weight``)."""
        total = self.total()
        counts = self.doc_counts()
        return {
            w: (
                scoring.word_weight(counts.get(w, 0), total, function_word=function_word(w)),
                total,
                counts.get(w, 0),
            )
            for w in self.query.terms
        }

    def presence(self, ids: Sequence[int]) -> dict[int, set[str]] | None:
        """chunk id → the query terms FTS5 matches in it (one term at a time, under the
        store's tokenizer); None when the store cannot score rows per word."""
        out: dict[int, set[str]] = {}
        if not ids:
            return out
        for word in self.query.terms:
            got = self.store.fts_ranks_of([word], ids, require_all=True)
            if got is None:
                return None
            for cid, value in got.items():
                if value < 0:
                    out.setdefault(cid, set()).add(word)
        return out

    def or_words(self) -> tuple[str, ...]:
        """The OR fallback's words (each one FTS5 phrase): the query's terms, without
        those found in at least half the rows once the index is big enough.

        FTS5's bm25 clamps the idf of a term found in at least half the rows to
        1e-6, so such a term adds nothing to any score, yet an OR over it matches
        (and ranks) nearly every chunk: at 100k chunks that is the difference
        between a few and a few hundred milliseconds. Those terms are dropped from
        ``PRUNE_MIN_ROWS`` rows up; if every term is that common, all are kept.
        """
        if self._or_words is None:
            words = self.query.terms
            total = self.total() if len(words) > 1 else 0
            if total >= PRUNE_MIN_ROWS:
                counts = self.doc_counts()
                kept = tuple(w for w in words if 2 * counts.get(w, 0) < total)
                if kept:
                    words = kept
            self._or_words = words
        return self._or_words

    def or_match(self) -> str | None:
        """The FTS5 expression of :meth:`or_words` joined by OR."""
        return match_expression(self.or_words(), "OR")

    def idf_floor_scale(self, ranked: list[tuple[int, float]]) -> float:
        """Rescue the bm25 ranks of a query whose every word is common.

        FTS5 clamps the idf of a word found in at least half the chunks to 1e-6,
        so when *every* query word is that common (``atlas`` in a ten-file
        workspace about Atlas) all ranks are about -1e-6, every text score about
        0, and an FTS-only search returns nothing above minScore. FTS5's order
        among the hits (term frequency and length) is still right; only the scale
        is lost. The ranks are then multiplied by ``idf / 1e-6`` with the
        always-positive ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` (averaged over
        the words), which puts them back on the scale of a term with that document
        frequency. Checked only when every rank is tiny, so ordinary queries cost
        nothing.
        """
        if not ranked or max(abs(value) for _, value in ranked) >= IDF_FLOOR_RANK:
            return 1.0
        total = self.total()
        present = [n for n in self.doc_counts().values() if n > 0]
        if not present or any(2 * n < total for n in present):
            return 1.0
        idf = sum(math.log(1 + (total - n + 0.5) / (n + 0.5)) for n in present) / len(present)
        return idf / FTS5_IDF_FLOOR


def _rank_rows(
    terms: QueryTerms,
    operator: str | None,
    missing: list[int],
    idf_scale: float,
    into: dict[int, float],
) -> None:
    """The text ranks of candidates the keyword list did not return, computed per row.

    The same numbers the long-window lookup found, for every candidate rather than
    only those within its first 1,000 rows: a chunk holding every word gets its AND
    rank, one holding some of the OR query's words its OR rank, the rest none.
    """
    if not missing or operator is None:
        return
    store = terms.store
    if operator == "AND":
        got = store.fts_ranks_of(terms.query.words, missing, require_all=True) or {}
        for cid, value in got.items():
            into[cid] = value * idf_scale
        missing = [i for i in missing if i not in got]
    or_words = terms.or_words()
    if missing and or_words:
        for cid, value in (store.fts_ranks_of(or_words, missing, require_all=False) or {}).items():
            into.setdefault(cid, value * idf_scale)
