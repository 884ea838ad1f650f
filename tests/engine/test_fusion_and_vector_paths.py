"""The geometric fusion, the OR fallback's term pruning and the numpy vector matrix.

These are the ranking and speed changes made for the benchmarks (README
"Benchmarks"); each test checks real numbers on a real SQLite index.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.index.store import NewChunk, Store
from engine.search import explain, scoring
from engine.search import retrieve as search
from engine.search.rank import rank
from engine.search.scoring import (
    CALIBRATED_TEXT_SCALE,
    GEOMETRIC_FLOOR,
    fts5_idf,
    weighted_geometric,
)
from tests.engine_fixtures import FIXED_TODAY, write


def test_weighted_geometric_floors_and_neutral_side() -> None:
    assert weighted_geometric(1.0, 1.0, 0.7, 0.3) == pytest.approx(1.0)
    assert weighted_geometric(0.5, 0.25, 0.7, 0.3) == pytest.approx(0.5**0.7 * 0.25**0.3)
    # a missing match is demoted to the floor, never zeroed
    assert weighted_geometric(0.0, 0.0, 0.7, 0.3) == pytest.approx(GEOMETRIC_FLOOR)
    # None = the side has no signal for this query: neutral
    assert weighted_geometric(0.64, None, 0.7, 0.3) == pytest.approx(0.64**0.7)


def test_geometric_fusion_scores_every_candidate_on_both_sides(concept_engine) -> None:
    # One candidate per side. FTS (OR): the train note (shortest match) is first, so
    # MEMORY.md ("tablet") is not on the FTS list; vector: MEMORY.md (cat + medicine)
    # is first, so the train note is not on the vector list.
    opts = concept_engine.default_options().with_(
        fusion="geometric", min_score=0.0, max_results=1, candidate_multiplier=1
    )
    out = concept_engine.search("kitten tablet train", opts, today=FIXED_TODAY)
    assert out.fusion == "geometric" and out.retrieval.fts_operator == "OR"
    cands = {c.path: c for c in out.candidates}
    assert set(cands) == {"memory/2026-03-14.md", "MEMORY.md"}
    train, memory = cands["memory/2026-03-14.md"], cands["MEMORY.md"]
    assert train.lists == ("fts",) and memory.lists == ("vector",)
    # Both scores filled in anyway: query (cat, medicine, train)/√3 against
    # MEMORY.md (cat, medicine)/√2 and the train note (train).
    assert memory.vector_score == pytest.approx(2 / np.sqrt(6), abs=1e-4)
    assert train.vector_score == pytest.approx(1 / np.sqrt(3), abs=1e-4)
    assert memory.bm25_rank is not None and train.bm25_rank is not None
    assert train.bm25_rank < memory.bm25_rank < 0
    t_mem = memory.bm25_rank / train.bm25_rank
    v_train = train.vector_score / memory.vector_score
    # every number rounded to the 4 decimals the breakdown prints
    assert (train.vector_component, train.text_component) == (round(v_train, 4), 1.0)
    assert (memory.vector_component, memory.text_component) == (1.0, round(t_mem, 4))
    assert train.score == round(train.vector_component**0.7, 4)
    assert memory.score == round(memory.text_component**0.3, 4)
    assert "^0.700 ×" in explain.formula(train)
    # Replaying the same retrieval with OpenClaw's weighted sum keeps "missing side = 0".
    weighted = {c.path: c for c in rank(out.retrieval, opts.with_(fusion="weighted")).candidates}
    assert weighted["memory/2026-03-14.md"].vector_score is None
    assert weighted["MEMORY.md"].bm25_rank is None
    assert weighted["MEMORY.md"].score == round(0.7 * memory.vector_score, 4)


def test_geometric_semantic_only_queries_still_rank(concept_engine) -> None:
    opts = concept_engine.default_options().with_(min_score=0.0, fusion="geometric")
    out = concept_engine.search("kitten medication", opts)
    # no chunk holds a query word: the text side is neutral, the vector side ranks
    assert out.retrieval.fts_hits == []
    top = out.results[0]
    assert top.path == "MEMORY.md" and top.text_component is None
    assert top.score == pytest.approx(1.0)


def test_calibrated_is_the_default_and_scores_on_an_absolute_scale(concept_engine) -> None:
    assert concept_engine.default_options().fusion == "calibrated"
    out = concept_engine.search(
        "kitten medication", concept_engine.default_options().with_(min_score=0.0)
    )
    # no chunk holds a query word: the text side is 0 (not neutral), and the top
    # hit scores 0.7 × its cosine — not 1.0 as a ratio to the best would
    assert out.retrieval.fts_hits == []
    top = out.results[0]
    assert top.path == "MEMORY.md" and top.text_component == 0.0
    # the concept embedder has no line vectors: the chunk's cosine is the vector side
    assert top.best_line is None and top.vector_input == top.vector_score
    assert top.vector_component == top.vector_score
    assert top.score == round(0.7 * top.vector_score, 4)
    # a query word the index has: bm25 ÷ (κ × Σidf), at most 1
    hit = concept_engine.search(
        "train", concept_engine.default_options().with_(min_score=0.0)
    ).results[0]
    n = concept_engine.store.term_doc_counts(["train"])["train"]
    idf = round(fts5_idf(n, concept_engine.store.fts_row_count()), 4)
    assert hit.text_ref == (CALIBRATED_TEXT_SCALE, idf)
    expected = min(1.0, -hit.bm25_rank / (CALIBRATED_TEXT_SCALE * idf))
    assert hit.text_component == round(expected, 4)


def test_a_cosine_calibration_maps_the_vector_side_and_prints_its_arithmetic(
    concept_engine, monkeypatch
) -> None:
    """The fitted calibration is the identity ([0, 1], README "Benchmarks"); any other
    pair maps V linearly and clamps, and the breakdown line evaluates to V."""
    opts = concept_engine.default_options().with_(min_score=0.0)
    plain = {c.chunk_id: c for c in concept_engine.search("kitten medication", opts).candidates}
    unmoved = concept_engine.search("kitten medication", opts.with_(feedback_weight=0.0)).candidates
    monkeypatch.setattr(scoring, "CALIBRATED_COSINE_ZERO", 0.1)
    monkeypatch.setattr(scoring, "CALIBRATED_COSINE_ONE", 0.6)
    out = concept_engine.search("kitten medication", opts)
    for c in out.candidates:
        assert c.vector_input == plain[c.chunk_id].vector_input
        assert c.vector_ref == (0.1, 0.6)
        expected = min(1.0, max(0.0, (c.vector_input - 0.1) / (0.6 - 0.1)))
        assert c.vector_component == round(expected, 4)
        line = explain.side_line(c, "vector")
        assert line is not None
        assert line.expression.startswith(f"min(1, max(0, ({explain.fmt(c.vector_input)} − 0.1)")
        assert explain.fmt(explain.evaluate(line.expression)) == line.result
        assert line.result == explain.fmt(c.vector_component)
        # with the feedback, the moved cosine is a line of its own before the mapping
        step = explain.moved_step(c)
        assert (step is None) == (c.feedback_norm is None), c
        if step is not None:
            assert step.result == explain.fmt(c.vector_input) and explain.agrees(step)
    assert any(c.feedback_norm is not None for c in out.candidates)
    # without the feedback the identity prints no line unless the cosine is negative
    # (then max(0, …)); with it, the line is the moved cosine's arithmetic
    for c in [*plain.values(), *unmoved]:
        assert c.vector_ref == (0.0, 1.0)
        line = explain.side_line(c, "vector")
        if c.feedback_norm is None:
            assert (line is None) == (c.vector_input is not None and c.vector_input >= 0)
        else:
            assert line == explain.moved_line(c) and line is not None and explain.agrees(line)
    assert any(c.feedback_norm is None for c in unmoved)


def test_or_fallback_drops_terms_found_in_half_the_chunks(make_engine, workspace_dir, monkeypatch):
    for i in range(6):
        extra = " zebra" if i == 0 else (" quokka" if i == 1 else "")
        write(workspace_dir, f"memory/n{i}.md", f"the weekly note{extra}\n")
    eng = make_engine(provider=None)
    eng.sync()
    opts = eng.default_options().with_(min_score=0.0)
    small = eng.search("the zebra quokka", opts)  # AND finds nothing: OR fallback
    assert small.retrieval.fts_operator == "OR"
    assert small.retrieval.fts_query == '"the" OR "zebra" OR "quokka"'  # small index: all kept
    monkeypatch.setattr(search, "PRUNE_MIN_ROWS", 1)
    pruned = eng.search("the zebra quokka", opts)
    # "the" is in 6 of 6 chunks: FTS5 clamps its idf, so it cannot change a ranking
    assert pruned.retrieval.fts_query == '"zebra" OR "quokka"'
    assert {c.path for c in pruned.results} == {"memory/n0.md", "memory/n1.md"}
    assert [c.path for c in pruned.results] == [c.path for c in small.results][:2]
    # every word common: all are kept rather than searching nothing
    assert eng.search("the weekly", opts).retrieval.fts_hits


def test_numpy_matrix_follows_edits_without_reloading(tmp_path) -> None:
    store = Store(tmp_path / "index.sqlite")
    store.set_dims(8)
    rng = np.random.default_rng(3)
    pick = random.Random(5)

    def put(path: str, n: int) -> None:
        chunks = [
            NewChunk(i + 1, i + 1, f"{path}-{i}-{rng.random()}", "text", rng.standard_normal(8))
            for i in range(n)
        ]
        store.replace_file(
            path=path, source="memory", file_hash="h", mtime=1.0, size=1, model="m", chunks=chunks
        )

    def table() -> dict[int, np.ndarray]:
        rows = store.db.execute("select id, embedding from chunks")
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}

    for f in range(20):
        put(f"memory/f{f}.md", 4)
    store.vector_matrix(["memory"])
    first = store._matrix_cache
    for _ in range(60):
        roll = pick.random()
        if roll < 0.5:
            put(f"memory/f{pick.randrange(24)}.md", pick.randrange(1, 7))
        elif roll < 0.7:
            store.remove_files([f"memory/f{pick.randrange(24)}.md"])
        else:  # the newest file again: SQLite hands its rowids out a second time
            put("memory/f19.md", pick.randrange(1, 4))
        ids, matrix = store.vector_matrix(["memory"]).view()
        expected = table()
        assert sorted(ids.tolist()) == sorted(expected)
        for cid, row in zip(ids.tolist(), matrix, strict=True):
            np.testing.assert_array_equal(row, expected[cid])
        q = rng.standard_normal(8).astype(np.float32)
        best = max(expected, key=lambda i: float(expected[i] @ q))
        assert store.vector_search(q, 1, ["memory"], path="numpy")[0][0] == best
    assert store._matrix_cache is first  # refreshed in place, never rebuilt
    store.close()
