"""The search pipeline end to end on a real index, with numbers worked by hand."""

from __future__ import annotations

import math

import pytest

from engine.search import explain, scoring
from engine.search.explain import formula
from engine.search.rank import rank
from engine.search.scoring import bm25_rank_to_score
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import FIXED_TODAY, write


@pytest.fixture
def pipeline_engine(make_concept_engine):
    """The concept notes (tests/engine_fixtures.py) and a to-do list in a sub-folder."""
    return make_concept_engine({"memory/gtd/NEXT.md": "Buy coffee beans.\n"})


def test_semantic_match_without_shared_words_comes_from_the_vector_side(pipeline_engine) -> None:
    opts = pipeline_engine.default_options().with_(fusion="weighted", min_score=0.0)
    out = pipeline_engine.search("kitten medication", opts, today=FIXED_TODAY)
    top = out.results[0]
    assert top.path == "MEMORY.md"
    assert top.lists == ("vector",)
    assert top.text_score is None and top.bm25_rank is None
    # cosine of (cat, medicine) query with a doc of cat×2 (miso, cat) + medicine×2 = 1.0
    assert top.vector_score == pytest.approx(1.0, abs=1e-6)
    assert top.fused_score == pytest.approx(0.7 * 1.0)


def test_weighted_fusion_numbers(pipeline_engine) -> None:
    opts = pipeline_engine.default_options().with_(fusion="weighted", min_score=0.0)
    out = pipeline_engine.search("train", opts, today=FIXED_TODAY)
    hit = next(c for c in out.results if c.path == "memory/2026-03-14.md")
    assert hit.lists == ("fts", "vector")
    # rounded to the 4 printed decimals, from the rank as printed
    assert hit.text_score == round(bm25_rank_to_score(hit.bm25_rank), 4)
    assert hit.bm25_rank == round(hit.bm25_rank, 4)
    assert hit.vector_score == pytest.approx(1.0, abs=1e-4)
    assert hit.score == pytest.approx(0.7 * 1.0 + 0.3 * hit.text_score, abs=1e-4)
    assert "0.700×1.0000 + 0.300×" in formula(hit)


def test_normalized_fusion_puts_each_side_on_0_1(pipeline_engine) -> None:
    opts = pipeline_engine.default_options().with_(fusion="normalized", min_score=0.0)
    out = pipeline_engine.search("cat train", opts, today=FIXED_TODAY)
    vec = [c.vector_component for c in out.candidates if c.vector_component is not None]
    assert max(vec) == pytest.approx(1.0) and min(vec) == pytest.approx(0.0)


def test_rrf_is_scaled_so_first_on_both_lists_is_one(pipeline_engine) -> None:
    opts = pipeline_engine.default_options().with_(fusion="rrf", min_score=0.0)
    out = pipeline_engine.search("train", opts, today=FIXED_TODAY)
    top = out.results[0]
    assert top.fts_position == 1 and top.vector_position == 1
    assert top.score == pytest.approx(1.0)
    second = out.results[1]
    assert second.vector_position == 2 and second.fts_position is None
    assert second.score == pytest.approx(0.7 * (61 / 62), abs=1e-4)


def test_temporal_decay_uses_the_date_in_the_file_name(pipeline_engine) -> None:
    base = pipeline_engine.default_options().with_(
        fusion="weighted", min_score=0.0, decay_enabled=True
    )
    out = pipeline_engine.search("postgres migration", base, today=FIXED_TODAY)
    hit = next(c for c in out.results if c.path == "memory/2026-02-13.md")
    assert hit.age_days == 30
    assert hit.decay_multiplier == pytest.approx(0.5)
    assert hit.score == pytest.approx(hit.fused_score * 0.5, abs=1e-4)
    evergreen = pipeline_engine.search("cat", base, today=FIXED_TODAY).results[0]
    assert evergreen.path == "MEMORY.md" and evergreen.decay_multiplier == 1.0


def test_min_score_drops_with_reason_and_cut_beyond_max_results(pipeline_engine) -> None:
    opts = pipeline_engine.default_options().with_(fusion="weighted", min_score=0.4, max_results=1)
    out = pipeline_engine.search("cat train", opts, today=FIXED_TODAY)
    assert len(out.results) == 1
    reasons = {c.path: c.dropped for c in out.dropped}
    assert any(r and r.startswith("cut: beyond maxResults 1") for r in reasons.values())
    assert any(r and "< minScore 0.40" in r for r in reasons.values())
    assert {c.chunk_id for c in out.results}.isdisjoint({c.chunk_id for c in out.dropped})


def test_keyword_rescue_keeps_keyword_hits_when_min_score_empties_the_list(
    make_engine, workspace_dir
):
    write(workspace_dir, "memory/a.md", "zebra cat\n")
    write(workspace_dir, "memory/b.md", "misc notes\n")
    eng = make_engine(provider=ConceptEmbedder())
    eng.sync()
    opts = eng.default_options().with_(fusion="normalized", min_score=0.8)
    out = eng.search("zebra", opts)
    # b: vector-only, 0.7×1.0 = 0.7; a: keyword-only, 0.3×1.0 = 0.3. Both < 0.8, so
    # the rescue keeps keyword-backed hits ≥ min(minScore, textWeight) = 0.3: only a.
    assert out.rescue_used
    assert [(c.path, c.rescued) for c in out.results] == [("memory/a.md", True)]
    assert out.results[0].score == pytest.approx(0.3)
    b = next(c for c in out.dropped if c.path == "memory/b.md")
    assert b.score == pytest.approx(0.7) and "minScore 0.80" in (b.dropped or "")


def test_fts_only_engine_degrades_visibly(make_engine, workspace_dir) -> None:
    write(workspace_dir, "memory/a.md", "zebra\n")
    eng = make_engine(provider=None)
    eng.sync()
    out = eng.search("zebra", eng.default_options().with_(min_score=0.0))
    assert out.mode == "fts" and out.results[0].vector_weight == 0.0
    assert out.results[0].score == pytest.approx(out.results[0].text_score)
    assert eng.status().mode == "fts"


def test_mmr_reorders_and_records_its_numbers(make_engine, workspace_dir) -> None:
    write(workspace_dir, "memory/a.md", "cat cat pills\n")
    write(workspace_dir, "memory/b.md", "cat cat pills\n\n")
    write(workspace_dir, "memory/c.md", "cat train\n")
    eng = make_engine(provider=ConceptEmbedder())
    eng.sync()
    plain = eng.default_options().with_(fusion="weighted", min_score=0.0, mode="vector")
    out = eng.search("cat pills", plain)
    assert [c.path for c in out.results][:2] in (
        ["memory/a.md", "memory/b.md"],
        ["memory/b.md", "memory/a.md"],
    )
    mmr = rank(out.retrieval, plain.with_(mmr_enabled=True, mmr_lambda=0.3))
    order = [c.path for c in mmr.results]
    assert order[1] == "memory/c.md"  # the near-duplicate is pushed below the diverse hit
    second = mmr.results[1]
    assert second.mmr_position == 2 and second.sorted_position == 3 and second.mmr_shift == 1
    assert second.mmr_max_similarity == pytest.approx(1 / 3, abs=1e-4)  # {cat,train} vs {cat,pills}
    # λ·rel − (1−λ)·maxSim with rel(c) = 0 after min-max: 0.3×0 − 0.7×(1/3)
    assert second.mmr_score == pytest.approx(-0.7 / 3, abs=1e-4)
    assert mmr.results[0].mmr_max_similarity == 0.0


def test_rank_replays_without_touching_the_index(pipeline_engine) -> None:
    opts = pipeline_engine.default_options().with_(min_score=0.0)
    out = pipeline_engine.search("cat train coffee", opts, today=FIXED_TODAY)
    calls = pipeline_engine.provider.calls
    again = rank(out.retrieval, opts, FIXED_TODAY)
    assert [(c.chunk_id, c.score) for c in again.results] == [
        (c.chunk_id, c.score) for c in out.results
    ]
    fts_only = rank(out.retrieval, opts.with_(mode="fts"), FIXED_TODAY)
    assert fts_only.mode == "fts" and all(c.vector_score is None for c in fts_only.candidates)
    assert pipeline_engine.provider.calls == calls


def test_blank_query_searches_nothing(pipeline_engine) -> None:
    out = pipeline_engine.search("   ", pipeline_engine.default_options())
    assert out.results == [] and out.retrieval.fts_query is None


def test_decay_half_life_numbers() -> None:
    from engine.search.scoring import decay_multiplier

    assert decay_multiplier(10, 30) == pytest.approx(math.exp(-math.log(2) / 3), rel=1e-9)


def test_a_query_of_only_common_words_keeps_its_bm25_scale(make_engine, workspace_dir) -> None:
    # "atlas" is in 3 of 4 chunks: FTS5 clamps its idf to 1e-6, so raw ranks are ~-1e-6.
    write(workspace_dir, "memory/a.md", "Atlas cut-over.\n")
    write(
        workspace_dir,
        "memory/b.md",
        "Atlas rehearsal and atlas rollback plan for the atlas team.\n",
    )
    write(workspace_dir, "memory/c.md", "Atlas notes.\n")
    write(workspace_dir, "memory/d.md", "Coffee beans.\n")
    eng = make_engine(provider=None)
    eng.sync()
    opts = eng.default_options().with_(mode="fts", min_score=0.0)
    out = eng.search("atlas", opts, today=FIXED_TODAY)
    # idf = ln(1 + (4 - 3 + 0.5) / (3 + 0.5)) = ln(1.428571) = 0.356675
    assert out.retrieval.bm25_idf_scale == pytest.approx(0.356675 / 1e-6, rel=1e-4)
    scores = [c.score for c in out.results]
    assert len(scores) == 3 and all(0.15 < s < 0.5 for s in scores)
    # a query with a rare word is left on FTS5's own scale
    out = eng.search("coffee", opts, today=FIXED_TODAY)
    assert out.retrieval.bm25_idf_scale == 1.0
    assert [c.path for c in out.results] == ["memory/d.md"]


class StagedConcepts(ConceptEmbedder):
    """ConceptEmbedder as a staged provider: records the thread of each stage."""

    def __init__(self, fail_stage: bool = False) -> None:
        super().__init__()
        self.fail_stage = fail_stage
        self.staged_on: list[str] = []
        self.ran_on: list[str] = []

    def stage_query(self, text: str):
        import threading

        from engine.embeddings.base import ProviderError

        self.staged_on.append(threading.current_thread().name)
        if self.fail_stage:
            raise ProviderError("the model file went away")

        def rest():
            self.ran_on.append(threading.current_thread().name)
            return self.embed_query(text)

        return rest


def test_a_staged_query_is_prepared_by_the_search_and_run_beside_it(make_engine, workspace_dir):
    """The search prepares the query on its own thread and only the model's run goes
    to the embedding thread; the answer is the unstaged provider's, number for number."""
    import threading

    from engine.embeddings.base import StagedQueries

    write(workspace_dir, "MEMORY.md", "Miso the cat takes a methimazole tablet every morning.\n")
    write(workspace_dir, "memory/2026-03-14.md", "Booked the train to Porto.\n")
    provider = StagedConcepts()
    assert isinstance(provider, StagedQueries)
    eng = make_engine(provider=provider)
    eng.sync()
    opts = eng.default_options().with_(min_score=0.0)
    out = eng.search("kitten pills", opts, today=FIXED_TODAY)
    assert provider.staged_on == [threading.current_thread().name]
    assert provider.ran_on == ["memdeck-query-embed"]
    assert out.mode == "hybrid" and out.results[0].path == "MEMORY.md"
    plain = make_engine(provider=ConceptEmbedder())
    plain.sync()
    again = plain.search("kitten pills", opts, today=FIXED_TODAY)
    assert [(r.path, r.score) for r in out.results] == [(r.path, r.score) for r in again.results]


def test_a_query_that_fails_to_stage_is_answered_keyword_only(make_engine, workspace_dir):
    write(workspace_dir, "MEMORY.md", "Miso the cat takes a methimazole tablet every morning.\n")
    provider = StagedConcepts()
    eng = make_engine(provider=provider)
    eng.sync()
    provider.fail_stage = True
    out = eng.search("methimazole", eng.default_options().with_(min_score=0.0), today=FIXED_TODAY)
    assert out.mode == "fts" and out.results[0].path == "MEMORY.md"
    assert out.retrieval.vector_error == "the model file went away"
    assert provider.ran_on == []


def test_a_questions_function_words_weigh_nothing(make_concept_engine) -> None:
    """A small memory seldom holds "when" or "is", so by idf alone they weighed most
    of "when is the porto train": the note that holds "porto" and "train" but not them
    lost most of the keyword side. Function words weigh the floor; the breakdown says
    so and its arithmetic still adds up."""
    engine = make_concept_engine({"memory/2026-03-20.md": "When is it? Is it now? The end.\n"})
    out = engine.search("when is the porto train", engine.default_options().with_(min_score=0.0))
    train = next(c for c in out.candidates if c.path == "memory/2026-03-14.md")
    assert train.text_words is not None
    weights = {w.term: w.weight for w in train.text_words}
    assert weights["when"] == weights["is"] == weights["the"] == scoring.WORD_WEIGHT_FLOOR
    assert weights["porto"] > 0.5 and weights["train"] > 0.5
    # holding both content words, it has nearly the full keyword side, and ranks first
    assert train.text_component is not None and train.text_component > 0.9
    assert out.results[0].path == "memory/2026-03-14.md"
    lines = explain.word_weight_lines(train)
    assert [str(x) for x in lines[:3]] == ["0.01 = 0.0100"] * 3
    assert all(explain.agrees(x) for x in lines)
