"""Every score formula of the search pipeline, as pure functions.

The formulas and their worked examples are listed in docs/architecture.md "Scoring".

The pipeline and the UI only call these, so the numbers a user sees in a score
breakdown are the numbers that ranked the results — there is no second copy of
any formula to drift. Nothing here does I/O or reads the clock; callers pass
``today`` in.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from engine.config.settings import WEIGHT_DIGITS, HybridSettings, normalize_weights
from engine.index.tokens import jaccard
from engine.workspace.dates import date_from_path, is_evergreen

__all__ = [
    "DIGITS",
    "WEIGHT_DIGITS",
    "MMRItem",
    "MMRPick",
    "ScoreParts",
    "age_days",
    "bm25_rank_to_score",
    "calibrated_text",
    "calibrated_vector",
    "calibrated_words_text",
    "candidate_count",
    "date_from_path",
    "decay_multiplier",
    "feedback_cosine",
    "feedback_norm",
    "fts5_idf",
    "is_evergreen",
    "minmax_normalize",
    "minmax_params",
    "mmr_rerank",
    "name_bonus",
    "name_weight_for",
    "normal_cdf",
    "normalize_weights",
    "quantize",
    "rrf_score",
    "score_parts",
    "tf_strength",
    "unit_words_text",
    "used_factor",
    "weighted_geometric",
    "weighted_sum",
    "word_weight",
    "zscore_normalize",
    "zscore_params",
]

MAX_CANDIDATES = 200
DEFAULT_VECTOR_WEIGHT = HybridSettings.vector_weight
DEFAULT_TEXT_WEIGHT = HybridSettings.text_weight
NON_FINITE_TEXT_SCORE = 0.001
RRF_K = HybridSettings.rrf_k
GEOMETRIC_FLOOR = 0.05
#: the ``calibrated`` fusion's text scale κ: a chunk scores the full text side when
#: its bm25 reaches κ × the summed idf of the query's words. Fitted on LoCoMo
#: conversations 0–4 (tests/bench/calibrate.py; docs/benchmarks/2026-11-29-kappa.md):
#: 0.6 until chunk vectors were pooled from their units, 0.8 since.
CALIBRATED_TEXT_SCALE = 0.8
#: the ``calibrated`` fusion's cosine calibration: a line cosine of
#: ``CALIBRATED_COSINE_ZERO`` or less scores 0 on the vector side, one of
#: ``CALIBRATED_COSINE_ONE`` scores 1, linear between. Fitted on LoCoMo 0–4 with κ.
CALIBRATED_COSINE_ZERO = 0.0
CALIBRATED_COSINE_ONE = 1.0
#: the ``calibrated`` fusion's pseudo-relevance feedback: the vector side is scored
#: again with the query moved toward the first pass's best chunk,
#: ``q + FEEDBACK_WEIGHT × f`` (Rocchio with one feedback chunk), when that chunk
#: scored at least ``FEEDBACK_GATE`` (the default minScore: feedback only from a
#: result the default would return, so a query about nothing in memory is not
#: pulled toward its nearest junk). Fitted on LoCoMo 0–4 (README "Benchmarks").
FEEDBACK_WEIGHT = 0.3
FEEDBACK_GATE = 0.35
#: the ``calibrated`` fusion's feedback, for a query that asks when
#: (``engine.search.intent``): what a unit that names a time ("yesterday", "last week",
#: "in March") adds to its cosine. Fitted on LoCoMo 0–4 (0.05, 0.10, 0.15 and 0.20
#: tried; docs/ranking.md)
TIME_WEIGHT = 0.15
#: the ``calibrated`` keyword side weighs each query word by FTS5's idf,
#: ``ln((N − n + 0.5) ÷ (n + 0.5))``, but never below this floor (FTS5 puts 1e-6 there
#: for a word in half the chunks or more, which a breakdown cannot print)
WORD_WEIGHT_FLOOR = 0.01
#: the ``calibrated`` fusion's name signal: a chunk whose name (its file's path and
#: title, its headings) holds the query's words closes this share of the gap between
#: its score and 1, times the share of the query's weight its name holds
#: (``name_bonus``)
NAME_WEIGHT = 0.9
#: bm25's term-frequency saturation and length normalisation (FTS5's k1 and b),
#: used by ``tf_strength`` with a fixed reference length: a full chunk of the default
#: size (400 tokens, 1,600 characters) holds about 250 words
BM25_K1 = 1.2
BM25_B = 0.75
REFERENCE_LENGTH = 250
#: the ``calibrated`` keyword side: each query word a chunk lacks caps its text side
#: at ``1 − MISSING_WORD_COST × the word's share of the query's weight``
MISSING_WORD_COST = 0.25
#: where the words sit: the best unit (the line or paragraph the vector side took)
#: holding this share of the query's weight scores the full text side
#: (``unit_words_text``), a missing word capping it as in the chunk
UNIT_TEXT_SCALE = 0.5
#: the name signal is for names and short topics: a query of more words than this
#: gets ``NAME_WEIGHT × NAME_QUERY_WORDS ÷ words`` (a long question's words in a
#: title say less about what the note is about)
NAME_QUERY_WORDS = 4
#: a query word only a section heading of the chunk holds (not its file's path or
#: title) counts this share of its weight in the name share: it names a part
SECTION_SHARE = 0.5
#: decimals of every number a score breakdown prints (weights: ``WEIGHT_DIGITS``)
DIGITS = 4


def quantize(value: float) -> float:
    """``value`` rounded to the ``DIGITS`` decimals the breakdown prints.

    The ranking rounds each intermediate number (side scores, components, the
    fused and final score) as it produces it, so the formula a breakdown prints
    from those numbers *is* the computation: evaluated by hand it gives the
    printed result, to the last printed digit. Four decimals change no ranking
    that a benchmark can see (ties keep the list positions' order).
    """
    return round(value, DIGITS)


# ---------------------------------------------------------------------------
# Keyword and hybrid scores


def bm25_rank_to_score(rank: float) -> float:
    """Map an FTS5 bm25 rank (negative, lower is better) into 0..1, higher is better.

    ``-rank/(1-rank)`` is monotone in match strength and saturates towards 1 for
    strong matches, unlike the seed's ``1/(1+max(0, rank))`` which gives every
    real (negative) rank 1.0. A positive rank is not produced by FTS5's bm25
    but is handled as a weak match. A non-finite rank still means "the row
    matched", so it keeps a tiny positive score instead of vanishing.
    """
    if not math.isfinite(rank):
        return NON_FINITE_TEXT_SCORE
    if rank < 0:
        return -rank / (1.0 - rank)
    return 1.0 / (1.0 + rank)


def candidate_count(max_results: int, multiplier: float) -> int:
    """How many candidates each side (FTS, vector) fetches before merging.

    Over-fetching lets the merge, decay and MMR reorder beyond the final cut;
    the cap keeps a large maxResults from turning each search into a scan.
    """
    product = max_results * multiplier
    if math.isnan(product):
        return 1
    if math.isinf(product):
        return MAX_CANDIDATES if product > 0 else 1
    return min(MAX_CANDIDATES, max(1, math.floor(product)))


def weighted_sum(
    vector_score: float | None, text_score: float | None, vw: float, tw: float
) -> float:
    """OpenClaw's hybrid merge: a side that did not find the chunk contributes 0.

    So a keyword-only hit can never beat ``tw`` and a vector-only hit never
    ``vw``; that is why minScore has a keyword fallback (docs/architecture.md "Scoring").
    """
    v = used_factor("weighted", vector_score, vw) or 0.0
    t = used_factor("weighted", text_score, tw) or 0.0
    return vw * v + tw * t


def weighted_geometric(
    vector_component: float | None, text_component: float | None, vw: float, tw: float
) -> float:
    """memdeck's ``geometric`` fusion: ``v^vw × t^tw`` of the two 0..1 components.

    The components are each side's score divided by the best candidate's, with
    every candidate scored on both sides (``engine.search.retrieve``). A product rewards
    chunks that both sides like, and since only ratios matter, neither side's raw
    scale can swamp the other — the failure of the raw weighted sum on LoCoMo
    (README "Benchmarks"). A component is floored at ``GEOMETRIC_FLOOR`` so a
    chunk with no query word (or an orthogonal vector) is demoted, not zeroed:
    a purely semantic match can still rank when no chunk shares a query word.
    ``None`` means the side carries no signal for this query and is neutral (1).
    """
    v = used_factor("geometric", vector_component, vw)
    t = used_factor("geometric", text_component, tw)
    # None: weight 0 and no signal, a factor of 1 either way
    return float((1.0 if v is None else v) ** vw * (1.0 if t is None else t) ** tw)


def used_factor(fusion: str, component: float | None, weight: float) -> float | None:
    """The number a side enters its fusion's formula with, or None when it does not count.

    A weighted sum (``weighted``, ``normalized``, ``rrf``, ``calibrated``) uses the
    component as it is, 0 for a side that did not find the chunk. ``geometric``
    uses it capped at 1 and floored at ``GEOMETRIC_FLOOR``, and 1 (neutral) for a
    side without signal. None: the side has weight 0 and no component, so it is
    no part of this score (FTS-only's vector side, vector-only's text side).
    """
    if component is None and weight == 0.0:
        return None
    if fusion == "geometric":
        return 1.0 if component is None else max(GEOMETRIC_FLOOR, min(1.0, component))
    return 0.0 if component is None else component


@dataclass(frozen=True)
class ScoreParts:
    """What one candidate's score was made of, as the ranking used it.

    Produced by :func:`score_parts` while ranking; the TUI's vector/text columns,
    its score bar, the breakdown and ``--explain``/``--json`` all read this one
    value, so none of them can show a number the ranking did not use.

    ``vector``/``text`` are the factors of the fusion formula (see
    :func:`used_factor`; None: the side is no part of this score). The bar's
    segments ``bar_floor + bar_vector + bar_text`` sum to ``score``:

    - a weighted sum: ``vw×v`` and ``tw×t``, times the decay factor — each
      side's term of the sum (``bar_floor`` is 0);
    - ``geometric``, a product: ``bar_floor`` is the score both scored sides at
      the 0.05 floor would get (``0.05^(weights of the scored sides) × decay``),
      which no side earned; the rest is split between the sides in proportion
      to ``w×ln(factor ÷ 0.05)``, each side's share of ``ln(score ÷ floor)`` —
      a product's parts add up in logarithms. A neutral side (no signal, factor
      1) gets no segment.

    The segments are rounded to ``DIGITS`` like every printed number, the last
    one taking the remainder, so the printed parts add up to the printed score.
    """

    vector: float | None
    text: float | None
    bar_floor: float
    bar_vector: float
    bar_text: float
    #: the calibrated fusion's name part (``name_bonus``, times the decay factor)
    bar_name: float = 0.0

    @property
    def bar_total(self) -> float:
        return self.bar_floor + self.bar_vector + self.bar_text + self.bar_name


def score_parts(
    fusion: str,
    vector_component: float | None,
    text_component: float | None,
    vw: float,
    tw: float,
    score: float,
    decay: float = 1.0,
    name: float = 0.0,
) -> ScoreParts:
    """The :class:`ScoreParts` of a candidate whose fused score, times ``decay``, is
    ``score``; ``name`` is the calibrated fusion's name part of the fused score."""
    v = used_factor(fusion, vector_component, vw)
    t = used_factor(fusion, text_component, tw)
    if fusion == "geometric":
        sides = ((v, vw, vector_component), (t, tw, text_component))
        # a side with signal is at least the floor; a neutral side's factor is exactly 1
        floor_weight = sum(w for f, w, comp in sides if f is not None and comp is not None)
        base = quantize(min(score, GEOMETRIC_FLOOR**floor_weight * decay))
        shares = [
            0.0 if f is None or comp is None else w * math.log(f / GEOMETRIC_FLOOR)
            for f, w, comp in sides
        ]
        total = shares[0] + shares[1]
        if total <= 0:  # every scored side at the floor: nothing above it was earned
            return ScoreParts(v, t, score, 0.0, 0.0)
        vector_part = quantize((score - base) * shares[0] / total)
        return ScoreParts(v, t, base, vector_part, quantize(score - base - vector_part))
    terms = (vw * (v or 0.0), tw * (t or 0.0), name)
    total = terms[0] + terms[1] + terms[2]
    if total > 0:  # each term's share of the score (the decay factor included)
        vector_part = quantize(score * terms[0] / total)
        name_part = quantize(score * terms[2] / total) if name else 0.0
    else:  # a negative cosine's term: no shares of a sum that is not positive
        vector_part, name_part = quantize(terms[0] * decay), quantize(terms[2] * decay)
    return ScoreParts(v, t, 0.0, vector_part, quantize(score - vector_part - name_part), name_part)


def fts5_idf(docs_with_term: int, total_docs: int) -> float:
    """FTS5's bm25 idf of one word: ``ln((N − n + 0.5)/(n + 0.5))``, at least 1e-6.

    A word no chunk holds (n = 0) gets the largest idf: for the ``calibrated``
    fusion it is the part of the query that nothing matched.
    """
    n = max(0, docs_with_term)
    return max(1e-6, math.log((total_docs - n + 0.5) / (n + 0.5)))


def calibrated_text(bm25_magnitude: float, idf_sum: float) -> float:
    """The ``calibrated`` text component: ``min(1, −bm25 ÷ (κ × Σidf))``.

    bm25 of a chunk holding a word once, at average length, adds exactly that
    word's idf; so −bm25 ÷ Σidf is the share of the query's keyword weight the
    chunk matches — an absolute number, comparable across queries, unlike a
    ratio to the best candidate. A query none of whose rarer words occur scores
    near 0 here however many common words it shares.
    """
    if idf_sum <= 0 or bm25_magnitude <= 0:
        return 0.0
    return min(1.0, bm25_magnitude / (CALIBRATED_TEXT_SCALE * idf_sum))


def word_weight(docs_with_term: int, total_docs: int, *, function_word: bool = False) -> float:
    """A query word's weight on the ``calibrated`` keyword side: FTS5's idf
    ``ln((N − n + 0.5) ÷ (n + 0.5))``, at least ``WORD_WEIGHT_FLOOR``; a function word
    (``engine.search.words.FUNCTION_WORDS``) weighs the floor.

    Only the ratios of a query's weights matter (:func:`calibrated_words_text`
    divides by their sum), so a one-word query's text side depends on no other
    chunk at all. A word in half the chunks or more weighs the floor, as it weighs
    nearly nothing in bm25; the weight reaches the floor continuously (the idf is 0
    at n = N/2), so one added file moves it a little, never by a jump.
    """
    if function_word:
        return WORD_WEIGHT_FLOOR
    n = max(0, docs_with_term)
    total = max(0, total_docs)
    return max(WORD_WEIGHT_FLOOR, math.log((total - n + 0.5) / (n + 0.5)))


def name_weight_for(weight: float, query_words: int) -> float:
    """The name signal's g for a query of ``query_words`` words: ``weight``, times
    ``NAME_QUERY_WORDS ÷ query_words`` beyond that many words."""
    if query_words > NAME_QUERY_WORDS:
        return weight * NAME_QUERY_WORDS / query_words
    return weight


def tf_strength(tf: int, length: int) -> float:
    """A word's strength in a chunk: bm25's term ``tf × (k1 + 1) ÷ (tf + k1 × (1 − b +
    b × dl ÷ L))`` without the idf, with k1 = 1.2, b = 0.75, the chunk's length dl in
    words and a fixed reference length L = ``REFERENCE_LENGTH``: 1 for a word found
    once in a chunk of L words, more in a shorter chunk or found more often, never
    above 2.2. bm25 divides by the average chunk's length instead, which makes every
    score move when any file is added; L does not move."""
    if tf <= 0:
        return 0.0
    norm = 1.0 - BM25_B + BM25_B * max(0, length) / REFERENCE_LENGTH
    return tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * norm)


def calibrated_words_text(words: Sequence[tuple[float, float | None]], weight_sum: float) -> float:
    """The ``calibrated`` text component, word by word:
    ``min(1 − c × Σ w(missing) ÷ Σ w, Σ w × s ÷ (κ × Σ w))`` over the query's words,
    each given as (weight w, strength s, or None when the chunk lacks it).

    The second term is the chunk-level ``−bm25 ÷ (κ × Σidf)`` (:func:`calibrated_text`)
    with the smoothed weights: bm25 is ``Σ idf × s``, and a chunk matching enough of
    the query (κ of its weight at strength 1) saturates. The first caps it: each word
    the chunk lacks costs ``MISSING_WORD_COST`` of its share of the query's weight, so
    a chunk missing a query word cannot reach 1 however often it repeats the others,
    and missing a rare word costs more than missing a common one.
    """
    if weight_sum <= 0:
        return 0.0
    missing = [w for w, s in words if s is None or not s > 0]
    cap = 1.0 - MISSING_WORD_COST * sum(missing) / weight_sum if missing else 1.0
    matched = sum(w * s for w, s in words if s is not None and s > 0)
    return max(0.0, min(cap, matched / (CALIBRATED_TEXT_SCALE * weight_sum)))


def unit_words_text(held: Sequence[float], missing: Sequence[float], weight_sum: float) -> float:
    """The text side of the best unit alone — where the query's words sit:
    ``min(1 − c × Σ w(missing) ÷ Σ w, Σ w(held) ÷ (κu × Σ w))`` with the weights of
    the query words the unit holds and of those it lacks, κu = ``UNIT_TEXT_SCALE``.
    A chunk's text side is the larger of its own and this: words found together in
    the line that answers count more than the same words scattered over a chunk."""
    if weight_sum <= 0 or not held:
        return 0.0
    cap = 1.0 - MISSING_WORD_COST * sum(missing) / weight_sum if missing else 1.0
    return min(cap, sum(held) / (UNIT_TEXT_SCALE * weight_sum))


def name_bonus(score: float, share: float, weight: float = NAME_WEIGHT) -> float:
    """The name signal's part of a ``calibrated`` score: ``g × share × (1 − score)``.

    ``share`` is the part of the query's weight the chunk's name holds (its file's
    path and its headings, ``engine.search.words``); a chunk named by the whole
    query closes ``g`` of the gap between its score and 1. The score stays below 1,
    and a chunk with no query word in its name is unchanged.
    """
    if not share > 0 or not weight > 0:
        return 0.0
    return weight * share * max(0.0, 1.0 - score)


def calibrated_vector(cosine: float, zero: float = 0.0, one: float = 1.0) -> float:
    """The ``calibrated`` vector component: the best line's cosine mapped linearly
    from [``zero``, ``one``] onto 0..1 and clamped (the ranking passes the fitted
    ``CALIBRATED_COSINE_ZERO``/``CALIBRATED_COSINE_ONE``)."""
    if not math.isfinite(cosine) or one <= zero:
        return 0.0
    return min(1.0, max(0.0, (cosine - zero) / (one - zero)))


def feedback_norm(query_feedback_cosine: float, beta: float) -> float:
    """``‖q + β·f‖`` for unit vectors q, f whose cosine is ``query_feedback_cosine``:
    ``(1 + β² + 2β·cos(q, f))^0.5``."""
    return float((1.0 + beta**2 + 2.0 * beta * query_feedback_cosine) ** 0.5)


def feedback_cosine(pairs: Sequence[tuple[float, float]], norm: float, beta: float) -> float:
    """The moved query ``q + β·f``'s best cosine among unit vectors x, each given as
    ``(cos(q, x), cos(f, x))``: ``max(cos(q, x) + β × cos(f, x)) ÷ ‖q + β·f‖`` — a
    dot product is linear, so the moved query's cosine is made of two cosines a
    breakdown can print."""
    best = max(qx + beta * fx for qx, fx in pairs)
    return best / norm if norm > 0 else best


def minmax_normalize(values: Sequence[float]) -> list[float]:
    """Rescale one side's candidate scores to 0..1 (``normalized`` fusion).

    When all values are equal (including a single candidate) they all map to
    1.0, not 0.0: equal evidence means each is as good as that side's best, and
    mapping to 0 would silently drop the side's weight for a lone hit.
    """
    if not values:
        return []
    lo = min(values)
    hi = max(values)
    span = hi - lo
    if span <= 0.0 or not math.isfinite(span):
        return [1.0] * len(values)
    return [(v - lo) / span for v in values]


def minmax_params(values: Sequence[float]) -> tuple[float, float] | None:
    """(lowest, highest) of one side's candidate scores, or None when they are all
    equal (then every value maps to 1.0, see :func:`minmax_normalize`)."""
    if not values:
        return None
    lo, hi = min(values), max(values)
    span = hi - lo
    if span <= 0.0 or not math.isfinite(span):
        return None
    return lo, hi


def zscore_params(values: Sequence[float]) -> tuple[float, float] | None:
    """(mean, standard deviation) rounded to ``DIGITS``, or None for zero spread.

    Rounded so that ``Φ((x − mean) ÷ std)`` printed with these numbers is the
    computation itself (see :func:`quantize`).
    """
    if not values:
        return None
    n = len(values)
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)
    mean, std = quantize(mean), quantize(std)
    if std <= 0.0 or not math.isfinite(std):
        return None
    return mean, std


def normal_cdf(z: float) -> float:
    """Φ(z), the standard normal CDF (what a z-score becomes in 0..1)."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def zscore_normalize(values: Sequence[float]) -> list[float]:
    """Standardise one side's scores and map them to 0..1 via the normal CDF.

    The z-score removes each side's own scale and spread (cosine scores cluster
    near 0.3–0.6, bm25 scores spread widely); Φ(z) then folds it into 0..1 so it
    can enter the same weighted sum as the other modes. Less sensitive to a
    single outlier than min-max. Zero spread (equal values, single value) maps
    to 1.0 for the same reason as :func:`minmax_normalize`. Population standard
    deviation: the candidates are the whole population being ranked.
    """
    if not values:
        return []
    n = len(values)
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) ** 2 for v in values) / n
    std = math.sqrt(var)
    if std <= 0.0 or not math.isfinite(std):
        return [1.0] * n
    return [0.5 * (1.0 + math.erf((v - mean) / (std * math.sqrt(2.0)))) for v in values]


def rrf_score(rank: int, k: int = RRF_K) -> float:
    """Reciprocal rank fusion term for a 1-based rank in one candidate list.

    RRF ignores score scales entirely, which is the point: it is the baseline
    that needs no calibration between bm25 and cosine. k=60 is the usual value
    from Cormack et al.; it damps the gap between the first few ranks.
    """
    if rank < 1:
        raise ValueError(f"rank is 1-based, got {rank}")
    return 1.0 / (k + rank)


# ---------------------------------------------------------------------------
# Temporal decay


# A date in a file name must not be glued to other digits, so that ticket
# numbers like "92025-06-15" are not read as 2025-06-15.
def age_days(path: str, mtime: float | None, today: dt.date) -> float | None:
    """Age used for decay, or None when the result must not decay.

    Dated names win over mtime; other sources (session transcripts, undated
    extraPaths) fall back to mtime, compared as a UTC calendar date so the
    result depends only on the arguments (pass ``today`` in UTC too). Ages are
    whole days, matching the day granularity of dated names. Future dates give
    0: a log dated tomorrow is as fresh as one dated today.
    """
    if is_evergreen(path):
        return None
    dated = date_from_path(path)
    if dated is None:
        if mtime is None or not math.isfinite(mtime):
            return None
        dated = dt.datetime.fromtimestamp(mtime, dt.UTC).date()
    return float(max(0, (today - dated).days))


def decay_multiplier(age_days: float, half_life_days: float) -> float:
    """exp(-ln2/halfLife × age): halves the score every ``half_life_days``.

    Negative ages (clock skew, future dates) do not boost. A non-positive or
    non-finite half-life, or a non-finite age, disables decay (1.0) rather than
    zeroing every score, as OpenClaw does.
    """
    if not math.isfinite(half_life_days) or half_life_days <= 0:
        return 1.0
    if not math.isfinite(age_days):
        return 1.0
    return math.exp(-math.log(2) / half_life_days * max(0.0, age_days))


# ---------------------------------------------------------------------------
# MMR


@dataclass
class MMRItem:
    """A candidate for MMR; ``tokens`` from :func:`engine.index.tokens.similarity_tokens`.

    Token sets are computed once by the caller (they are also cached per chunk),
    so MMR never re-tokenises inside its O(n²) loop. ``vector`` is the chunk
    embedding, L2-normalised, used only in cosine mode.
    """

    key: str
    score: float
    tokens: frozenset[str]
    vector: npt.NDArray[np.floating] | None = None


@dataclass
class MMRPick:
    """One MMR decision, kept for the score breakdown.

    ``relevance`` is the min-max normalised score, ``max_similarity`` the
    highest similarity to anything picked earlier (0 for the first pick), and
    ``mmr_score`` the value that won this position.
    """

    key: str
    position: int
    original_position: int
    relevance: float
    max_similarity: float
    mmr_score: float


def _pair_similarity(a: MMRItem, b: MMRItem, mode: Literal["jaccard", "cosine"]) -> float:
    """Similarity clamped to [0, 1].

    Cosine can be negative; a negative "redundancy" would reward picking an
    opposite passage, so it counts as 0 (OpenClaw's max also starts at 0).
    """
    if mode == "cosine" and a.vector is not None and b.vector is not None:
        sim = float(np.dot(a.vector, b.vector))
        if not math.isfinite(sim):
            return 0.0
        return min(1.0, max(0.0, sim))
    return jaccard(a.tokens, b.tokens)


def mmr_rerank(
    items: Sequence[MMRItem],
    lambda_: float,
    similarity: Literal["jaccard", "cosine"] = "jaccard",
) -> list[MMRPick]:
    """Greedy maximal-marginal-relevance order: relevance minus redundancy.

    Each step picks the candidate maximising ``λ·rel − (1−λ)·maxSim`` where
    maxSim is its highest similarity to anything already picked. Ties go to the
    higher original score, then the earlier original position, so λ = 1 is
    exactly a stable sort by score (the breakdown can then show "MMR moved
    nothing"). ``original_position`` is the index in ``items``. Each item's
    maxSim is updated only against the newest pick, so the whole run does n²/2
    similarity computations. λ is clamped to [0, 1].
    """
    if similarity not in ("jaccard", "cosine"):
        raise ValueError(f"similarity must be 'jaccard' or 'cosine', not {similarity!r}")
    n = len(items)
    if n == 0:
        return []
    lam = 1.0 if math.isnan(lambda_) else min(1.0, max(0.0, lambda_))
    # Relevance and similarity are rounded to the printed DIGITS (see ``quantize``)
    # so the breakdown's "λ×relevance − (1−λ)×max-sim" is exactly what decided.
    relevance = [quantize(r) for r in minmax_normalize([item.score for item in items])]
    max_sim = [0.0] * n
    remaining = list(range(n))
    picks: list[MMRPick] = []
    while remaining:
        best = remaining[0]
        best_key = (lam * relevance[best] - (1.0 - lam) * max_sim[best], items[best].score)
        for idx in remaining[1:]:
            key = (lam * relevance[idx] - (1.0 - lam) * max_sim[idx], items[idx].score)
            # Strictly greater: equal keys keep the earlier original position.
            if key > best_key:
                best, best_key = idx, key
        picks.append(
            MMRPick(
                key=items[best].key,
                position=len(picks),
                original_position=best,
                relevance=relevance[best],
                max_similarity=max_sim[best],
                mmr_score=best_key[0],
            )
        )
        remaining.remove(best)
        chosen = items[best]
        for idx in remaining:
            sim = quantize(_pair_similarity(items[idx], chosen, similarity))
            if sim > max_sim[idx]:
                max_sim[idx] = sim
    return picks
