"""The search pipeline, split in two so the ranking can be replayed.

``retrieve`` does the I/O (FTS5 candidates, vector candidates, chunk rows);
``rank`` is pure and turns a ``Retrieval`` plus ``SearchOptions`` into a
``SearchOutcome`` in which every candidate — returned or dropped — carries
every intermediate number. The CLI's ``--explain``, the TUI's breakdown panel
and the tests all read these objects; nothing recomputes scores for display.

Pipeline: query → FTS candidates + vector candidates → merge (fusion) →
temporal decay → sort → MMR → minScore (with keyword rescue) → top maxResults.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from engine.config.settings import (
    DecaySettings,
    Fusion,
    HybridSettings,
    MemorySearchSettings,
    MMRSettings,
    MMRSimilarity,
    Normalization,
    QuerySettings,
    SearchMode,
)
from engine.embeddings.base import EmbeddingProvider, ProviderError, QueryRest, StagedQueries
from engine.index.db import CorruptIndexError, DatabaseError
from engine.index.index_store import IndexStore
from engine.index.line_vectors import ChunkUnits, UnitHit, chunk_units, space_key, unit_bounds
from engine.index.store import ChunkRow
from engine.index.tokens import build_fts_query, query_tokens, similarity_tokens
from engine.search import explain, scoring

Mode = SearchMode  # one definition, in engine.config.settings
#: below this many chunks the OR fallback keeps every term (see ``_or_query``)
PRUNE_MIN_ROWS = 2000
#: length of the FTS ranking a hybrid retrieval reads to score vector candidates
COMPLETE_WINDOW = 1000


_QUERY = QuerySettings()
_HYBRID = HybridSettings()
_MMR = MMRSettings()
_DECAY = DecaySettings()


@dataclass(frozen=True)
class SearchOptions:
    """Every knob of the ranking.

    The defaults are the settings' own (``engine.config.settings``, the one
    place a search default is written), so ``SearchOptions()`` ranks exactly
    like an empty ``memorySearch`` block.
    """

    mode: Mode = "hybrid" if _HYBRID.enabled else "fts"
    max_results: int = _QUERY.max_results
    min_score: float = _QUERY.min_score
    vector_weight: float = _HYBRID.vector_weight
    text_weight: float = _HYBRID.text_weight
    candidate_multiplier: float = _HYBRID.candidate_multiplier
    fusion: Fusion = _HYBRID.fusion
    normalization: Normalization = _HYBRID.normalization
    rrf_k: int = _HYBRID.rrf_k
    mmr_enabled: bool = _MMR.enabled
    mmr_lambda: float = _MMR.lambda_
    mmr_similarity: MMRSimilarity = _MMR.similarity
    decay_enabled: bool = _DECAY.enabled
    half_life_days: float = _DECAY.half_life_days
    sources: tuple[str, ...] = ("memory",)
    #: the calibrated fusion's feedback weight β (``feed_back``); 0 turns it off
    feedback_weight: float = scoring.FEEDBACK_WEIGHT

    @classmethod
    def from_settings(cls, ms: MemorySearchSettings) -> SearchOptions:
        q = ms.query
        h = q.hybrid
        return cls(
            mode="hybrid" if h.enabled else "fts",
            max_results=q.max_results,
            min_score=q.min_score,
            vector_weight=h.vector_weight,
            text_weight=h.text_weight,
            candidate_multiplier=h.candidate_multiplier,
            fusion=h.fusion,
            normalization=h.normalization,
            rrf_k=h.rrf_k,
            mmr_enabled=h.mmr.enabled,
            mmr_lambda=h.mmr.lambda_,
            mmr_similarity=h.mmr.similarity,
            decay_enabled=h.temporal_decay.enabled,
            half_life_days=h.temporal_decay.half_life_days,
            sources=tuple(ms.sources) if ms.session_memory else ("memory",),
        )

    def with_(self, **changes: object) -> SearchOptions:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def candidates(self) -> int:
        return scoring.candidate_count(self.max_results, self.candidate_multiplier)


@dataclass
class Retrieval:
    """The raw material of a ranking: both candidate lists and the chunk rows."""

    query: str
    fts_query: str | None
    fts_operator: str | None  # "AND", "OR" (fallback) or None
    fts_hits: list[tuple[int, float]]  # (chunk id, bm25 rank), best first
    vector_hits: list[tuple[int, float]]  # (chunk id, cosine), best first
    rows: dict[int, ChunkRow]
    #: the candidates' stored vectors, when a ranking may need them: MMR by
    #: cosine, and the calibrated fusion's feedback (every hybrid retrieval)
    vectors: dict[int, np.ndarray]
    file_mtimes: dict[str, float]
    fts_available: bool
    vector_available: bool
    vector_error: str | None = None
    embed_ms: float = 0.0
    fts_ms: float = 0.0
    vector_ms: float = 0.0
    #: hybrid only: every candidate scored on both sides, whichever list found it —
    #: bm25 rank of the (OR) text query (absent: no query word in the chunk) and
    #: cosine with the query. The "geometric" fusion uses them; the others keep
    #: OpenClaw's rule that a side which did not list a chunk counts 0.
    text_ranks: dict[int, float] = field(default_factory=dict)
    cosines: dict[int, float] = field(default_factory=dict)
    #: hybrid only: each candidate's unit (line, or paragraph of wrapped prose) most
    #: similar to the query, as (first file line, cosine, last file line), from the
    #: stored line vectors (``engine.index.line_vectors``), and
    #: the summed FTS5 idf of the query's words; the "calibrated" fusion uses them
    line_hits: dict[int, UnitHit] = field(default_factory=dict)
    query_idf_sum: float = 0.0
    #: hybrid only: what the calibrated fusion's feedback (``feed_back``) scores the
    #: vector side again with, beside ``vectors`` — the query vector and every
    #: candidate's unit vectors
    query_vector: np.ndarray | None = None
    units: dict[int, ChunkUnits] = field(default_factory=dict)
    #: factor applied to FTS5's bm25 ranks when every query word is in at least
    #: half the chunks (see ``idf_floor_scale``); 1.0 means the ranks are FTS5's own
    bm25_idf_scale: float = 1.0


@dataclass
class Candidate:
    """One chunk's way through the pipeline. ``None`` means 'not applicable'."""

    chunk_id: int
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    lists: tuple[str, ...]  # which candidate lists it came from: "fts", "vector"
    fusion: str = "weighted"  # how text/vector components became fused_score
    fts_position: int | None = None  # 1-based rank in the FTS list
    vector_position: int | None = None
    bm25_rank: float | None = None
    text_score: float | None = None  # bm25 mapped to 0..1
    vector_score: float | None = None  # cosine similarity
    text_component: float | None = None  # the text side as fused (normalised/RRF/raw)
    vector_component: float | None = None
    #: the number each component was made from (geometric: −bm25 and the cosine
    #: floored at 0; normalized: the side's score) and the references it was
    #: compared with (geometric: (best,); min-max: (lowest, highest); z-score:
    #: (mean, std)); ``engine.search.explain`` prints them as the arithmetic
    text_input: float | None = None
    vector_input: float | None = None
    text_ref: tuple[float, ...] | None = None
    vector_ref: tuple[float, ...] | None = None
    normalization: str = "minmax"
    #: calibrated fusion: the file lines (first, last) of the unit whose vector is
    #: closest to the query — one line, or a paragraph of wrapped prose
    best_line: int | None = None
    best_line_end: int | None = None
    #: calibrated fusion: that unit's cosine; the side's input is the larger of it
    #: and the chunk's own cosine (``vector_score``)
    line_cosine: float | None = None
    #: calibrated fusion, when the feedback ran (``feed_back``): the chunk the query
    #: moved toward (path, first line, last line), β, cos(q, f), ‖q + β·f‖, and
    #: cos(f, ·) of the best unit and of the chunk; ``line_cosine``/``vector_score``
    #: stay cos(q, ·) and ``vector_input`` is the moved query's cosine
    feedback_from: tuple[str, int, int] | None = None
    feedback_weight: float | None = None
    feedback_query_cosine: float | None = None
    feedback_norm: float | None = None
    feedback_line_cosine: float | None = None
    feedback_chunk_cosine: float | None = None
    vector_weight: float = 0.0
    text_weight: float = 0.0
    fused_score: float = 0.0  # weighted score before decay
    age_days: float | None = None
    decay_multiplier: float = 1.0
    score: float = 0.0  # after decay; the number compared with minScore
    sorted_position: int = 0  # 1-based, after decay sort, before MMR
    mmr_position: int | None = None  # 1-based after MMR (None when MMR off)
    mmr_max_similarity: float | None = None
    mmr_relevance: float | None = None
    mmr_score: float | None = None
    final_rank: int | None = None  # 1-based among returned results
    dropped: str | None = None  # why it is not returned
    rescued: bool = False  # kept by the keyword rescue below minScore
    #: what the score was made of as the fusion used it: each side's factor and
    #: the score bar's segments (they sum to ``score``); set by the ranking
    #: (``scoring.score_parts``), read by the TUI's table, bar and breakdown and by
    #: ``--explain``. None only for candidates of another ranking (OpenClaw profile).
    parts: scoring.ScoreParts | None = None

    def evolve(self, **changes: object) -> Candidate:
        """A copy with ``changes``: a ranking stage returns new candidates, never edits its input.

        ``dataclasses.replace`` would re-run ``__init__`` and cost ~10x more; a
        ranking copies every candidate once per stage.
        """
        new = object.__new__(Candidate)
        new.__dict__ = self.__dict__.copy()
        if changes:
            if not _CANDIDATE_FIELDS.issuperset(changes):
                unknown = sorted(changes.keys() - _CANDIDATE_FIELDS)
                raise TypeError(f"Candidate has no field {', '.join(unknown)}")
            new.__dict__.update(changes)
        return new

    @property
    def mmr_shift(self) -> int:
        """Positions gained (+) or lost (−) by MMR."""
        return 0 if self.mmr_position is None else self.sorted_position - self.mmr_position

    def formula(self) -> str:
        """The arithmetic of this candidate's score, with its real numbers."""
        return "; ".join(str(line) for line in explain.score_lines(self))

    def to_dict(self, options: SearchOptions | None = None) -> dict[str, object]:
        """The candidate as JSON-able data; with the ``options`` it was ranked under,
        also ``arithmetic``: every line of its breakdown (``explain.all_lines``)."""
        d = asdict(self)
        d.pop("text")
        d["mmr_shift"] = self.mmr_shift
        d["formula"] = self.formula()
        if options is not None:
            d["arithmetic"] = [str(line) for line in explain.all_lines(self, options)]
        return d


_CANDIDATE_FIELDS = frozenset(f.name for f in fields(Candidate))


@dataclass
class SearchOutcome:
    """A ranked search with its whole explanation."""

    query: str
    options: SearchOptions
    mode: Mode
    fusion: str
    results: list[Candidate]
    dropped: list[Candidate]
    retrieval: Retrieval
    rescue_used: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def candidates(self) -> list[Candidate]:
        return self.results + self.dropped


# -- retrieval -----------------------------------------------------------------
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
    """
    limit = options.candidates
    fts_hits: list[tuple[int, float]] = []
    fts_q = build_fts_query(query, "AND")
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
    pending: Future[tuple[np.ndarray, float]] | None = (
        _embed_in_background(provider, query) if wants_vector else None
    )
    if run_fts and fts_q:
        # The keyword side's postings rank the AND (and OR) query's top-k in numpy
        # (``engine.index.keyword_index``); FTS5's exhaustive ranking when they cannot.
        ranked = _keyword_ranking(store, query_tokens(query), fts_q, window, limit, options, True)
        operator = "AND"
        if not ranked:
            or_words = _or_words(store, query)
            or_q = build_fts_query(" ".join(or_words), "OR")
            if or_q and or_q != fts_q:
                ranked = _keyword_ranking(store, or_words, or_q, window, limit, options, False)
                fts_q, operator = or_q, "OR"
        idf_scale = idf_floor_scale(store, query, ranked)
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
    idf_sum = 0.0
    if complete and store.fts_available:
        words = list(dict.fromkeys(query_tokens(query)))
        if words:
            total = store.fts_row_count()
            counts = store.term_doc_counts(words)
            idf_sum = sum(scoring.fts5_idf(counts.get(w, 0), total) for w in words)
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
    if complete and fts_q and qvec is not None and store.fts_available:
        # Both sides for every candidate. Text: the bm25 rank from the window (a
        # vector candidate that the AND query missed gets its OR rank, which for a
        # chunk holding every word equals the AND rank); beyond the window a chunk
        # counts as not matching. Vector: the cosine with its stored embedding.
        window_ranks = dict(ranked)
        if by_rows:
            _rank_rows(
                store,
                query,
                operator,
                [i for i in ids if i not in window_ranks],
                idf_scale,
                window_ranks,
            )
        elif operator == "AND" and any(i not in window_ranks for i in ids):
            or_q = _or_query(store, query)
            if or_q and or_q != fts_q:
                for cid, value in store.fts_search(or_q, window, options.sources):
                    window_ranks.setdefault(cid, value * idf_scale)
        text_ranks = {i: window_ranks[i] for i in ids if i in window_ranks}
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
        query_vector=qvec if complete else None,
        units=units,
    )


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
    words: list[str],
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


def _embed_in_background(
    provider: EmbeddingProvider | None, query: str
) -> Future[tuple[np.ndarray, float]]:
    """The query embedding beside the keyword side (llama.cpp and HTTP both release
    the GIL).

    A provider that stages its queries (:class:`StagedQueries`, the local model) is
    prepared here, so the model starts without waiting for the GIL while this thread
    ranks the keyword side, and its rest runs on the one long-lived
    :class:`_QueryLane` thread: starting a thread per search made this thread wait
    for the new one to get the GIL (~0.7 ms a search in ``memdeck mcp``, sampled).
    Any other provider gets a daemon thread of its own: a search that stopped
    waiting at its budget must not keep the process alive at exit (a pool's
    workers are joined then), and a hung provider must not hold a thread that later
    searches queue behind.
    """
    future: Future[tuple[np.ndarray, float]] = Future()
    t0 = time.perf_counter()
    if isinstance(provider, StagedQueries):
        try:
            rest = provider.stage_query(query)
        except Exception as exc:  # handed to the waiting search, as from the thread
            future.set_exception(exc)
            return future
        _QueryLane.shared().submit(future, rest, t0)
        return future

    def run() -> None:
        _fulfil(future, lambda: provider.embed_query(query), t0)  # type: ignore[union-attr]

    threading.Thread(target=run, name="memdeck-query-embed", daemon=True).start()
    return future


class _QueryLane:
    """One daemon thread that runs staged query embeddings in turn (they take the
    provider's lock one at a time anyway). A search that gave up at its budget has
    cancelled its future, and its rest is skipped if it has not started."""

    _shared: _QueryLane | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._jobs: queue.SimpleQueue[
            tuple[Future[tuple[np.ndarray, float]], QueryRest, float]
        ] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="memdeck-query-embed", daemon=True).start()

    @classmethod
    def shared(cls) -> _QueryLane:
        """The process's lane (a new one in a forked child: threads do not fork)."""
        with cls._guard:
            lane = cls._shared
            if lane is None or lane.pid != os.getpid():
                lane = cls._shared = cls()
            return lane

    def submit(self, future: Future[tuple[np.ndarray, float]], rest: QueryRest, t0: float) -> None:
        self._jobs.put((future, rest, t0))

    def _run(self) -> None:
        while True:
            _fulfil(*self._jobs.get())


def _fulfil(future: Future[tuple[np.ndarray, float]], embed: QueryRest, t0: float) -> None:
    """Run ``embed`` for ``future`` unless its search gave up (cancelled) first."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(_checked_vector(embed(), t0))
    except BaseException as exc:  # handed to the waiting search
        future.set_exception(exc)


def _checked_vector(vec: np.ndarray, t0: float) -> tuple[np.ndarray, float]:
    """The query vector and the ms since ``t0`` (when its embedding began)."""
    if not np.any(vec):  # NaN/inf become zeros in normalize_rows: no direction to compare
        raise ProviderError("the provider returned an empty (NaN or zero) query vector")
    return vec, (time.perf_counter() - t0) * 1000


def idf_floor_scale(store: IndexStore, query: str, ranked: list[tuple[int, float]]) -> float:
    """Rescue the bm25 ranks of a query whose every word is common.

    FTS5 clamps the idf of a word found in at least half the chunks to 1e-6, so
    when *every* query word is that common (``atlas`` in a ten-file workspace
    about Atlas) all ranks are about -1e-6, every text score about 0, and an
    FTS-only search returns nothing above minScore. FTS5's order among the hits
    (term frequency and length) is still right; only the scale is lost. The
    ranks are then multiplied by ``idf / 1e-6`` with the always-positive
    ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` (averaged over the words),
    which puts them back on the scale of a term with that document frequency.
    Checked only when every rank is tiny, so ordinary queries cost nothing.
    """
    if not ranked or max(abs(value) for _, value in ranked) >= IDF_FLOOR_RANK:
        return 1.0
    total = store.fts_row_count()
    counts = [n for n in store.term_doc_counts(list(dict.fromkeys(query_tokens(query)))).values()]
    present = [n for n in counts if n > 0]
    if not present or any(2 * n < total for n in present):
        return 1.0
    idf = sum(math.log(1 + (total - n + 0.5) / (n + 0.5)) for n in present) / len(present)
    return idf / FTS5_IDF_FLOOR


def _rank_rows(
    store: IndexStore,
    query: str,
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
    if operator == "AND":
        got = store.fts_ranks_of(query_tokens(query), missing, require_all=True) or {}
        for cid, value in got.items():
            into[cid] = value * idf_scale
        missing = [i for i in missing if i not in got]
    or_words = _or_words(store, query)
    if missing and or_words:
        for cid, value in (store.fts_ranks_of(or_words, missing, require_all=False) or {}).items():
            into.setdefault(cid, value * idf_scale)


def _or_words(store: IndexStore, query: str) -> list[str]:
    """The words of ``_or_query`` (each one FTS5 phrase)."""
    words = list(dict.fromkeys(query_tokens(query)))
    total = store.fts_row_count() if len(words) > 1 else 0
    if total >= PRUNE_MIN_ROWS:
        counts = store.term_doc_counts(words)
        kept = [w for w in words if 2 * counts.get(w, 0) < total]
        if kept:
            words = kept
    return query_tokens(" ".join(words))


def _or_query(store: IndexStore, query: str) -> str | None:
    """The OR fallback query, without terms that cannot move the ranking.

    FTS5's bm25 clamps the idf of a term found in at least half the rows to
    1e-6, so such a term adds nothing to any score, yet an OR over it matches
    (and ranks) nearly every chunk: at 100k chunks that is the difference between
    a few and a few hundred milliseconds. Those terms are dropped once the index
    is big enough for it to matter; if every term is that common, all are kept.
    """
    return build_fts_query(" ".join(_or_words(store, query)), "OR")


# -- ranking (pure) ------------------------------------------------------------
def effective_mode(retrieval: Retrieval, requested: Mode) -> Mode:
    """Degrade gracefully: no embeddings (or no query vector: the provider failed or
    ran out of the search budget) → FTS-only, no FTS5 → vector-only."""
    if requested == "hybrid":
        if not retrieval.vector_available or retrieval.vector_error is not None:
            return "fts"
        if not retrieval.fts_available:
            return "vector"
    if requested == "vector" and (
        not retrieval.vector_available or retrieval.vector_error is not None
    ):
        return "fts"
    return requested


@dataclass(frozen=True)
class RankPlan:
    """What one ranking does, decided once from the retrieval and the options.

    ``mode`` is the effective mode (degraded when a side is unavailable); the
    weights are normalised for hybrid and 0/1 for a single side; ``fusion`` is
    the requested fusion for hybrid and ``"weighted"`` otherwise.
    """

    mode: Mode
    fusion: Fusion
    vector_weight: float
    text_weight: float


@dataclass(frozen=True)
class RankCut:
    """The last stage's output: what is returned, what is not, and whether the rescue ran."""

    results: list[Candidate]
    dropped: list[Candidate]
    rescue_used: bool


def plan_ranking(retrieval: Retrieval, options: SearchOptions) -> RankPlan:
    """The effective mode, fusion and weights of a ranking."""
    mode = effective_mode(retrieval, options.mode)
    if mode == "hybrid" and options.fusion == "calibrated" and retrieval.vector_error:
        # No query vector (the provider failed): an absolute vector side of 0 would
        # cap every score at the text weight, so rank by the keyword side alone, as
        # a search without embeddings does (the reason stays in vector_error).
        mode = "fts"
    if mode == "hybrid":
        vw, tw = scoring.normalize_weights(options.vector_weight, options.text_weight)
    elif mode == "fts":
        vw, tw = 0.0, 1.0
    else:
        vw, tw = 1.0, 0.0
    return RankPlan(mode, options.fusion if mode == "hybrid" else "weighted", vw, tw)


def rank(
    retrieval: Retrieval, options: SearchOptions, today: dt.date | None = None
) -> SearchOutcome:
    """Rank a retrieval under ``options``; every number lands on a ``Candidate``.

    The stages, each a pure function with its own tests (tests/engine/test_rank_stages.py):
    candidates → fuse → feedback (calibrated) → decay → sort → MMR → cut.
    """
    t0 = time.perf_counter()
    plan = plan_ranking(retrieval, options)
    cands = gather_candidates(retrieval, plan)
    cands = fuse(cands, plan, options)
    cands = feed_back(cands, retrieval, plan, options)
    cands = apply_decay(cands, options, retrieval.file_mtimes, today or dt.date.today())
    ordered = sort_by_score(cands)
    ordered = mmr_reorder(ordered, options, retrieval.vectors)
    cut = cut_results(ordered, options, plan.text_weight)
    return SearchOutcome(
        query=retrieval.query,
        options=options,
        mode=plan.mode,
        fusion=plan.fusion,
        results=cut.results,
        dropped=cut.dropped,
        retrieval=retrieval,
        rescue_used=cut.rescue_used,
        timings_ms={
            "embed": retrieval.embed_ms,
            "fts": retrieval.fts_ms,
            "vector": retrieval.vector_ms,
            "rank": (time.perf_counter() - t0) * 1000,
        },
    )


def gather_candidates(retrieval: Retrieval, plan: RankPlan) -> list[Candidate]:
    """Stage 1: one ``Candidate`` per chunk of the lists the mode uses, FTS list first.

    A chunk whose row vanished (deleted between retrieval and ranking) is
    skipped. Under the geometric fusion every candidate also gets the side
    that did not list it, from the retrieval's ``text_ranks`` and ``cosines``.
    """
    fts = retrieval.fts_hits if plan.mode in ("hybrid", "fts") else []
    vec = retrieval.vector_hits if plan.mode in ("hybrid", "vector") else []
    cands: dict[int, Candidate] = {}

    def cand(cid: int) -> Candidate | None:
        if cid in cands:
            return cands[cid]
        row = retrieval.rows.get(cid)
        if row is None:
            return None
        c = Candidate(cid, row.path, row.source, row.start_line, row.end_line, row.text, ())
        c.vector_weight, c.text_weight = plan.vector_weight, plan.text_weight
        c.fusion = plan.fusion
        cands[cid] = c
        return c

    for pos, (cid, rank_value) in enumerate(fts, start=1):
        c = cand(cid)
        if c is None:
            continue
        c.lists += ("fts",)
        c.fts_position = pos
        c.bm25_rank = _rounded_rank(rank_value)
        c.text_score = scoring.quantize(scoring.bm25_rank_to_score(c.bm25_rank))
    for pos, (cid, sim) in enumerate(vec, start=1):
        c = cand(cid)
        if c is None:
            continue
        c.lists += ("vector",)
        c.vector_position = pos
        c.vector_score = scoring.quantize(float(sim))
    if plan.fusion in ("geometric", "calibrated"):
        idf_sum = scoring.quantize(retrieval.query_idf_sum)
        for c in cands.values():
            c.fusion = plan.fusion
            if c.bm25_rank is None and c.chunk_id in retrieval.text_ranks:
                c.bm25_rank = _rounded_rank(retrieval.text_ranks[c.chunk_id])
                c.text_score = scoring.quantize(scoring.bm25_rank_to_score(c.bm25_rank))
            if c.vector_score is None and c.chunk_id in retrieval.cosines:
                c.vector_score = scoring.quantize(retrieval.cosines[c.chunk_id])
            if plan.fusion == "calibrated":
                c.text_input = -c.bm25_rank if c.bm25_rank is not None and c.bm25_rank < 0 else 0.0
                c.text_ref = (scoring.CALIBRATED_TEXT_SCALE, idf_sum) if idf_sum > 0 else None
                c.vector_ref = (scoring.CALIBRATED_COSINE_ZERO, scoring.CALIBRATED_COSINE_ONE)
                line = retrieval.line_hits.get(c.chunk_id)
                if line is not None:
                    c.best_line, c.best_line_end = line.first_line, line.last_line
                    c.line_cosine = scoring.quantize(line.cosine)
                    c.vector_input = (
                        c.line_cosine
                        if c.vector_score is None
                        else max(c.line_cosine, c.vector_score)
                    )
                else:
                    c.vector_input = c.vector_score
    return list(cands.values())


def fuse(cands: list[Candidate], plan: RankPlan, options: SearchOptions) -> list[Candidate]:
    """Stage 2: each side's component, then ``fused_score`` (= ``score`` until decay)."""
    out = [c.evolve() for c in cands]
    _fuse_own(out, plan, options)
    return out


def _fuse_own(cands: list[Candidate], plan: RankPlan, options: SearchOptions) -> None:
    """:func:`fuse` on candidates that are the caller's own copies."""
    _set_components(cands, plan.fusion, options)
    combine = scoring.weighted_geometric if plan.fusion == "geometric" else scoring.weighted_sum
    for c in cands:
        c.normalization = options.normalization
        c.fused_score = scoring.quantize(
            combine(c.vector_component, c.text_component, plan.vector_weight, plan.text_weight)
        )
        c.score = c.fused_score
        c.parts = _parts(c)


def feed_back(
    cands: list[Candidate], retrieval: Retrieval, plan: RankPlan, options: SearchOptions
) -> list[Candidate]:
    """Stage 2b, calibrated fusion only: pseudo-relevance feedback on the vector side.

    When the best candidate of the first pass scores at least
    ``scoring.FEEDBACK_GATE``, the query vector q moves toward that chunk's
    vector f — ``q + β·f``, Rocchio with one feedback chunk — and every
    candidate's vector side is scored again with it: its best unit is the one
    the moved query is closest to, and its input the larger of that unit's and
    the chunk's moved cosine, ``max(cos(q, x) + β × cos(f, x)) ÷ ‖q + β·f‖``
    (``scoring.feedback_cosine``), then fused again. Chat states a fact in one
    turn in its own words; the chunk both sides rank first tells the vector side
    what the conversation calls it. Below the gate nothing changes: a query
    about nothing in memory is not pulled toward its nearest junk.
    """
    beta = options.feedback_weight
    q = retrieval.query_vector
    if plan.fusion != "calibrated" or not beta > 0 or q is None or not cands:
        return cands
    top = min(cands, key=_order_key)
    f = retrieval.vectors.get(top.chunk_id)
    if top.score < scoring.FEEDBACK_GATE or f is None or f.shape != q.shape:
        return cands
    quantize = scoring.quantize
    qf = quantize(float(f @ q))
    norm = quantize(scoring.feedback_norm(qf, beta))
    origin = (top.path, top.start_line, top.end_line)
    units = [retrieval.units.get(c.chunk_id) for c in cands]
    best = iter(_moved_best_units([u.matrix for u in units if u is not None], q, f, beta))
    scored: list[bool] = []  # the chunk's own vector takes part too
    chunk_vectors: list[np.ndarray] = []
    for c in cands:
        v = retrieval.vectors.get(c.chunk_id)
        scored.append(v is not None and v.shape == f.shape and c.vector_score is not None)
        if v is not None and scored[-1]:
            chunk_vectors.append(v)
    chunk_f = iter((np.stack(chunk_vectors) @ f).tolist() if chunk_vectors else [])
    out = []
    for c, u, ok in zip(cands, units, scored, strict=True):
        moved = c.evolve(
            feedback_from=origin,
            feedback_weight=beta,
            feedback_query_cosine=qf,
            feedback_norm=norm,
        )
        pairs: list[tuple[float, float]] = []  # (cos(q, x), cos(f, x)): unit, chunk
        if u is not None:
            i, qu, fu = next(best)
            moved.best_line, moved.best_line_end = u.first_lines[i], u.last_lines[i]
            moved.line_cosine, moved.feedback_line_cosine = quantize(qu), quantize(fu)
            pairs.append((moved.line_cosine, moved.feedback_line_cosine))
        if ok and c.vector_score is not None:
            moved.feedback_chunk_cosine = quantize(next(chunk_f))
            pairs.append((c.vector_score, moved.feedback_chunk_cosine))
        if pairs:
            moved.vector_input = quantize(scoring.feedback_cosine(pairs, norm, beta))
        out.append(moved)
    _fuse_own(out, plan, options)  # ``out`` holds this stage's own copies
    return out


def _moved_best_units(
    mats: list[np.ndarray], q: np.ndarray, f: np.ndarray, beta: float
) -> list[tuple[int, float, float]]:
    """Per unit matrix: (index, cos(q, u), cos(f, u)) of its unit u maximising
    ``cos(q, u) + β·cos(f, u)`` (the first of equals) — every chunk's units in
    one product with (q, f) instead of two small ones per chunk."""
    if not mats:
        return []
    lengths = [m.shape[0] for m in mats]
    starts = np.cumsum([0, *lengths[:-1]])
    sims = np.concatenate(mats) @ np.stack([q, f], axis=1)
    moved = np.nan_to_num(sims[:, 0] + beta * sims[:, 1], nan=-np.inf)
    tops = np.maximum.reduceat(moved, starts)
    at_top = np.flatnonzero(moved == np.repeat(tops, lengths))
    rows = at_top[np.searchsorted(at_top, starts)]  # each chunk's first best row
    return list(
        zip((rows - starts).tolist(), sims[rows, 0].tolist(), sims[rows, 1].tolist(), strict=True)
    )


def apply_decay(
    cands: list[Candidate],
    options: SearchOptions,
    file_mtimes: Mapping[str, float],
    today: dt.date,
) -> list[Candidate]:
    """Stage 3: temporal decay of ``score`` (dated names, else mtime; evergreen files never)."""
    if not options.decay_enabled:
        return list(cands)
    out = []
    for c in cands:
        age = scoring.age_days(c.path, file_mtimes.get(c.path), today)
        if age is None:
            out.append(c)
            continue
        mult = scoring.quantize(scoring.decay_multiplier(age, options.half_life_days))
        decayed = c.evolve(
            age_days=age, decay_multiplier=mult, score=scoring.quantize(c.fused_score * mult)
        )
        decayed.parts = _parts(decayed)
        out.append(decayed)
    return out


def sort_by_score(cands: list[Candidate]) -> list[Candidate]:
    """Stage 4: best score first; ties by FTS position, vector position, chunk id."""
    ordered = sorted(cands, key=_order_key)
    return [c.evolve(sorted_position=i) for i, c in enumerate(ordered, start=1)]


def _order_key(c: Candidate) -> tuple[float, int, int, int]:
    """Best score first; ties by FTS position, vector position, chunk id."""
    return (-c.score, c.fts_position or 10**9, c.vector_position or 10**9, c.chunk_id)


def mmr_reorder(
    ordered: list[Candidate], options: SearchOptions, vectors: Mapping[int, np.ndarray]
) -> list[Candidate]:
    """Stage 5: maximal marginal relevance, when enabled, with each pick's numbers kept."""
    if not options.mmr_enabled or len(ordered) <= 1:
        return list(ordered)
    items = [
        scoring.MMRItem(
            key=str(c.chunk_id),
            score=c.score,
            tokens=similarity_tokens(c.text),
            vector=vectors.get(c.chunk_id),
        )
        for c in ordered
    ]
    picks = scoring.mmr_rerank(items, options.mmr_lambda, options.mmr_similarity)
    by_key = {str(c.chunk_id): c for c in ordered}
    return [
        by_key[p.key].evolve(
            mmr_position=p.position + 1,
            mmr_max_similarity=p.max_similarity,
            mmr_relevance=p.relevance,
            mmr_score=p.mmr_score,
        )
        for p in picks
    ]


def cut_results(ordered: list[Candidate], options: SearchOptions, text_weight: float) -> RankCut:
    """Stage 6: minScore (with the keyword rescue), then the top maxResults.

    When minScore leaves nothing, keyword hits scoring at least
    ``min(minScore, text_weight)`` are kept ("rescued"): a keyword-only hit
    can never score above the text weight, so a strict minScore would hide
    exact matches. Every candidate not returned says why in ``dropped``.
    """
    ordered = [c.evolve() for c in ordered]
    kept = [c for c in ordered if c.score >= options.min_score]
    for c in ordered:
        if c.score < options.min_score:
            c.dropped = (
                f"score {explain.fmt(c.score)} < minScore {explain.threshold(options.min_score)}"
            )
    rescue_used = False
    if not kept and any(c.text_score is not None for c in ordered):
        floor = min(options.min_score, text_weight)
        kept = [c for c in ordered if c.text_score is not None and c.score >= floor - 1e-9]
        if kept:
            rescue_used = True
            for c in kept:
                c.dropped = None
                c.rescued = True
    results = kept[: options.max_results]
    for c in kept[options.max_results :]:
        c.dropped = f"cut: beyond maxResults {options.max_results}"
    for i, c in enumerate(results, start=1):
        c.final_rank = i
    result_ids = {c.chunk_id for c in results}
    dropped = [c for c in ordered if c.chunk_id not in result_ids]
    for c in dropped:
        if c.dropped is None:
            c.dropped = "not kept"
    return RankCut(results, dropped, rescue_used)


def _set_components(cands: list[Candidate], fusion: str, options: SearchOptions) -> None:
    """Set each candidate's text/vector components (``cands`` are the stage's own
    copies), rounded (``scoring.quantize``), with the inputs and references the
    breakdown prints them from."""
    q = scoring.quantize
    if fusion == "rrf":
        # Weighted RRF, scaled so rank 1 on both lists is 1.0 (keeps minScore meaningful).
        top = scoring.rrf_score(1, options.rrf_k)
        for c in cands:
            c.text_component = (
                q(scoring.rrf_score(c.fts_position, options.rrf_k) / top)
                if c.fts_position
                else None
            )
            c.vector_component = (
                q(scoring.rrf_score(c.vector_position, options.rrf_k) / top)
                if c.vector_position
                else None
            )
        return
    if fusion == "calibrated":
        # Absolute sides (see scoring.calibrated_text/calibrated_vector): the best
        # cosine of the chunk and its units, and the share of the query's idf the
        # chunk's bm25 reaches.
        for c in cands:
            c.vector_component = (
                None
                if c.vector_input is None
                else q(scoring.calibrated_vector(c.vector_input, *(c.vector_ref or (0.0, 1.0))))
            )
            scale = c.text_ref
            c.text_component = (
                0.0 if scale is None else q(scoring.calibrated_text(c.text_input or 0.0, scale[1]))
            )
        return
    if fusion == "geometric":
        # Each side divided by its best candidate: the ratio to the best is kept,
        # so no side's raw scale (bm25 ~5–30, cosine ~0.2–0.6) can dominate. A side
        # with no signal at all (no candidate matched a query word) stays None:
        # neutral in the product rather than zeroing everything.
        for c in cands:
            c.text_input = -c.bm25_rank if c.bm25_rank is not None and c.bm25_rank < 0 else 0.0
            c.vector_input = max(c.vector_score or 0.0, 0.0)
        for inp, comp, ref in (
            ("text_input", "text_component", "text_ref"),
            ("vector_input", "vector_component", "vector_ref"),
        ):
            best = max((getattr(c, inp) for c in cands), default=0.0)
            for c in cands:
                setattr(c, comp, q(getattr(c, inp) / best) if best > 0 else None)
                setattr(c, ref, (best,) if best > 0 else None)
        return
    if fusion == "normalized":
        zscore = options.normalization == "zscore"
        for attr, inp, comp, ref in (
            ("text_score", "text_input", "text_component", "text_ref"),
            ("vector_score", "vector_input", "vector_component", "vector_ref"),
        ):
            have = [c for c in cands if getattr(c, attr) is not None]
            values = [getattr(c, attr) for c in have]
            params = scoring.zscore_params(values) if zscore else scoring.minmax_params(values)
            for c in have:
                x = getattr(c, attr)
                setattr(c, inp, x)
                setattr(c, ref, params)
                if params is None:
                    value = 1.0
                elif zscore:
                    value = scoring.normal_cdf((x - params[0]) / params[1])
                else:
                    value = (x - params[0]) / (params[1] - params[0])
                setattr(c, comp, q(value))
        return
    for c in cands:
        c.text_component = c.text_score
        c.vector_component = c.vector_score


def _rounded_rank(rank: float) -> float:
    """A bm25 rank rounded to the printed decimals, never to 0 from below.

    A match (negative rank) weaker than the last printed decimal keeps the
    smallest printable rank, −0.0001: rounding it to 0 would flip it into
    the ``1/(1+r)`` branch and score it 1.0.
    """
    if not math.isfinite(rank):
        return rank
    value = scoring.quantize(rank)
    if rank < 0 and value >= 0:
        return -(10.0**-scoring.DIGITS)
    return value


def _parts(c: Candidate) -> scoring.ScoreParts:
    """``c``'s factors and score-bar segments (``scoring.score_parts``)."""
    return scoring.score_parts(
        c.fusion,
        c.vector_component,
        c.text_component,
        c.vector_weight,
        c.text_weight,
        c.score,
        c.decay_multiplier,
    )
