"""Fit the ``calibrated`` fusion's text scale κ on LoCoMo conversations 0–4.

The calibrated score is ``vw × V + tw × T`` with V = the best line's cosine
(at least the chunk's own cosine, clamped to 0..1) and T = ``min(1, −bm25 ÷ (κ ×
Σidf))``. Its one free coefficient is κ; the weights stay the user's (default
0.7/0.3, OpenClaw's). This script ranks every question of conversations 0–4 and
the off-topic queries (``tests.bench.offtopic``) on those same conversations
under a grid of κ — through the real pipeline, each query retrieved once — and
prints hit@6 and MRR@6 at the default minScore, hit@6 at minScore 0 and the
off-topic shares. κ = 0.5 was picked from this table (README "Benchmarks");
conversations 5–9 are never read here.

Run: ``.venv/bin/python -m tests.bench.calibrate``.
"""

from __future__ import annotations

import argparse
import json

from engine.search import scoring
from engine.search.pipeline import rank, retrieve
from tests.bench import common, locomo, offtopic

GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", default="0.7", help="vector weights to try, e.g. 0.5,0.7")
    args = ap.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    provider = common.local_provider()
    base = common.default_options(fusion="calibrated")
    grid = [(k, w) for k in GRID for w in weights]
    stats = {g: {"hits": 0, "rr": 0.0, "hits0": 0, "n": 0, "off": 0, "non": 0} for g in grid}
    n_off = n_non = 0
    default_scale = scoring.CALIBRATED_TEXT_SCALE
    try:
        for ci in locomo.TUNE:
            conv = locomo.build_conversation(ci, data[ci])
            engine = offtopic.workspace_engine(ci, data, provider)
            retrievals = [
                (q, retrieve(engine.store, engine.provider, q.text, base)) for q in conv.questions
            ]
            others = [
                (kind, retrieve(engine.store, engine.provider, text, base))
                for kind, text in offtopic.queries()
            ]
            n_off += sum(1 for kind, _ in others if kind == "cranfield")
            n_non += sum(1 for kind, _ in others if kind == "nonsense")
            for kappa, vw in grid:
                scoring.CALIBRATED_TEXT_SCALE = kappa
                opts = base.with_(vector_weight=vw, text_weight=round(1 - vw, 3))
                s = stats[(kappa, vw)]
                for q, r in retrievals:
                    first = locomo.first_hit(rank(r, opts, conv.today).results, q.evidence)
                    first0 = locomo.first_hit(
                        rank(r, opts.with_(min_score=0.0), conv.today).results, q.evidence
                    )
                    s["n"] += 1
                    if first is not None and first <= locomo.K:
                        s["hits"] += 1
                        s["rr"] += 1 / first
                    if first0 is not None and first0 <= locomo.K:
                        s["hits0"] += 1
                for kind, r in others:
                    if rank(r, opts).results:
                        s["off" if kind == "cranfield" else "non"] += 1
            engine.close()
            common.log(f"conv {ci}: {len(retrievals)} questions, {len(others)} off-topic")
    finally:
        scoring.CALIBRATED_TEXT_SCALE = default_scale
    rows = []
    for (kappa, vw), s in stats.items():
        n = s["n"]
        rows.append(
            [
                kappa,
                vw,
                s["hits"] / n,
                s["rr"] / n,
                s["hits0"] / n,
                s["off"] / n_off,
                s["non"] / n_non,
            ]
        )
    common.table(
        ["κ", "vector weight", "hit@6", "MRR@6", "hit@6 minScore 0", "off-topic", "nonsense"],
        rows,
        title=f"calibrated fusion on LoCoMo 0–4 (tuning), minScore {base.min_score}",
    )
    provider.close()


if __name__ == "__main__":
    main()
