"""The ranking: a retrieval and the options in, every candidate's numbers out.

``rank`` is pure (no I/O), so the TUI's toggles re-rank a cached retrieval
without touching the index. Each stage is a function that returns new
candidates (tests/engine/test_rank_stages.py): gather the candidates of both
lists, fuse them into one score, the calibrated fusion's feedback, temporal
decay, sort, MMR, then the cut by minScore (with the keyword rescue) and
maxResults. Every candidate, returned or dropped, keeps every intermediate
number and, when dropped, why; ``engine.search.explain`` prints them.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

from engine.config.settings import Fusion
from engine.index.tokens import similarity_tokens
from engine.index.unicode61 import term_set
from engine.search import explain, scoring
from engine.search.intent import asks_when, unit_time
from engine.search.model import (
    Candidate,
    Mode,
    QueryWord,
    Retrieval,
    SearchOptions,
    SearchOutcome,
)
from engine.search.query import parse_query
from engine.search.words import fold, name_words, relative_day_words, word_terms

__all__ = [
    "RankCut",
    "RankPlan",
    "apply_decay",
    "cut_results",
    "effective_mode",
    "feed_back",
    "fuse",
    "gather_candidates",
    "mmr_reorder",
    "plan_ranking",
    "rank",
    "sort_by_score",
]


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
    the requested fusion for hybrid and ``"weighted"`` otherwise. ``names``: the
    name signal applies (the calibrated fusion, hybrid or keyword-only).
    ``time_weight``: τ of a query that asks when (the calibrated fusion's feedback), else 0.
    ``today``: the day a daily log's name is "today" or "yesterday" to (the name signal).
    """

    mode: Mode
    fusion: Fusion
    vector_weight: float
    text_weight: float
    names: bool = False
    time_weight: float = 0.0
    today: dt.date | None = None


@dataclass(frozen=True)
class RankCut:
    """The last stage's output: what is returned, what is not, and whether the rescue ran."""

    results: list[Candidate]
    dropped: list[Candidate]
    rescue_used: bool


def plan_ranking(
    retrieval: Retrieval, options: SearchOptions, today: dt.date | None = None
) -> RankPlan:
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
    fusion = options.fusion if mode == "hybrid" else "weighted"
    # A name typed into the search box finds its note without embeddings too: with
    # the calibrated default, keyword-only results get the name signal as well.
    names = options.fusion == "calibrated" and options.name_weight > 0 and mode != "vector"
    timed = fusion == "calibrated" and options.time_weight > 0 and asks_when(retrieval.query)
    tau = options.time_weight if timed else 0.0
    return RankPlan(mode, fusion, vw, tw, names, tau, today)


def rank(
    retrieval: Retrieval, options: SearchOptions, today: dt.date | None = None
) -> SearchOutcome:
    """Rank a retrieval under ``options``; every number lands on a ``Candidate``.

    The stages, each a pure function with its own tests (tests/engine/test_rank_stages.py):
    candidates → fuse → feedback (calibrated) → decay → sort → MMR → cut.
    """
    t0 = time.perf_counter()
    today = today or dt.date.today()
    plan = plan_ranking(retrieval, options, today)
    cands = gather_candidates(retrieval, plan)
    cands = fuse(cands, plan, options)
    cands = feed_back(cands, retrieval, plan, options)
    cands = apply_decay(cands, options, retrieval.file_mtimes, today)
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
    if plan.fusion == "calibrated":
        _word_sides(list(cands.values()), retrieval, today=plan.today)
    elif plan.names:  # keyword-only under the calibrated default: the name signal alone
        _word_sides(list(cands.values()), retrieval, keyword_side=False, today=plan.today)
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


def _word_sides(
    cands: list[Candidate],
    retrieval: Retrieval,
    *,
    keyword_side: bool = True,
    today: dt.date | None = None,
) -> None:
    """The calibrated fusion's word-by-word numbers on each candidate: the keyword
    side's words (``QueryWord``) and the name signal's shares (``engine.search.words``).
    Without ``keyword_side`` (keyword-only mode, whose text side is bm25's own score)
    only the name signal's shares, the query's words weighing the same."""
    quantize = scoring.quantize
    if retrieval.word_weights and keyword_side:
        terms = list(retrieval.word_weights)
        weights = [quantize(retrieval.word_weights[t][0]) for t in terms]
    else:  # no per-word numbers from the store: the name signal weighs words equally
        terms = list(parse_query(retrieval.query).terms)
        weights = [1.0] * len(terms)
    if not terms:
        return
    total = quantize(sum(weights))
    folded = [fold(t) for t in terms]
    for c in cands:
        c.name_query_words = len(terms)
        if retrieval.word_weights and keyword_side:
            got = retrieval.word_counts.get(c.chunk_id, {})
            length = c.text_length = retrieval.chunk_lengths.get(c.chunk_id, 0)
            c.text_words = tuple(
                QueryWord(
                    t,
                    w,
                    retrieval.word_weights[t][2],
                    got.get(t),
                    quantize(scoring.tf_strength(got[t], length)) if t in got else None,
                )
                for t, w in zip(terms, weights, strict=True)
            )
            c.text_rows = retrieval.word_weights[terms[0]][1]
        c.text_weight_sum = total  # equal weights: the number of terms
        named, sections = name_words(c.path, c.text, c.start_line)
        if today is not None:  # a recent log is also "today", "yesterday", "last …"
            named = named | relative_day_words(c.path, today)
        c.name_terms = tuple(t for t, f in zip(terms, folded, strict=True) if f in named)
        c.name_section_terms = tuple(
            t for t, f in zip(terms, folded, strict=True) if f in sections and f not in named
        )
        by_term = dict(zip(terms, weights, strict=True))
        share = sum(by_term[t] for t in c.name_terms) + scoring.SECTION_SHARE * sum(
            by_term[t] for t in c.name_section_terms
        )
        c.name_share = quantize(share / total) if total > 0 else 0.0


def fuse(cands: list[Candidate], plan: RankPlan, options: SearchOptions) -> list[Candidate]:
    """Stage 2: each side's component, then ``fused_score`` (= ``score`` until decay)."""
    out = [c.evolve() for c in cands]
    _fuse_own(out, plan, options)
    return out


def _fuse_own(cands: list[Candidate], plan: RankPlan, options: SearchOptions) -> None:
    """:func:`fuse` on candidates that are the caller's own copies."""
    _set_components(cands, plan.fusion, options)
    combine = scoring.weighted_geometric if plan.fusion == "geometric" else scoring.weighted_sum
    quantize = scoring.quantize
    for c in cands:
        c.normalization = options.normalization
        c.fused_score = quantize(
            combine(c.vector_component, c.text_component, plan.vector_weight, plan.text_weight)
        )
        c.name_base, c.name_bonus = None, 0.0
        if plan.names and c.name_share:
            c.name_base, c.name_weight = c.fused_score, options.name_weight
            g = scoring.name_weight_for(options.name_weight, c.name_query_words)
            # the printed ``base + g×N×(1 − base)`` is the computation: rounded once
            c.fused_score = quantize(c.name_base + scoring.name_bonus(c.name_base, c.name_share, g))
            c.name_bonus = quantize(c.fused_score - c.name_base)
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
    about nothing in memory is not pulled toward its nearest junk. A query that
    asks when adds τ to the cosine of each unit that names a time
    (``engine.search.intent``): only here, past the gate, so τ reorders what the first
    pass found and never makes a query about nothing in memory return something.
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
    with_units = [(c, u) for c, u in zip(cands, units, strict=True) if u is not None]

    lines: dict[int, list[str]] = {}

    def said(k: int, i: int) -> str | None:  # the words of unit i of chunk k that name a time
        c, u = with_units[k]
        if k not in lines:
            lines[k] = c.text.split("\n")
        return unit_time(lines[k], c.start_line, u.first_lines[i], u.last_lines[i])

    best = iter(
        _moved_best_units([u.matrix for _, u in with_units], q, f, beta, plan.time_weight, said)
    )
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
            i, qu, fu, words = next(best)
            moved.best_line, moved.best_line_end = u.first_lines[i], u.last_lines[i]
            moved.line_cosine, moved.feedback_line_cosine = quantize(qu), quantize(fu)
            moved.time_words = words
            moved.time_bonus = plan.time_weight if words else 0.0
            pairs.append(
                (quantize(moved.line_cosine + moved.time_bonus), moved.feedback_line_cosine)
            )
        if ok and c.vector_score is not None:
            moved.feedback_chunk_cosine = quantize(next(chunk_f))
            pairs.append((c.vector_score, moved.feedback_chunk_cosine))
        if pairs:
            moved.vector_input = quantize(scoring.feedback_cosine(pairs, norm, beta))
        out.append(moved)
    _fuse_own(out, plan, options)  # ``out`` holds this stage's own copies
    return out


def _moved_best_units(
    mats: list[np.ndarray],
    q: np.ndarray,
    f: np.ndarray,
    beta: float,
    tau: float = 0.0,
    said: Callable[[int, int], str | None] | None = None,
) -> list[tuple[int, float, float, str | None]]:
    """Per unit matrix k: (index, cos(q, u), cos(f, u), time words) of its unit u
    maximising ``cos(q, u) + τ_u + β·cos(f, u)`` (the first of equals) — every chunk's
    units in one product with (q, f) instead of two small ones per chunk.

    τ_u is ``tau`` when ``said(k, u)`` finds words that name a time (a query that asks
    when), else 0. Only the units that τ could lift to the top are read: from the best
    down, those within τ of it, until the first that names a time."""
    if not mats:
        return []
    lengths = [m.shape[0] for m in mats]
    starts = np.cumsum([0, *lengths[:-1]])
    sims = np.concatenate(mats) @ np.stack([q, f], axis=1)
    moved = np.nan_to_num(sims[:, 0] + beta * sims[:, 1], nan=-np.inf)
    tops = np.maximum.reduceat(moved, starts)
    at_top = np.flatnonzero(moved == np.repeat(tops, lengths))
    rows = at_top[np.searchsorted(at_top, starts)]  # each chunk's first best row
    words: list[str | None] = [None] * len(mats)
    if tau > 0 and said is not None:
        values = moved.tolist()  # plain floats: a chunk has a handful of units
        for k, (start, top) in enumerate(zip(starts.tolist(), rows.tolist(), strict=True)):
            part = values[start : start + lengths[k]]
            i, words[k] = _timed_unit(part, top - start, tau, partial(said, k))
            rows[k] = start + i
    return list(
        zip(
            (rows - starts).tolist(),
            sims[rows, 0].tolist(),
            sims[rows, 1].tolist(),
            words,
            strict=True,
        )
    )


def _timed_unit(
    values: list[float], top: int, tau: float, said: Callable[[int], str | None]
) -> tuple[int, str | None]:
    """The unit of the largest ``value + τ × [it names a time]`` (the first of equals)
    and its time words, given ``top``, the first unit of the largest value. From the
    highest value down, only the units within τ of the top are read, up to the first
    that names a time: no unit below it can do better."""
    best = values[top]
    for _, i in sorted((-v, i) for i, v in enumerate(values) if v >= best - tau):
        words = said(i)
        if words is None:
            continue
        lifted = values[i] + tau
        if i == top or lifted > best or (lifted == best and i < top):
            return i, words
        return top, None
    return top, None


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
            if c.text_words is not None and c.text_weight_sum:  # word by word
                _words_text(c)
            else:
                c.text_component = (
                    0.0
                    if scale is None
                    else q(scoring.calibrated_text(c.text_input or 0.0, scale[1]))
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


def _words_text(c: Candidate) -> None:
    """The calibrated text side word by word: the chunk's (``scoring.calibrated_words_text``)
    or, when more, its best unit's (``scoring.unit_words_text``: where the words sit)."""
    assert c.text_words is not None and c.text_weight_sum
    q = scoring.quantize
    c.text_chunk = q(
        scoring.calibrated_words_text(
            [(w.weight, w.strength) for w in c.text_words], c.text_weight_sum
        )
    )
    c.unit_terms, c.text_unit = (), None
    # a word the chunk lacks is not in its unit: a chunk that holds none is not read
    held_words = tuple(w.term for w in c.text_words if w.tf is not None)
    if c.best_line is not None and held_words:
        first = c.best_line - c.start_line
        last = (c.best_line_end or c.best_line) - c.start_line
        c.unit_terms = _unit_terms(c.text, first, last, held_words)
        if c.unit_terms:
            held = [w.weight for w in c.text_words if w.term in c.unit_terms]
            missing = [w.weight for w in c.text_words if w.term not in c.unit_terms]
            c.text_unit = q(scoring.unit_words_text(held, missing, c.text_weight_sum))
    c.text_component = max(c.text_chunk, c.text_unit or 0.0)


@lru_cache(maxsize=4096)
def _unit_terms(text: str, first: int, last: int, words: tuple[str, ...]) -> tuple[str, ...]:
    """The ``words`` found in lines ``first``..``last`` (0-based) of ``text``: the best
    unit's, remembered (the feedback stage and the search box's next key ask again)."""
    held = term_set("\n".join(text.split("\n")[max(0, first) : last + 1]))
    return tuple(w for w in words if (parts := word_terms(w)) and held.issuperset(parts))


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
        c.name_bonus,
    )
