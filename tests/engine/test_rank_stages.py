"""Each stage of ``rank`` on its own: candidates → fuse → feedback → decay → sort → MMR → cut.

The retrievals are written by hand (no index, no provider), so every number
below follows from the formulas in ``engine.search.scoring``. Every stage must
also leave its input untouched: the TUI re-ranks one cached retrieval many
times, and a stage that edited the candidates it was given would leak one
ranking's numbers into the next.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import numpy as np
import pytest

from engine.index.line_vectors import ChunkUnits, UnitHit
from engine.index.store import ChunkRow
from engine.search import explain, scoring
from engine.search.model import Candidate, Retrieval, SearchOptions
from engine.search.rank import (
    RankPlan,
    _moved_best_units,
    apply_decay,
    cut_results,
    feed_back,
    fuse,
    gather_candidates,
    mmr_reorder,
    plan_ranking,
    rank,
    sort_by_score,
)

TODAY = dt.date(2026, 3, 15)


def row(cid: int, path: str, text: str = "some text") -> ChunkRow:
    return ChunkRow(cid, path, "memory", 1, 3, text)


def retrieval(
    fts: list[tuple[int, float]],
    vec: list[tuple[int, float]],
    rows: list[ChunkRow],
    *,
    text_ranks: dict[int, float] | None = None,
    cosines: dict[int, float] | None = None,
    vectors: dict[int, np.ndarray] | None = None,
    vector_available: bool = True,
    fts_available: bool = True,
) -> Retrieval:
    return Retrieval(
        query="q",
        fts_query='"q"',
        fts_operator="AND",
        fts_hits=fts,
        vector_hits=vec,
        rows={r.id: r for r in rows},
        vectors=vectors or {},
        file_mtimes={},
        fts_available=fts_available,
        vector_available=vector_available,
        text_ranks=text_ranks or {},
        cosines=cosines or {},
    )


def cand(cid: int, path: str = "MEMORY.md", *, score: float = 0.0, **kw: object) -> Candidate:
    c = Candidate(cid, path, "memory", 1, 3, kw.pop("text", f"text {cid}"), ("fts",))  # type: ignore[arg-type]
    for key, value in kw.items():
        setattr(c, key, value)
    c.score = c.fused_score = score
    return c


def snapshot(cands: list[Candidate]) -> list[dict[str, object]]:
    return [explain.candidate_json(c) for c in cands]


HYBRID = RankPlan("hybrid", "weighted", 0.7, 0.3)


# -- plan ------------------------------------------------------------------------
def test_plan_normalises_hybrid_weights_and_degrades_without_vectors() -> None:
    r = retrieval([], [], [])
    opts = SearchOptions(vector_weight=0.6, text_weight=0.6, fusion="rrf")
    assert plan_ranking(r, opts) == RankPlan("hybrid", "rrf", 0.5, 0.5)
    no_vectors = retrieval([], [], [], vector_available=False)
    assert plan_ranking(no_vectors, opts) == RankPlan("fts", "weighted", 0.0, 1.0)
    assert plan_ranking(r, opts.with_(mode="vector")) == RankPlan("vector", "weighted", 1.0, 0.0)
    no_fts = retrieval([], [], [], fts_available=False)
    assert plan_ranking(no_fts, opts).mode == "vector"


# -- candidates ------------------------------------------------------------------
def test_candidates_merge_both_lists_fts_first_and_skip_vanished_rows() -> None:
    r = retrieval(
        fts=[(2, -4.0), (9, -3.0), (1, -1.0)],  # chunk 9's row is gone
        vec=[(1, 0.8), (3, 0.5)],
        rows=[row(1, "a.md"), row(2, "b.md"), row(3, "c.md")],
    )
    cands = gather_candidates(r, HYBRID)
    assert [c.chunk_id for c in cands] == [2, 1, 3]
    by_id = {c.chunk_id: c for c in cands}
    assert by_id[1].lists == ("fts", "vector")
    assert (by_id[1].fts_position, by_id[1].vector_position) == (3, 1)
    assert by_id[2].text_score == pytest.approx(4 / 5) and by_id[2].vector_score is None
    assert by_id[3].lists == ("vector",) and by_id[3].bm25_rank is None
    assert all((c.vector_weight, c.text_weight) == (0.7, 0.3) for c in cands)
    assert all(c.fusion == "weighted" for c in cands)


def test_candidates_use_only_the_lists_of_the_mode() -> None:
    r = retrieval([(1, -2.0)], [(2, 0.9)], [row(1, "a.md"), row(2, "b.md")])
    fts_only = gather_candidates(r, RankPlan("fts", "weighted", 0.0, 1.0))
    assert [c.chunk_id for c in fts_only] == [1]
    vector_only = gather_candidates(r, RankPlan("vector", "weighted", 1.0, 0.0))
    assert [c.chunk_id for c in vector_only] == [2]


def test_geometric_candidates_get_the_side_that_did_not_list_them() -> None:
    r = retrieval(
        fts=[(1, -3.0)],
        vec=[(2, 0.6)],
        rows=[row(1, "a.md"), row(2, "b.md")],
        text_ranks={1: -3.0, 2: -1.0},
        cosines={1: 0.2, 2: 0.6},
    )
    geometric = gather_candidates(r, RankPlan("hybrid", "geometric", 0.7, 0.3))
    by_id = {c.chunk_id: c for c in geometric}
    assert by_id[1].vector_score == 0.2 and by_id[1].vector_position is None
    assert by_id[2].bm25_rank == -1.0 and by_id[2].text_score == pytest.approx(0.5)
    assert {c.fusion for c in geometric} == {"geometric"}
    # the other fusions keep OpenClaw's rule: an unlisted side stays empty
    weighted = {c.chunk_id: c for c in gather_candidates(r, HYBRID)}
    assert weighted[1].vector_score is None and weighted[2].bm25_rank is None


# -- fuse ------------------------------------------------------------------------
def test_weighted_fusion_is_the_raw_weighted_sum() -> None:
    cands = [
        cand(1, text_score=0.8, vector_score=0.5),
        cand(2, text_score=None, vector_score=0.9),
    ]
    before = snapshot(cands)
    fused = fuse(cands, HYBRID, SearchOptions())
    assert fused[0].fused_score == pytest.approx(0.7 * 0.5 + 0.3 * 0.8)
    assert fused[1].fused_score == pytest.approx(0.7 * 0.9)
    assert [c.score for c in fused] == [c.fused_score for c in fused]
    assert snapshot(cands) == before  # the input is untouched


def test_rrf_fusion_scales_first_on_both_lists_to_one() -> None:
    cands = [cand(1, fts_position=1, vector_position=1), cand(2, fts_position=3)]
    fused = fuse(cands, RankPlan("hybrid", "rrf", 0.7, 0.3), SearchOptions(rrf_k=60))
    assert fused[0].fused_score == pytest.approx(1.0)
    assert fused[1].text_component == round(61 / 63, 4)  # rounded as printed
    assert fused[1].vector_component is None
    assert fused[1].fused_score == round(0.3 * round(61 / 63, 4), 4)


def test_normalized_fusion_rescales_each_side() -> None:
    cands = [
        cand(1, text_score=0.2, vector_score=0.4),
        cand(2, text_score=0.6, vector_score=0.5),
        cand(3, text_score=0.4, vector_score=None),
    ]
    plan = RankPlan("hybrid", "normalized", 0.5, 0.5)
    fused = fuse(cands, plan, SearchOptions(normalization="minmax"))
    assert [c.text_component for c in fused] == pytest.approx([0.0, 1.0, 0.5])
    assert [c.vector_component for c in fused] == pytest.approx([0.0, 1.0, None])
    assert [c.fused_score for c in fused] == pytest.approx([0.0, 1.0, 0.25])


def test_geometric_fusion_divides_each_side_by_its_best() -> None:
    cands = [
        cand(1, bm25_rank=-4.0, vector_score=0.5),
        cand(2, bm25_rank=-2.0, vector_score=0.25),
    ]
    fused = fuse(cands, RankPlan("hybrid", "geometric", 0.7, 0.3), SearchOptions())
    assert fused[0].fused_score == pytest.approx(1.0)
    assert (fused[1].text_component, fused[1].vector_component) == (0.5, 0.5)
    assert fused[1].fused_score == pytest.approx(0.5**0.7 * 0.5**0.3)


# -- feedback --------------------------------------------------------------------
def _feedback_retrieval(top_cosine: float) -> Retrieval:
    """q = x; chunk 1 at ``top_cosine`` to it, chunk 2 orthogonal to q but close to
    chunk 1, with two line units; chunk 3 orthogonal to both."""
    d1 = np.array([top_cosine, math.sqrt(1 - top_cosine**2), 0.0])
    vectors = {1: d1, 2: np.array([0.0, 1.0, 0.0]), 3: np.array([0.0, 0.0, 1.0])}
    r = retrieval(
        [], [(1, top_cosine), (2, 0.0), (3, 0.0)], [row(i, f"n{i}.md") for i in (1, 2, 3)]
    )
    lines = np.array([[0.0, 1.0, 0.0], [0.6, 0.8, 0.0]])
    return dataclasses.replace(
        r,
        query_vector=np.array([1.0, 0.0, 0.0]),
        vectors=vectors,
        units={2: ChunkUnits(lines, (5, 6), (5, 6))},
    )


def test_feedback_moves_the_query_toward_the_best_chunk_and_fuses_again() -> None:
    r = _feedback_retrieval(0.8)
    opts = SearchOptions(min_score=0.0)
    plan = plan_ranking(r, opts)
    first = fuse(gather_candidates(r, plan), plan, opts)
    before = snapshot(first)
    moved = {c.chunk_id: c for c in feed_back(first, r, plan, opts)}
    assert snapshot(first) == before  # the input is left as it was
    # ‖q + 0.3·f‖ = (1 + 0.09 + 0.6 × 0.8)^0.5
    norm = round(math.sqrt(1 + 0.3**2 + 2 * 0.3 * 0.8), 4)
    assert all(
        c.feedback_norm == norm and c.feedback_from == ("n1.md", 1, 3) for c in moved.values()
    )
    # the chunk itself: (0.8 + 0.3 × 1) ÷ norm
    assert moved[1].vector_input == round((0.8 + 0.3) / norm, 4)
    assert moved[1].fused_score == round(0.7 * moved[1].vector_input, 4)
    # chunk 2: its line 6 (0.6, 0.8, 0) is the moved query's closest unit:
    # (0.6 + 0.3 × 0.96) ÷ norm beats line 5's (0 + 0.3 × 0.6) and the chunk's own
    c2 = moved[2]
    assert (c2.best_line, c2.line_cosine, c2.feedback_line_cosine) == (6, 0.6, 0.96)
    assert c2.feedback_chunk_cosine == 0.6
    assert c2.vector_input == round((0.6 + 0.3 * 0.96) / norm, 4)
    # nothing in common with either: still 0
    assert moved[3].vector_input == 0.0 and moved[3].fused_score == 0.0


def test_feedback_needs_a_first_pass_score_at_the_gate() -> None:
    r = _feedback_retrieval(0.45)  # first pass 0.7 × 0.45 = 0.315 < 0.35
    opts = SearchOptions(min_score=0.0)
    plan = plan_ranking(r, opts)
    first = fuse(gather_candidates(r, plan), plan, opts)
    assert max(c.fused_score for c in first) < scoring.FEEDBACK_GATE
    assert snapshot(feed_back(first, r, plan, opts)) == snapshot(first)
    # β 0 and the other fusions never move the query
    high = _feedback_retrieval(0.8)
    for o in (opts.with_(feedback_weight=0.0), opts.with_(fusion="geometric")):
        p = plan_ranking(high, o)
        cands = fuse(gather_candidates(high, p), p, o)
        assert snapshot(feed_back(cands, high, p, o)) == snapshot(cands)


# -- a question about when --------------------------------------------------------
def _when_retrieval(query: str) -> Retrieval:
    """One chunk (file lines 4–6) whose line 5 is closer to the query (cosine 0.6) than
    line 6 (0.5), and only line 6 names a time; the chunk's own cosine is 0.3."""
    text = "# Staging\n- We talked about moving staging.\n- Moved staging yesterday."
    r = retrieval([], [(1, 0.3)], [ChunkRow(1, "MEMORY.md", "memory", 4, 6, text)])
    r = dataclasses.replace(r, query=query)
    units = {1: ChunkUnits(np.array([[0.6, 0.8, 0.0], [0.5, 0.0, 0.866]]), (5, 6), (5, 6))}
    return dataclasses.replace(
        r,
        query_vector=np.array([1.0, 0.0, 0.0]),
        vectors={1: np.array([0.3, 0.954, 0.0])},
        units=units,
        line_hits={1: UnitHit(5, 0.6, 5)},
    )


def test_a_question_about_when_adds_tau_in_the_feedback_to_a_unit_that_names_a_time() -> None:
    opts = SearchOptions(min_score=0.0)
    r = _when_retrieval("When did we move staging?")
    plan = plan_ranking(r, opts)
    assert plan.time_weight == scoring.TIME_WEIGHT == 0.15
    # the first pass takes the closest line, τ or not: τ never lifts a query over the gate
    first = fuse(gather_candidates(r, plan), plan, opts)
    (c,) = first
    assert (c.best_line, c.line_cosine, c.time_bonus, c.vector_input) == (5, 0.6, 0.0, 0.6)
    before = snapshot(first)
    (c,) = feed_back(first, r, plan, opts)
    assert snapshot(first) == before
    assert c.feedback_from == ("MEMORY.md", 4, 6)
    # f is the chunk itself: cos(f, line 5) = 0.3×0.6 + 0.954×0.8 = 0.9432 and
    # cos(f, line 6) = 0.15, so line 5 wins even with τ: 0.6 + 0.3×0.9432 > 0.5 + 0.15 + 0.3×0.15
    assert (c.best_line, c.time_bonus, c.time_words) == (5, 0.0, None)
    # a feedback vector f = q instead: cos(f, line 5) = 0.6 and cos(f, line 6) = 0.5, so
    # line 6 with τ, 0.5 + 0.15 + 0.3×0.5 = 0.8, beats line 5's 0.6 + 0.3×0.6 = 0.78
    r6 = dataclasses.replace(r, vectors={1: np.array([1.0, 0.0, 0.0])})
    (c,) = feed_back(fuse(gather_candidates(r6, plan), plan, opts), r6, plan, opts)
    assert (c.best_line, c.time_bonus, c.time_words) == (6, 0.15, "yesterday")
    assert c.vector_input == round((0.5 + 0.15 + 0.3 * c.feedback_line_cosine) / c.feedback_norm, 4)
    f = explain.fmt
    assert explain.moved_terms(c)[0] == f"{f(0.5)} + 0.15 + 0.3×{f(c.feedback_line_cosine)}"
    # τ 0, or a query that does not ask when: no bonus, and line 5 wins (0.78 > 0.5 + 0.15)
    for o, q in ((opts.with_(time_weight=0.0), "When did we move staging?"), (opts, "staging")):
        rq = dataclasses.replace(_when_retrieval(q), vectors=r6.vectors)
        p = plan_ranking(rq, o)
        (c,) = feed_back(fuse(gather_candidates(rq, p), p, o), rq, p, o)
        assert (c.best_line, c.time_bonus, c.time_words) == (5, 0.0, None)


def test_the_lazy_time_check_picks_what_every_unit_checked_would() -> None:
    """``_moved_best_units`` reads only the units τ could lift to the top; its choice is
    the argmax of ``cos(q, u) + τ_u + β·cos(f, u)`` over every unit, the first of equals
    (ties made likely by rounding the vectors to a few values)."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        mats = [
            np.round(rng.normal(size=(int(rng.integers(1, 7)), 4)), 1)
            for _ in range(int(rng.integers(1, 5)))
        ]
        q, f = np.round(rng.normal(size=4), 1), np.round(rng.normal(size=4), 1)
        timed = [rng.random(m.shape[0]) < 0.4 for m in mats]
        asked: list[tuple[int, int]] = []

        def said(k: int, i: int, timed=timed, asked=asked) -> str | None:
            asked.append((k, i))
            return "yesterday" if timed[k][i] else None

        got = _moved_best_units(mats, q, f, 0.3, 0.15, said)
        for k, m in enumerate(mats):
            value = m @ q + 0.3 * (m @ f) + 0.15 * timed[k]
            i = int(np.argmax(value))
            assert got[k][0] == i, (k, value, got[k])
            assert got[k][3] == ("yesterday" if timed[k][i] else None)
        assert len(asked) <= sum(m.shape[0] for m in mats)


# -- decay -----------------------------------------------------------------------
def test_decay_halves_a_log_one_half_life_old_and_spares_evergreen_files() -> None:
    cands = [
        cand(1, "memory/2026-02-13.md", score=0.8),  # 30 days before TODAY
        cand(2, "MEMORY.md", score=0.8),
    ]
    before = snapshot(cands)
    opts = SearchOptions(decay_enabled=True, half_life_days=30)
    decayed = apply_decay(cands, opts, {"MEMORY.md": 0.0}, TODAY)
    assert decayed[0].age_days == 30.0
    assert decayed[0].decay_multiplier == pytest.approx(0.5)
    assert decayed[0].score == pytest.approx(0.4) and decayed[0].fused_score == 0.8
    assert decayed[1].score == 0.8 and decayed[1].age_days is None
    assert snapshot(cands) == before
    off = apply_decay(cands, SearchOptions(decay_enabled=False), {}, TODAY)
    assert [c.score for c in off] == [0.8, 0.8]


# -- sort ------------------------------------------------------------------------
def test_sort_breaks_ties_by_fts_then_vector_position_then_id() -> None:
    cands = [
        cand(5, score=0.5, vector_position=1),
        cand(4, score=0.5, fts_position=2),
        cand(3, score=0.9),
        cand(2, score=0.5, fts_position=1),
        cand(1, score=0.5),
    ]
    ordered = sort_by_score(cands)
    assert [c.chunk_id for c in ordered] == [3, 2, 4, 5, 1]
    assert [c.sorted_position for c in ordered] == [1, 2, 3, 4, 5]
    assert all(c.sorted_position == 0 for c in cands)


# -- MMR -------------------------------------------------------------------------
def test_mmr_moves_a_near_duplicate_down_and_records_why() -> None:
    cands = sort_by_score(
        [
            cand(1, score=0.9, text="postgres port 5432 pgbouncer"),
            cand(2, score=0.85, text="postgres port 5432 pgbouncer"),
            cand(3, score=0.8, text="train to porto"),
        ]
    )
    opts = SearchOptions(mmr_enabled=True, mmr_lambda=0.5)
    reordered = mmr_reorder(cands, opts, {})
    assert [c.chunk_id for c in reordered] == [1, 3, 2]
    dup = reordered[2]
    assert dup.mmr_position == 3 and dup.mmr_shift == -1
    assert dup.mmr_max_similarity == pytest.approx(1.0)
    assert all(c.mmr_position is None for c in cands)  # the input is untouched
    off = mmr_reorder(cands, SearchOptions(mmr_enabled=False), {})
    assert [c.chunk_id for c in off] == [1, 2, 3] and off[0].mmr_position is None


def test_mmr_cosine_uses_the_chunk_vectors() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    cands = sort_by_score([cand(1, score=0.9), cand(2, score=0.8), cand(3, score=0.7)])
    opts = SearchOptions(mmr_enabled=True, mmr_lambda=0.5, mmr_similarity="cosine")
    reordered = mmr_reorder(cands, opts, {1: a, 2: a, 3: b})
    assert [c.chunk_id for c in reordered] == [1, 3, 2]


# -- cut -------------------------------------------------------------------------
def test_cut_drops_below_min_score_and_beyond_max_results_with_reasons() -> None:
    ordered = sort_by_score(
        [cand(1, score=0.9, text_score=0.9), cand(2, score=0.8), cand(3, score=0.1)]
    )
    cut = cut_results(ordered, SearchOptions(min_score=0.35, max_results=1), 0.3)
    assert [c.chunk_id for c in cut.results] == [1] and cut.results[0].final_rank == 1
    reasons = {c.chunk_id: c.dropped for c in cut.dropped}
    assert reasons == {2: "cut: beyond maxResults 1", 3: "score 0.1000 < minScore 0.35"}
    assert not cut.rescue_used
    assert all(c.dropped is None and c.final_rank is None for c in ordered)


def test_cut_rescues_keyword_hits_when_min_score_empties_the_list() -> None:
    ordered = sort_by_score(
        [
            cand(1, score=0.28, text_score=0.95),  # keyword-only: at most tw = 0.3
            cand(2, score=0.31),  # vector-only: never rescued
            cand(3, score=0.1, text_score=0.3),  # keyword hit below min(minScore, tw)
        ]
    )
    cut = cut_results(ordered, SearchOptions(min_score=0.35), 0.28)
    assert cut.rescue_used
    assert [(c.chunk_id, c.rescued, c.dropped) for c in cut.results] == [(1, True, None)]
    assert {c.chunk_id for c in cut.dropped} == {2, 3}


# -- all stages ------------------------------------------------------------------
def test_rank_is_the_stages_in_order_and_replays_identically() -> None:
    rows = [
        row(1, "memory/2026-03-14.md", "postgres port 5432"),
        row(2, "MEMORY.md", "postgres pgbouncer pool"),
        row(3, "memory/2026-01-01.md", "train to porto"),
    ]
    r = retrieval([(1, -5.0), (2, -2.0)], [(3, 0.7), (2, 0.6)], rows)
    opts = SearchOptions(
        fusion="weighted", min_score=0.2, decay_enabled=True, mmr_enabled=True, mmr_lambda=0.7
    )
    out = rank(r, opts, TODAY)
    plan = plan_ranking(r, opts)
    staged = cut_results(
        mmr_reorder(
            sort_by_score(
                apply_decay(fuse(gather_candidates(r, plan), plan, opts), opts, {}, TODAY)
            ),
            opts,
            {},
        ),
        opts,
        plan.text_weight,
    )
    assert snapshot(out.results) == snapshot(staged.results)
    assert snapshot(out.dropped) == snapshot(staged.dropped)
    again = rank(r, opts, TODAY)
    assert snapshot(again.candidates) == snapshot(out.candidates)
    scores = {c.chunk_id: c.score for c in out.candidates}
    # MEMORY.md is evergreen: both sides, no decay
    assert scores[2] == pytest.approx(0.7 * 0.6 + 0.3 * scoring.bm25_rank_to_score(-2.0))
    # yesterday's log: keyword side only, one day of a 30-day half-life
    day = math.exp(-math.log(2) / 30)
    assert scores[1] == pytest.approx(0.3 * scoring.bm25_rank_to_score(-5.0) * day, abs=1e-4)
    assert out.results[0].chunk_id == 2


def test_evolve_refuses_unknown_fields() -> None:
    with pytest.raises(TypeError, match="no field scroe"):
        cand(1).evolve(scroe=1.0)


def test_search_defaults_are_the_settings_defaults() -> None:
    """One source of truth: an empty memorySearch block ranks like ``SearchOptions()``."""
    from engine.config.settings import HybridSettings, MemorySearchSettings

    assert SearchOptions.from_settings(MemorySearchSettings()) == SearchOptions()
    assert (
        HybridSettings.vector_weight,
        HybridSettings.text_weight,
        HybridSettings.rrf_k,
    ) == (scoring.DEFAULT_VECTOR_WEIGHT, scoring.DEFAULT_TEXT_WEIGHT, scoring.RRF_K)
    # the one weight normalisation, also behind the TUI's weight toggle
    assert scoring.normalize_weights(0.0, 0.0) == (0.7, 0.3)
    assert scoring.normalize_weights(3.0, 1.0) == (0.5, 0.5)  # clamped to 1 before scaling


# -- the calibrated fusion's words and names -----------------------------------------
def _named_retrieval() -> Retrieval:
    """Query "atlas rehearsal": a project note named Atlas, a daily log that mentions
    both words, one holding "atlas" twice but no "rehearsal", and a log whose section
    heading names Atlas; equal cosines, so the words and the names decide."""
    rows = [
        ChunkRow(1, "memory/projects/atlas.md", "memory", 1, 4, "# Atlas\n\nThe billing move."),
        ChunkRow(2, "memory/2026-11-14.md", "memory", 1, 3, "# 2026-11-14\n- Atlas rehearsal."),
        ChunkRow(3, "memory/2026-11-15.md", "memory", 1, 3, "# 2026-11-15\n- Atlas, atlas."),
        ChunkRow(4, "memory/2026-11-16.md", "memory", 1, 4, "# 2026-11-16\n## Atlas\n- ok"),
    ]
    r = retrieval(
        [(2, -3.0), (3, -2.5), (1, -1.0), (4, -1.0)],
        [(i, 0.5) for i in (1, 2, 3, 4)],
        rows,
        cosines={i: 0.5 for i in (1, 2, 3, 4)},
    )
    return dataclasses.replace(
        r,
        query="atlas rehearsal",
        query_idf_sum=1.0,
        word_weights={
            "atlas": (scoring.word_weight(4, 10), 10, 4),
            "rehearsal": (scoring.word_weight(0, 10), 10, 0),
        },
        word_counts={
            1: {"atlas": 1},
            2: {"atlas": 1, "rehearsal": 1},
            3: {"atlas": 2},  # twice, no "rehearsal"
            4: {"atlas": 1},
        },
        chunk_lengths=dict.fromkeys((1, 2, 3, 4), scoring.REFERENCE_LENGTH),
    )


def test_word_weights_are_fts5s_idf_with_a_printable_floor() -> None:
    # ln((N − n + 0.5) ÷ (n + 0.5)), as FTS5's bm25 weighs a word
    assert scoring.word_weight(2, 10) == pytest.approx(math.log(8.5 / 2.5))
    assert scoring.word_weight(0, 10) == pytest.approx(math.log(10.5 / 0.5))
    # in half the chunks or more: the floor, where FTS5 puts 1e-6
    assert scoring.fts5_idf(6, 10) == 1e-6
    assert scoring.word_weight(6, 10) == scoring.word_weight(10, 10) == scoring.WORD_WEIGHT_FLOOR
    # continuous: just under half the chunks the weight is already near the floor
    assert scoring.word_weight(499, 1000) < 0.01 + 1e-9
    # a function word carries no topic: the floor, however seldom the memory holds it
    assert scoring.word_weight(0, 10, function_word=True) == scoring.WORD_WEIGHT_FLOOR


def test_a_chunk_missing_a_query_word_cannot_reach_the_full_text_side() -> None:
    r = _named_retrieval()
    opts = SearchOptions(min_score=0.0, name_weight=0.0)
    out = {c.chunk_id: c for c in rank(r, opts, TODAY).candidates}
    wa, wr = round(scoring.word_weight(4, 10), 4), round(scoring.word_weight(0, 10), 4)
    total = round(wa + wr, 4)
    # "atlas" twice in a chunk of the reference length: 2 × 2.2 ÷ (2 + 1.2), whatever
    # else the index holds
    assert out[3].text_words is not None
    assert out[3].text_words[0].strength == round(2 * 2.2 / 3.2, 4) == 1.375
    # chunk 3 lacks "rehearsal": capped at 1 − 0.5 × its share, below 1
    cap = 1 - scoring.MISSING_WORD_COST * wr / total
    kappa = scoring.CALIBRATED_TEXT_SCALE
    assert out[3].text_component == round(min(cap, wa * 1.375 / (kappa * total)), 4) < 1.0
    # both words, once each: Σ w × 1 ÷ (κ × Σ w) ≥ 1, the full text side
    assert out[2].text_component == 1.0
    line = explain.words_text_line(out[3])
    assert line is not None and explain.agrees(line)
    assert str(line) == (
        f"min(1 − {scoring.MISSING_WORD_COST:g}×{wr:.4f} ÷ {total:.4f},"
        f" ({wa:.4f}×1.3750) ÷ ({kappa:g} × {total:.4f}))"
        f" = {out[3].text_component:.4f}"
    )
    full = explain.words_text_line(out[2])
    assert full is not None and str(full).startswith("min(1, (") and explain.agrees(full)
    assert [str(x) for x in explain.strength_lines(out[3])] == [
        "2×2.2 ÷ (2 + 1.2×(0.25 + 0.75×250 ÷ 250)) = 1.3750"
    ]
    # a chunk a fifth of the reference length: one occurrence counts more
    assert scoring.tf_strength(1, 50) == 2.2 / (1 + 1.2 * (0.25 + 0.75 * 50 / 250))


def test_a_chunk_named_by_the_query_closes_part_of_its_gap_to_one() -> None:
    r = _named_retrieval()
    g = scoring.NAME_WEIGHT
    out = {c.chunk_id: c for c in rank(r, SearchOptions(min_score=0.0), TODAY).candidates}
    wa, wr = round(scoring.word_weight(4, 10), 4), round(scoring.word_weight(0, 10), 4)
    note, log, section = out[1], out[2], out[4]
    # the note's path and title hold "atlas": N = wa ÷ (wa + wr)
    assert note.name_terms == ("atlas",) and note.name_section_terms == ()
    assert note.name_share == round(wa / (wa + wr), 4)
    assert note.name_base is not None
    want = round(note.name_base + g * note.name_share * (1 - note.name_base), 4)
    assert note.fused_score == want
    assert note.name_bonus == round(want - note.name_base, 4)
    # a section heading names a part: its words count half
    assert section.name_section_terms == ("atlas",)
    assert section.name_share == round(scoring.SECTION_SHARE * wa / (wa + wr), 4)
    # the daily log's title is its date: no name, no bonus
    assert log.name_share == 0.0 and log.name_bonus == 0.0 and log.name_base is None
    for c in out.values():  # every printed line is its arithmetic; the bar adds up
        for line in explain.all_lines(c, SearchOptions(min_score=0.0)):
            assert explain.agrees(line), str(line)
        assert c.parts is not None and c.parts.bar_total == pytest.approx(c.score, abs=1e-9)
    assert note.parts is not None and note.parts.bar_name == note.name_bonus


def test_the_name_weight_zero_turns_the_name_signal_off() -> None:
    r = _named_retrieval()
    out = rank(r, SearchOptions(min_score=0.0, name_weight=0.0), TODAY).candidates
    assert all(c.name_bonus == 0.0 and c.name_base is None for c in out)
    assert all(explain.name_line(c) is None for c in out)


def test_words_found_together_in_the_best_unit_count_on_their_own() -> None:
    """Where the words sit: the text side is the larger of the chunk's and its best
    unit's, the unit reaching 1 at half the query's weight (κu 0.5)."""
    text = "# 2026-11-20\n- Atlas: nothing new.\n- The rehearsal went fine.\n- lunch"
    rows = [ChunkRow(7, "memory/2026-11-20.md", "memory", 1, 4, text)]
    r = dataclasses.replace(
        retrieval([(7, -2.0)], [(7, 0.5)], rows, cosines={7: 0.5}),
        query="atlas rehearsal staging",
        query_idf_sum=1.0,
        word_weights={
            "atlas": (0.4, 10, 4),
            "rehearsal": (1.6, 10, 1),
            "staging": (1.0, 10, 2),
        },
        word_counts={7: {"atlas": 1, "rehearsal": 1}},
        chunk_lengths={7: 500},  # a long chunk: each word at strength 0.7097
        line_hits={7: UnitHit(3, 0.6, 3)},  # line 3 holds "rehearsal"
    )
    c = rank(r, SearchOptions(min_score=0.0, feedback_weight=0.0), TODAY).candidates[0]
    s = round(scoring.tf_strength(1, 500), 4)
    # the chunk: (0.4 + 1.6) × s ÷ (κ × 3), under its cap 1 − 0.25 × 1 ÷ 3
    assert scoring.CALIBRATED_TEXT_SCALE == 0.8
    assert c.text_chunk == round((0.4 * s + 1.6 * s) / (0.8 * 3.0), 4) == 0.5914
    assert c.unit_terms == ("rehearsal",)
    # the unit: 1.6 ÷ (0.5 × 3) above 1, capped at 1 − 0.25 × (0.4 + 1) ÷ 3
    assert c.text_unit == round(1 - scoring.MISSING_WORD_COST * 1.4 / 3.0, 4) == 0.8833
    assert c.text_component == c.text_unit
    for line in (explain.unit_text_line(c), explain.text_max_line(c)):
        assert line is not None and explain.agrees(line), line
    assert str(explain.text_max_line(c)) == "max(0.5914, 0.8833) = 0.8833"
    assert str(explain.unit_text_line(c)) == (
        "min(1 − 0.25×(0.4000 + 1.0000) ÷ 3.0000, (1.6000) ÷ (0.5 × 3.0000)) = 0.8833"
    )
