"""Property: every formula a breakdown prints, evaluated by hand, gives what it prints.

Real material: LoCoMo conversation 1 (the benchmark's workspace builder),
indexed with the real MiniLM GGUF; each of its questions is retrieved once and
ranked under every mode and fusion, with MMR and decay on and off — the same
re-ranking the TUI's toggles do. For every (query, candidate) pair, each
arithmetic line of ``engine.search.explain`` is evaluated from the numbers it
prints (``explain.evaluate``) and must print as the result it shows; the lines
must appear verbatim in the TUI breakdown and in ``--explain``'s formula; and
the score bar's segments must add up to the score.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rich.text import Text

from engine.core import Engine
from engine.search import explain
from engine.search.pipeline import SearchOptions, rank, retrieve
from engine.tools import search_answer
from tests.bench import locomo
from tui.widgets.breakdown import explain as breakdown

pytestmark = pytest.mark.model

DATA = Path(
    os.environ.get(
        "MEMDECK_BENCH_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "bench"
    )
)
FUSIONS = ("weighted", "normalized", "rrf", "geometric", "calibrated")


@pytest.fixture(scope="module")
def conversation_engine(minilm_gguf, tmp_path_factory):
    from engine.embeddings.local import LocalProvider

    source = DATA / "locomo" / "locomo10.json"
    if not source.is_file():
        pytest.skip(f"LoCoMo data absent at {source} (set MEMDECK_BENCH_DATA)")
    conv = locomo.build_conversation(1, json.loads(source.read_text())[1])
    root = tmp_path_factory.mktemp("locomo1")
    for rel, text in conv.files.items():
        (root / "ws" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "ws" / rel).write_text(text, encoding="utf-8")
    from tests.bench.common import bench_settings

    engine = Engine(
        bench_settings(root / "ws", root / "state"), provider=LocalProvider(minilm_gguf)
    )
    engine.sync()
    yield engine, conv
    engine.close()


def _variants(base: SearchOptions) -> list[SearchOptions]:
    out = [base.with_(mode="fts"), base.with_(mode="vector")]
    for fusion in FUSIONS:
        norms = ("minmax", "zscore") if fusion == "normalized" else ("minmax",)
        for norm in norms:
            out.append(base.with_(fusion=fusion, normalization=norm))
    # the stages that add lines of their own, on two fusions and one odd weight pair
    out += [
        base.with_(mmr_enabled=True, mmr_lambda=0.65),
        base.with_(fusion="weighted", mmr_enabled=True, decay_enabled=True, half_life_days=45),
        base.with_(decay_enabled=True),
        base.with_(fusion="normalized", vector_weight=1, text_weight=2),
    ]
    return out


def test_every_printed_formula_evaluates_to_what_it_prints(conversation_engine) -> None:
    engine, conv = conversation_engine
    base = engine.default_options().with_(min_score=0.0)
    variants = _variants(base)
    pairs = 0
    lines_checked = 0
    kinds: set[tuple[str, str, bool, bool]] = set()
    for q in conv.questions[:30]:
        retrieval = retrieve(engine.store, engine.provider, q.text, base)
        for options in variants:
            outcome = rank(retrieval, options, conv.today)
            kinds.add((outcome.mode, outcome.fusion, options.mmr_enabled, options.decay_enabled))
            for c in outcome.candidates:
                pairs += 1
                lines = explain.all_lines(c, options)
                for line in lines:
                    assert explain.agrees(line), (q.text, options.fusion, str(line))
                    lines_checked += 1
                # the score line ends in the fused score, then the final score
                assert lines[0].result == explain.fmt(c.fused_score)
                assert explain.score_lines(c)[-1].result == explain.fmt(c.score)
                # the score bar's segments add up to the score
                parts = c.vector_part + c.text_part + c.base_part
                assert parts == pytest.approx(c.score, abs=1e-12), (options.fusion, c)
                assert min(c.vector_part, c.text_part, c.base_part) >= -1e-12
                # the TUI shows each line verbatim
                shown = breakdown(c, outcome, {}).plain
                assert isinstance(breakdown(c, outcome, {}), Text)
                for line in lines:
                    assert str(line) in shown, (str(line), shown)
            # --explain prints the same formula for results and dropped candidates
            payload = search_answer(engine, outcome, explain=True).to_json()
            for item, c in zip(payload["results"], outcome.results, strict=True):
                assert item["breakdown"]["formula"] == c.formula()
    assert pairs >= 1000, pairs
    modes = {k[0] for k in kinds}
    fusions = {k[1] for k in kinds if k[0] == "hybrid"}
    assert modes == {"hybrid", "fts", "vector"} and fusions >= set(FUSIONS)
    assert lines_checked > 2 * pairs
