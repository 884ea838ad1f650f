"""Score formulas (docs/architecture.md "Scoring"): bm25 mapping, merge, normalisation,
RRF, decay, MMR."""

from __future__ import annotations

import datetime as dt
import math
import random

import numpy as np
import pytest

from engine.index.tokens import similarity_tokens
from engine.search.scoring import (
    MMRItem,
    MMRPick,
    age_days,
    bm25_rank_to_score,
    candidate_count,
    date_from_path,
    decay_multiplier,
    is_evergreen,
    minmax_normalize,
    mmr_rerank,
    normalize_weights,
    rrf_score,
    weighted_sum,
    zscore_normalize,
)

# --- bm25 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rank", "expected"),
    [
        (-5.0, 5 / 6),
        (-0.5, 1 / 3),
        (0.0, 1.0),
        (3.0, 0.25),
        (-1.0, 0.5),
        (-1e9, 1e9 / (1 + 1e9)),
        (math.nan, 0.001),
        (math.inf, 0.001),
        (-math.inf, 0.001),
    ],
)
def test_bm25_rank_to_score(rank: float, expected: float) -> None:
    assert bm25_rank_to_score(rank) == pytest.approx(expected)


def test_bm25_stronger_match_scores_higher_and_stays_below_one() -> None:
    ranks = [-20.0, -8.0, -3.0, -1.0, -0.1, -0.001]
    scores = [bm25_rank_to_score(r) for r in ranks]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < s < 1.0 for s in scores)


# --- candidates and weights ------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_results", "multiplier", "expected"),
    [
        (6, 4, 24),
        (100, 4, 200),
        (50, 20, 200),
        (0, 4, 1),
        (6, 0.5, 3),
        (5, 1.5, 7),
        (1, 0.1, 1),
        (6, math.nan, 1),
        (6, math.inf, 200),
    ],
)
def test_candidate_count(max_results: int, multiplier: float, expected: int) -> None:
    assert candidate_count(max_results, multiplier) == expected


@pytest.mark.parametrize(
    ("vw", "tw", "expected"),
    [
        (0.7, 0.3, (0.7, 0.3)),
        (0.35, 0.15, (0.7, 0.3)),
        (2.0, 1.0, (0.5, 0.5)),
        (0.0, 0.0, (0.7, 0.3)),
        (-1.0, -2.0, (0.7, 0.3)),
        (-1.0, 0.5, (0.0, 1.0)),
        (1.0, 0.0, (1.0, 0.0)),
        (math.nan, 0.4, (0.0, 1.0)),
    ],
)
def test_normalize_weights(vw: float, tw: float, expected: tuple[float, float]) -> None:
    got = normalize_weights(vw, tw)
    assert got == pytest.approx(expected)
    assert sum(got) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("v", "t", "expected"),
    [
        (0.9, None, 0.63),
        (None, 1.0, 0.3),
        (0.5, 0.5, 0.5),
        (None, None, 0.0),
        (1.0, 1.0, 1.0),
        (0.8, 0.2, 0.62),
    ],
)
def test_weighted_sum_spec_numbers(v: float | None, t: float | None, expected: float) -> None:
    assert weighted_sum(v, t, 0.7, 0.3) == pytest.approx(expected)


# --- normalisation and fusion ------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], []),
        ([5.0], [1.0]),
        ([2.0, 2.0, 2.0], [1.0, 1.0, 1.0]),
        ([1.0, 2.0, 3.0], [0.0, 0.5, 1.0]),
        ([3.0, 1.0, 2.0], [1.0, 0.0, 0.5]),
        ([-4.0, 0.0, 4.0], [0.0, 0.5, 1.0]),
        ([0.31, 0.62], [0.0, 1.0]),
    ],
)
def test_minmax_normalize(values: list[float], expected: list[float]) -> None:
    assert minmax_normalize(values) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], []),
        ([0.4], [1.0]),
        ([7.0, 7.0], [1.0, 1.0]),
        ([1.0, 2.0, 3.0], [1 - 0.8896643190400766, 0.5, 0.8896643190400766]),
        ([0.2, 0.4, 0.9], [0.15408977373352706, 0.36704759115973795, 0.9128843058759875]),
    ],
)
def test_zscore_normalize(values: list[float], expected: list[float]) -> None:
    assert zscore_normalize(values) == pytest.approx(expected)


def test_zscore_normalize_is_order_preserving_and_in_unit_interval() -> None:
    rng = random.Random(7)
    values = [rng.uniform(-3, 3) for _ in range(50)]
    out = zscore_normalize(values)
    assert all(0.0 <= x <= 1.0 for x in out)
    order = sorted(range(50), key=lambda i: values[i])
    assert [out[i] for i in order] == sorted(out)


@pytest.mark.parametrize(
    ("rank", "k", "expected"),
    [(1, 60, 1 / 61), (2, 60, 1 / 62), (10, 60, 1 / 70), (1, 0, 1.0), (3, 1, 0.25)],
)
def test_rrf_score(rank: int, k: int, expected: float) -> None:
    assert rrf_score(rank, k) == pytest.approx(expected)


def test_rrf_default_k_and_sum_over_lists() -> None:
    assert rrf_score(1) == pytest.approx(0.016393442622950)
    # Rank 1 in one list + rank 3 in the other.
    assert rrf_score(1) + rrf_score(3) == pytest.approx(1 / 61 + 1 / 63)


@pytest.mark.parametrize("rank", [0, -1])
def test_rrf_rejects_zero_based_rank(rank: int) -> None:
    with pytest.raises(ValueError):
        rrf_score(rank)


# --- temporal decay ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "half_life", "expected"),
    [
        (0.0, 30.0, 1.0),
        (10.0, 30.0, 0.7937),
        (30.0, 30.0, 0.5),
        (60.0, 30.0, 0.25),
        (90.0, 30.0, 0.125),
        (365.0, 30.0, 2 ** (-365 / 30)),
        (7.0, 7.0, 0.5),
        (1.0, 1.0, 0.5),
        (-5.0, 30.0, 1.0),
        (10.0, 0.0, 1.0),
        (10.0, -3.0, 1.0),
        (10.0, math.nan, 1.0),
        (math.inf, 30.0, 1.0),
        (math.nan, 30.0, 1.0),
    ],
)
def test_decay_multiplier(age: float, half_life: float, expected: float) -> None:
    assert decay_multiplier(age, half_life) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("memory/2026-01-05.md", dt.date(2026, 1, 5)),
        ("memory/notes-2026-01-05-standup.md", dt.date(2026, 1, 5)),
        ("memory/2026-02/2026-02-15.md", dt.date(2026, 2, 15)),
        ("memory\\2026-03-01.md", dt.date(2026, 3, 1)),
        ("notes/2024-02-29.md", dt.date(2024, 2, 29)),
        ("ticket-92025-06-15.md", None),
        ("memory/2025-06-150.md", None),
        ("memory/2026-13-40.md", None),
        ("memory/2025-02-29.md", None),
        ("memory/2026-1-5.md", None),
        ("memory/2026-01-05/notes.md", None),  # folders do not date their files
        ("memory/2026-13-01_2026-01-02.md", dt.date(2026, 1, 2)),
        ("MEMORY.md", None),
        ("", None),
    ],
)
def test_date_from_path(path: str, expected: dt.date | None) -> None:
    assert date_from_path(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("MEMORY.md", True),
        ("memory.md", True),
        ("./MEMORY.md", True),
        ("memory/gtd/NEXT.md", True),
        ("memory/people.md", True),
        ("memory\\gtd\\NEXT.md", True),
        ("memory/2026-01-05.md", False),
        ("memory/notes-2026-01-05-standup.md", False),
        ("Memory.md", False),
        ("docs/MEMORY.md", False),
        ("notes/ideas.md", False),
        ("sessions/abc.jsonl", False),
        ("memoryx/a.md", False),
    ],
)
def test_is_evergreen(path: str, expected: bool) -> None:
    assert is_evergreen(path) is expected


TODAY = dt.date(2026, 1, 11)
MTIME_JAN_1_NOON_UTC = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(
    ("path", "mtime", "expected"),
    [
        ("MEMORY.md", MTIME_JAN_1_NOON_UTC, None),
        ("memory/gtd/NEXT.md", MTIME_JAN_1_NOON_UTC, None),
        ("memory/2026-01-01.md", None, 10.0),
        ("memory/2026-01-01.md", dt.datetime(2026, 1, 10, tzinfo=dt.UTC).timestamp(), 10.0),
        ("memory/2025-12-12.md", None, 30.0),
        ("memory/2026-01-11.md", None, 0.0),
        ("memory/2026-02-01.md", None, 0.0),  # future: no boost
        ("notes/2026-01-06-retro.md", None, 5.0),  # dated extraPath
        ("sessions/abc.jsonl", MTIME_JAN_1_NOON_UTC, 10.0),
        ("notes/ideas.md", MTIME_JAN_1_NOON_UTC, 10.0),
        ("notes/ideas.md", None, None),
        ("notes/ideas.md", math.nan, None),
        ("notes/ideas.md", dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp(), 0.0),
    ],
)
def test_age_days(path: str, mtime: float | None, expected: float | None) -> None:
    assert age_days(path, mtime, TODAY) == expected


def test_decay_pipeline_example() -> None:
    age = age_days("memory/2025-12-12.md", None, TODAY)
    assert age is not None
    assert 0.8 * decay_multiplier(age, 30) == pytest.approx(0.4)


# --- MMR ---------------------------------------------------------------------------------------


def item(key: str, score: float, text: str, vector: list[float] | None = None) -> MMRItem:
    vec = None if vector is None else np.asarray(vector, dtype=np.float32)
    return MMRItem(key=key, score=score, tokens=similarity_tokens(text), vector=vec)


def summary(picks: list[MMRPick]) -> list[tuple[str, float, float, float]]:
    return [(p.key, p.relevance, p.max_similarity, p.mmr_score) for p in picks]


def assert_picks(picks: list[MMRPick], expected: list[tuple[str, float, float, float]]) -> None:
    """Keys exactly, (relevance, max_similarity, mmr_score) to 1e-6."""
    assert [p.key for p in picks] == [e[0] for e in expected]
    for pick, (_key, rel, sim, mmr) in zip(picks, expected, strict=True):
        assert (pick.relevance, pick.max_similarity, pick.mmr_score) == pytest.approx(
            (rel, sim, mmr), abs=1e-6
        )


def test_mmr_empty_and_single() -> None:
    assert mmr_rerank([], 0.7) == []
    (pick,) = mmr_rerank([item("a", 0.4, "x y")], 0.7)
    assert pick == MMRPick("a", 0, 0, 1.0, 0.0, 0.7)


def test_mmr_three_items_no_reorder_at_half_lambda() -> None:
    # rel = [1, 0.8, 0]; jaccard(A,B) = |{a,b}| / |{a,b,c,d}| = 0.5
    items = [item("A", 1.0, "a b c"), item("B", 0.9, "a b d"), item("C", 0.5, "x y")]
    picks = mmr_rerank(items, 0.5)
    assert_picks(picks, [("A", 1.0, 0.0, 0.5), ("B", 0.8, 0.5, 0.15), ("C", 0.0, 0.0, 0.0)])
    assert [p.position for p in picks] == [0, 1, 2]
    assert [p.original_position for p in picks] == [0, 1, 2]


def test_mmr_three_items_diversity_wins_at_low_lambda() -> None:
    # λ=0.3: B = 0.3*0.8 - 0.7*0.5 = -0.11 loses to C = 0.
    items = [item("A", 1.0, "a b c"), item("B", 0.9, "a b d"), item("C", 0.5, "x y")]
    picks = mmr_rerank(items, 0.3)
    assert [p.key for p in picks] == ["A", "C", "B"]
    assert_picks(picks, [("A", 1.0, 0.0, 0.3), ("C", 0.0, 0.0, 0.0), ("B", 0.8, 0.5, -0.11)])
    assert [p.original_position for p in picks] == [0, 2, 1]
    assert [p.position for p in picks] == [0, 1, 2]


def test_mmr_four_items_duplicate_sinks() -> None:
    # D duplicates A: scores [1, .9, .5, .7] → rel [1, .8, 0, .4]; sim(D,A)=1.
    items = [
        item("A", 1.0, "a b c"),
        item("B", 0.9, "a b d"),
        item("C", 0.5, "x y"),
        item("D", 0.7, "A, b; C!"),
    ]
    picks = mmr_rerank(items, 0.5)
    assert_picks(
        picks,
        [
            ("A", 1.0, 0.0, 0.5),
            ("B", 0.8, 0.5, 0.15),
            ("C", 0.0, 0.0, 0.0),
            ("D", 0.4, 1.0, -0.3),
        ],
    )
    assert [p.original_position for p in picks] == [0, 1, 2, 3]
    # Plain sort would have put D third.
    assert [p.key for p in mmr_rerank(items, 1.0)] == ["A", "B", "D", "C"]


def test_mmr_cosine_mode() -> None:
    # rel [1, .5, 0]; cos(A,B)=.6, cos(A,C)=0, cos(B,C)=.8
    items = [
        item("A", 1.0, "same words", [1.0, 0.0]),
        item("B", 0.8, "same words", [0.6, 0.8]),
        item("C", 0.6, "same words", [0.0, 1.0]),
    ]
    picks = mmr_rerank(items, 0.5, "cosine")
    assert_picks(picks, [("A", 1.0, 0.0, 0.5), ("C", 0.0, 0.0, 0.0), ("B", 0.5, 0.8, -0.15)])
    # The same items under Jaccard are identical texts: B and C both have sim 1.
    jac = mmr_rerank(items, 0.5, "jaccard")
    assert_picks(jac, [("A", 1.0, 0.0, 0.5), ("B", 0.5, 1.0, -0.25), ("C", 0.0, 1.0, -0.5)])


def test_mmr_cosine_negative_similarity_counts_as_zero() -> None:
    items = [item("A", 1.0, "p", [1.0, 0.0]), item("B", 0.5, "q", [-1.0, 0.0])]
    picks = mmr_rerank(items, 0.5, "cosine")
    assert picks[1].max_similarity == 0.0


def test_mmr_cosine_falls_back_to_jaccard_without_vector() -> None:
    items = [
        item("A", 1.0, "a b c", [1.0, 0.0]),
        item("B", 0.9, "a b d"),  # no vector → jaccard 0.5 with A
        item("C", 0.5, "x y", [1.0, 0.0]),  # cos 1 with A
    ]
    picks = mmr_rerank(items, 0.5, "cosine")
    by_key = {p.key: p for p in picks}
    assert by_key["B"].max_similarity == pytest.approx(0.5)
    assert by_key["C"].max_similarity == pytest.approx(1.0)


def test_mmr_ties_keep_original_order() -> None:
    items = [item(k, 1.0, "same text") for k in "abcd"]
    picks = mmr_rerank(items, 0.5)
    assert [p.key for p in picks] == list("abcd")
    assert [p.max_similarity for p in picks] == [0.0, 1.0, 1.0, 1.0]
    assert [p.relevance for p in picks] == [1.0] * 4


def test_mmr_tie_on_mmr_score_broken_by_original_score() -> None:
    # λ=0: mmr = -maxSim. After A, B and C both have maxSim 0 → the higher score wins
    # although C comes first in the input.
    items = [item("A", 1.0, "a"), item("C", 0.2, "c"), item("B", 0.6, "b"), item("Z", 0.0, "z")]
    assert [p.key for p in mmr_rerank(items, 0.0)] == ["A", "B", "C", "Z"]


def test_mmr_lambda_is_clamped() -> None:
    items = [item("A", 1.0, "a b c"), item("B", 0.9, "a b d"), item("C", 0.5, "x y")]
    assert summary(mmr_rerank(items, 5.0)) == summary(mmr_rerank(items, 1.0))
    assert summary(mmr_rerank(items, -2.0)) == summary(mmr_rerank(items, 0.0))


def test_mmr_bad_similarity_mode() -> None:
    with pytest.raises(ValueError):
        mmr_rerank([item("a", 1.0, "x")], 0.5, "euclid")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(25))
def test_mmr_lambda_one_equals_stable_sort(seed: int) -> None:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "東京", "x"]
    items = [
        item(
            f"k{i}",
            rng.choice([0.1, 0.5, 0.5, 0.9, rng.random()]),
            " ".join(rng.choice(words) for _ in range(rng.randint(1, 5))),
        )
        for i in range(rng.randint(1, 40))
    ]
    expected = [it.key for it in sorted(items, key=lambda it: -it.score)]
    picks = mmr_rerank(items, 1.0)
    assert [p.key for p in picks] == expected
    assert picks[0].max_similarity == 0.0


@pytest.mark.parametrize("seed", range(10))
def test_mmr_is_a_permutation_with_consistent_numbers(seed: int) -> None:
    rng = random.Random(100 + seed)
    items = [
        item(f"k{i}", rng.random(), f"w{rng.randint(0, 5)} w{rng.randint(0, 5)}") for i in range(30)
    ]
    lam = rng.random()
    picks = mmr_rerank(items, lam)
    assert sorted(p.original_position for p in picks) == list(range(30))
    assert [p.position for p in picks] == list(range(30))
    for p in picks:
        assert p.mmr_score == pytest.approx(lam * p.relevance - (1 - lam) * p.max_similarity)
        assert 0.0 <= p.max_similarity <= 1.0
        assert items[p.original_position].key == p.key


def test_mmr_ranks_all_200_candidates() -> None:
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(2000)]
    items = [
        item(f"k{i}", rng.random(), " ".join(rng.choice(vocab) for _ in range(120)))
        for i in range(200)
    ]
    picks = mmr_rerank(items, 0.7)
    assert len(picks) == 200

    vecs = np.random.default_rng(0).normal(size=(200, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for it, vec in zip(items, vecs, strict=True):
        it.vector = vec
    assert len(mmr_rerank(items, 0.7, "cosine")) == 200
