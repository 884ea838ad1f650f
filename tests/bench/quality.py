"""The search-quality scorecard: the default ranking against its targets.

One table, the measures of docs/benchmarks/README.md "Targets" for the *default* configuration
(minScore included), beside the previous default (``geometric``) and the
targets: LoCoMo hit@6 and MRR@6 at the default minScore and hit@6 at minScore 0
(held-out conversations 5–9, with 0–4, the tuning half, beside them), the share
of off-topic Cranfield queries and of nonsense strings that return anything
(``tests.bench.offtopic``), Cranfield nDCG@10, and the names benchmark
(``tests.bench.names``: a name or 1–3 words, the note about it first; the
``openclaw`` profile beside it) with its stability check (the largest change of a
score when one unrelated note is added). Every query is retrieved once and ranked
under each configuration, as the TUI's toggles re-rank.

Run: ``make bench-quality`` or ``.venv/bin/python -m tests.bench.quality``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.config.settings import FtsTokenizer
from engine.embeddings.base import EmbeddingProvider
from engine.search.model import SearchOptions
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import common, cranfield, locomo, names, offtopic

NAMES_TOP1 = "names: the wanted note first (top-1)"
NAMES_TOP3 = "names: the wanted note in the top 3"
NAMES_MOVE = "names: largest score change from one added 301-line note"
#: measures printed as a percentage
SHARES = ("returning any result", "names: the wanted note")

TARGETS = {
    "hit@6": ">= 0.90",
    "MRR@6": ">= 0.75",
    "off-topic (Cranfield) returning any result": "<= 5 %",
    "nonsense strings returning any result": "0 %",
    "hit@6 at minScore 0 (ranking alone)": ">= 0.90",
    "Cranfield nDCG@10": ">= 0.40",
    NAMES_TOP1: ">= 80 %",
    NAMES_TOP3: ">= 95 %",
    NAMES_MOVE: f"<= {names.STABLE_MAX}",
}


#: the columns: (FTS5 tokenizer of the index, options); "with porter" is the default
#: configuration with ``store.fts.tokenizer: "porter"`` (memdeck's stemming extension)
def configs() -> dict[str, tuple[FtsTokenizer | None, SearchOptions]]:
    default = common.default_options()
    return {
        "now": (None, default),
        "before (geometric)": (None, default.with_(fusion="geometric")),
        "with porter": ("porter", default),
    }


def _by_tokenizer() -> dict[FtsTokenizer | None, dict[str, SearchOptions]]:
    out: dict[FtsTokenizer | None, dict[str, SearchOptions]] = {}
    for name, (tok, opts) in configs().items():
        out.setdefault(tok, {})[name] = opts
    return out


def locomo_measures(convs: list[int], provider: EmbeddingProvider) -> dict[str, dict[int, Any]]:
    """config → conversation → {hits, rr, hits0, n} over its questions."""
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    out: dict[str, dict[int, Any]] = {name: {} for name in configs()}
    base = common.default_options()
    for ci in convs:
        conv = locomo.build_conversation(ci, data[ci])
        for tok, cfg in _by_tokenizer().items():
            engine = offtopic.workspace_engine(ci, data, provider, tok)
            for name in cfg:
                out[name][ci] = {"hits": 0, "rr": 0.0, "hits0": 0, "n": 0}
            for q in conv.questions:
                retrieval = retrieve(engine.store, engine.provider, q.text, base)
                for name, opts in cfg.items():
                    m = out[name][ci]
                    first = locomo.first_hit(rank(retrieval, opts, conv.today).results, q.evidence)
                    first0 = locomo.first_hit(
                        rank(retrieval, opts.with_(min_score=0.0), conv.today).results, q.evidence
                    )
                    m["n"] += 1
                    if first is not None and first <= locomo.K:
                        m["hits"] += 1
                        m["rr"] += 1.0 / first
                    if first0 is not None and first0 <= locomo.K:
                        m["hits0"] += 1
            engine.close()
        common.log(f"conv {ci}: {len(conv.questions)} questions")
    return out


def offtopic_measures(
    convs: list[int], provider: EmbeddingProvider
) -> dict[str, dict[int, dict[str, list[bool]]]]:
    """config → conversation → kind → [returned anything] (``tests.bench.offtopic``)."""
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    out: dict[str, dict[int, dict[str, list[bool]]]] = {name: {} for name in configs()}
    base = common.default_options()
    for ci in convs:
        for tok, cfg in _by_tokenizer().items():
            engine = offtopic.workspace_engine(ci, data, provider, tok)
            for kind, text in offtopic.queries():
                retrieval = retrieve(engine.store, engine.provider, text, base)
                for name, opts in cfg.items():
                    got = bool(rank(retrieval, opts).results)
                    out[name].setdefault(ci, {}).setdefault(kind, []).append(got)
            engine.close()
        common.log(f"conv {ci}: off-topic queries")
    return out


def cranfield_ndcg(provider: EmbeddingProvider) -> dict[str, float]:
    """nDCG@10 of each configuration (maxResults 10, minScore 0 as in the Cranfield
    protocol, which ranks rather than filters)."""
    files, queries, qrels = cranfield.load(common.data_dir("cranfield"))
    root = common.CACHE_DIR / "cranfield"
    for rel, text in files.items():
        common.write_if_changed(root / "ws" / rel, text)
    judged = [(qid, q) for qid, q in queries if any(cranfield.gain(g) for g in qrels[qid].values())]
    sums = dict.fromkeys(configs(), 0.0)
    for tok, cfg in _by_tokenizer().items():
        engine = common.open_engine(root / "ws", root / "state", provider, tok)
        engine.sync(reason="bench")
        small = {n: o.with_(max_results=cranfield.NDCG_K, min_score=0.0) for n, o in cfg.items()}
        for qid, text in judged:
            retrieval = retrieve(engine.store, engine.provider, text, next(iter(small.values())))
            for name, opts in small.items():
                ranking = cranfield.doc_ranking(rank(retrieval, opts).results)
                sums[name] += cranfield.ndcg(ranking, qrels[qid], cranfield.NDCG_K)
        engine.close()
    common.log(f"cranfield: {len(judged)} queries")
    return {name: total / len(judged) for name, total in sums.items()}


def names_measures(provider: EmbeddingProvider) -> tuple[names.Measured, names.Stability]:
    """The names benchmark (``tests.bench.names``) under each configuration and the
    openclaw profile, and the default's stability when one unrelated note is added."""
    measured = names.measure(
        provider, {**configs(), names.KEYWORD_ONLY: (None, common.default_options(mode="fts"))}
    )
    return measured, names.stability(provider, common.default_options())


def _agg(per_conv: dict[int, Any], members: list[int]) -> dict[str, float]:
    n = sum(per_conv[c]["n"] for c in members)
    return {
        "hit@6": sum(per_conv[c]["hits"] for c in members) / n,
        "MRR@6": sum(per_conv[c]["rr"] for c in members) / n,
        "hit@6 at minScore 0 (ranking alone)": sum(per_conv[c]["hits0"] for c in members) / n,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-cranfield", action="store_true", help="skip Cranfield nDCG@10")
    ap.add_argument("--convs", default="0-9", help="LoCoMo conversations, e.g. 5-9")
    ap.add_argument("--no-names", action="store_true", help="skip the names benchmark")
    args = ap.parse_args(argv)
    provider = common.local_provider()
    convs = locomo.parse_convs(args.convs)
    timings: dict[str, float] = {}
    with common.Stopwatch() as sw:
        loco = locomo_measures(convs, provider)
    timings["locomo"] = sw.seconds
    with common.Stopwatch() as sw:
        off = offtopic_measures(convs, provider)
    timings["offtopic"] = sw.seconds
    with common.Stopwatch() as sw:
        ndcg = {} if args.no_cranfield else cranfield_ndcg(provider)
    timings["cranfield"] = sw.seconds
    with common.Stopwatch() as sw:
        named = None if args.no_names else names_measures(provider)
    timings["names"] = sw.seconds
    default = common.default_options()
    result: dict[str, Any] = {}
    for half, members in (
        ("5-9", [c for c in convs if c in locomo.HOLDOUT]),
        ("0-4", [c for c in convs if c in locomo.TUNE]),
    ):
        if not members:
            continue
        result[half] = {}
        for cfg in configs():
            m = _agg(loco[cfg], members)
            o = offtopic.shares({cfg: off[cfg]}, members)[cfg]
            m["off-topic (Cranfield) returning any result"] = o["cranfield"]
            m["nonsense strings returning any result"] = o["nonsense"]
            if ndcg:
                m["Cranfield nDCG@10"] = ndcg[cfg]
            if named is not None:
                shares = named[0].overall[cfg].shares()
                m[NAMES_TOP1], m[NAMES_TOP3] = shares["top-1"], shares["top-3"]
                if cfg == "now":
                    m[NAMES_MOVE] = round(named[1].max_change, 4)
            result[half][cfg] = m
    held = "5-9" if "5-9" in result else "0-4"
    theirs: dict[str, float] = {}
    if named is not None:
        shares = named[0].overall[names.OPENCLAW].shares()
        theirs = {NAMES_TOP1: shares["top-1"], NAMES_TOP3: shares["top-3"]}
    rows = []
    for measure, target in TARGETS.items():
        if measure not in result[held]["now"]:
            continue
        tune = result.get("0-4", {})
        share = any(word in measure for word in SHARES)  # printed as a percentage
        per_half = not measure.startswith("names")  # the names rows are one measure
        cells: list[float | None] = [
            result[held]["before (geometric)"].get(measure),
            result[held]["now"][measure],
            tune["now"][measure] if tune and per_half else None,
            result[held]["with porter"].get(measure),
            tune["with porter"][measure] if tune and per_half else None,
            theirs.get(measure),
        ]
        shown = [None if v is None else f"{100 * v:.1f} %" if share else v for v in cells]
        rows.append([measure, shown[0], target, *shown[1:]])
    table = common.table(
        [
            f"measure (LoCoMo {held.replace('-', '–')}, default config incl. minScore "
            f"{default.min_score}; fusion {default.fusion})",
            "today (geometric)",
            "target",
            "measured (default)",
            "default on 0–4 (tuning)",
            'with store.fts.tokenizer "porter"',
            "porter on 0–4 (tuning)",
            "--profile openclaw",
        ],
        rows,
        title="Search quality of the default configuration",
    )
    extra = names.report(named[0], named[1])["tables"] if named is not None else []
    model = Path(str(provider.model)).name
    common.write_results(
        "quality",
        {
            "model": model,
            "default_fusion": default.fusion,
            "min_score": default.min_score,
            "conversations": convs,
            "measures": result,
            "table": table,
            "names_tables": extra,
            "names": None
            if named is None
            else {config: named[0].overall[config].shares() for config in named[0].overall},
            "stability": None if named is None else named[1].summary(),
            "seconds": {k: round(v, 1) for k, v in timings.items()},
        },
    )
    provider.close()


if __name__ == "__main__":
    main()
