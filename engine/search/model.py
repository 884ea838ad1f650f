"""The search's data: the options a ranking runs under, what retrieval hands it,
and every number each candidate collects on its way through the ranking.

``engine.search.retrieve`` fills a :class:`Retrieval`; ``engine.search.rank``
turns it into a :class:`SearchOutcome` whose :class:`Candidate` objects carry
every intermediate number; ``engine.search.explain`` prints them. These types
compute nothing beyond their own bookkeeping, and print nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

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
from engine.index.line_vectors import ChunkUnits, UnitHit
from engine.index.store import ChunkRow
from engine.search import scoring

__all__ = ["Candidate", "Mode", "QueryWord", "Retrieval", "SearchOptions", "SearchOutcome"]

Mode = SearchMode  # one definition, in engine.config.settings


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
    #: the calibrated fusion's name weight g (``scoring.name_bonus``); 0 turns it off
    name_weight: float = scoring.NAME_WEIGHT
    #: the calibrated fusion's time weight τ (``engine.search.intent``) for a query
    #: that asks when; 0 turns it off
    time_weight: float = scoring.TIME_WEIGHT

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
    #: hybrid only, the calibrated fusion's per-word keyword side: each query term's
    #: weight (``scoring.word_weight``: its smoothed idf, from bm25's N and the term's
    #: document count n, as (weight, N, n)), and per candidate how often it holds each
    #: term (its term frequency, ``engine.search.words.token_counts``; at least 1 where
    #: FTS5 matches the term, which a stemming tokenizer may do for another form); a
    #: term the chunk lacks is absent
    word_weights: dict[str, tuple[float, int, int]] = field(default_factory=dict)
    word_counts: dict[int, dict[str, int]] = field(default_factory=dict)
    #: hybrid only: each candidate's length in words (``token_counts``), bm25's dl
    chunk_lengths: dict[int, int] = field(default_factory=dict)


class QueryWord(NamedTuple):
    """One query term on a candidate's calibrated keyword side."""

    term: str
    #: ``scoring.word_weight(docs, N)``
    weight: float
    #: chunks holding the term (bm25's n)
    docs: int
    #: how often this chunk holds it, None: not at all
    tf: int | None
    #: ``scoring.tf_strength(tf, the chunk's length)``, None: not in the chunk
    strength: float | None


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
    #: calibrated fusion's feedback, a query that asks when: what the best unit's cosine
    #: gained for naming a time (τ, ``SearchOptions.time_weight``; 0: nothing) and the
    #: words that name it. The moved cosine takes ``line_cosine + time_bonus``
    time_bonus: float = 0.0
    time_words: str | None = None
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
    #: calibrated fusion, the keyword side word by word (``scoring.calibrated_words_text``):
    #: each query term's :class:`QueryWord`, the weights' sum and bm25's N; None: the
    #: retrieval had no per-word numbers (the chunk's bm25 ÷ (κ × Σidf) then)
    text_words: tuple[QueryWord, ...] | None = None
    text_weight_sum: float | None = None
    text_rows: int | None = None
    #: the chunk's length in words (a word's strength divides by it, over
    #: ``scoring.REFERENCE_LENGTH``)
    text_length: int | None = None
    #: the text side of the chunk (``scoring.calibrated_words_text``) and of its best
    #: unit (``scoring.unit_words_text``, None: the unit holds no query word) with the
    #: query terms the unit holds; ``text_component`` is the larger
    text_chunk: float | None = None
    text_unit: float | None = None
    unit_terms: tuple[str, ...] = ()
    #: calibrated fusion, the name signal: the query terms its file's path or title
    #: holds (``name_terms``, each counts in full) and those only a section heading in
    #: the chunk holds (each counts ``scoring.SECTION_SHARE``), the share of the
    #: query's weight that makes (``name_share``, N), the score before the name's
    #: part (``name_base``) and that part (``scoring.name_bonus``); ``name_share``
    #: None: no name signal in this ranking
    name_terms: tuple[str, ...] = ()
    name_section_terms: tuple[str, ...] = ()
    name_share: float | None = None
    name_base: float | None = None
    name_bonus: float = 0.0
    #: the name weight g asked for (``SearchOptions.name_weight``) and the query's
    #: number of words (g shrinks past ``scoring.NAME_QUERY_WORDS``)
    name_weight: float = 0.0
    name_query_words: int = 0
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
