"""Fit the ``calibrated`` fusion on LoCoMo conversations 0–4, and measure the directions.

The calibrated score is ``vw × V + tw × T`` (weights the user's, default 0.7/0.3)
with absolute sides: ``V`` the larger of the best unit's cosine (a line, or a
paragraph of wrapped prose) and the chunk's, ``T = min(1, −bm25 ÷ (κ × Σidf))``.
This script retrieves every question of conversations 0–4 and the off-topic
queries (``tests.bench.offtopic``) on the same conversations once,
through the real pipeline (``retrieve``: FTS5, the MiniLM GGUF, the stored line
vectors), keeps the retrievals in ``tests/bench/.cache/calibrate/`` and then ranks
them with the real ``rank`` under each variant: κ, the cosine calibration of V,
how a chunk's unit cosines become one number, the weights, the candidate count
and the FTS5 tokenizer (``unicode61`` or the ``porter`` extension), and the
feedback's β and gate (``engine.search.rank.feed_back``). Reported per
variant: hit@6 and MRR@6 at the default minScore, hit@6 at minScore 0, and the
share of off-topic queries and nonsense strings that return anything; with
``--cranfield`` also Cranfield nDCG@10 (the check on prose, not tuned on).
Conversations 5–9 are never read here (``--holdout`` exists only to print the
chosen variants on 5–9 *after* choosing, for the over-fitting check).

Run: ``make bench-calibrate`` (``.venv/bin/python -m tests.bench.calibrate``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config.settings import FTS_TOKENIZERS, FtsTokenizer
from engine.embeddings.base import EmbeddingProvider
from engine.index.line_vectors import ChunkUnits, UnitHit, space_key, unit_spans
from engine.search import scoring
from engine.search.model import Retrieval, SearchOptions
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import common, cranfield, locomo, offtopic

#: bump when what ``collect`` stores changes
FORMAT = 7  # 7: function words weigh the floor (the retrievals keep the word weights)
#: candidates per side fetched once; smaller counts are prefixes (``common.truncate``)
MAX_MULTIPLIER = 8


@dataclass
class Sample:
    """One query's retrieval, with every candidate's line cosines (best first)."""

    kind: str  # "question", "cranfield" or "nonsense"
    evidence: list[tuple[str, int]]
    retrieval: Retrieval
    #: chunk id → (first file line of each unit vector, its cosine, last file line),
    #: best first (a unit: a line, or a paragraph of wrapped prose)
    lines: dict[int, list[tuple[int, float, int]]]
    #: Cranfield: the query's id in the judgments
    qid: int = 0
    #: every candidate's unit vectors and stored vector (what the feedback reads),
    #: one dict shared by the samples of a collection so that it is stored once
    units: dict[int, ChunkUnits] = dataclasses.field(default_factory=dict)
    vectors: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)


class _Unpickler(pickle.Unpickler):
    """Reads retrievals stored by ``python -m tests.bench.calibrate`` (classes of
    ``__main__``) from any module that imports this one (``tests.bench.misses``)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__":
            module = __name__
        return super().find_class(module, name)


def _load(path: Any) -> Any:
    with path.open("rb") as fh:
        return _Unpickler(fh).load()


class QueryVectors:
    """The provider, remembering query vectors: a query is embedded once per run."""

    def __init__(self, provider: EmbeddingProvider):
        self._provider = provider
        self._seen: dict[str, np.ndarray] = {}

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._seen:
            self._seen[text] = self._provider.embed_query(text)
        return self._seen[text]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)


def collect(
    ci: int, data: list[Any], provider: EmbeddingProvider, tokenizer: FtsTokenizer
) -> tuple[list[Sample], Any]:
    """Every query of conversation ``ci`` retrieved once (cached on disk)."""
    conv = locomo.build_conversation(ci, data[ci])
    path = common.CACHE_DIR / "calibrate" / tokenizer / f"conv-{ci}.pickle"
    if path.exists():
        stored = _load(path)
        if stored.get("format") == FORMAT:
            return stored["samples"], conv.today
    engine = offtopic.workspace_engine(ci, data, provider, tokenizer)
    base = common.default_options(candidate_multiplier=MAX_MULTIPLIER)
    queries = [("question", q.text, q.evidence, 0) for q in conv.questions] + [
        (kind, text, [], 0) for kind, text in offtopic.queries()
    ]
    samples = _samples(engine, provider, queries, base)
    engine.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump({"format": FORMAT, "samples": samples}, fh)
    common.log(f"conv {ci} ({tokenizer}): {len(samples)} queries retrieved")
    return samples, conv.today


def _samples(
    engine: Any,
    provider: EmbeddingProvider,
    queries: list[tuple[str, str, list[tuple[str, int]], int]],
    base: SearchOptions,
) -> list[Sample]:
    """Each (kind, text, evidence) retrieved once, with its candidates' best unit cosines."""
    samples = []
    key = space_key(provider)
    store = engine.store
    remembered = QueryVectors(provider)
    all_units: dict[int, ChunkUnits] = {}
    all_vectors: dict[int, np.ndarray] = {}
    for kind, text, evidence, qid in queries:
        r = retrieve(store, remembered, text, base)  # type: ignore[arg-type]
        all_units.update(r.units)
        all_vectors.update(r.vectors)
        r = dataclasses.replace(r, units={}, vectors={})
        qvec = remembered.embed_query(text)
        hashes = store.chunk_hashes(list(r.rows))
        mats = store.line_vectors(list(hashes.values()), key)
        lines: dict[int, list[tuple[int, float, int]]] = {}
        for cid, row in r.rows.items():
            mat = mats.get(hashes.get(cid, ""))
            units = unit_spans(row.text)
            if mat is None or mat.shape[0] != len(units) or not units:
                continue
            sims = mat @ qvec
            order = np.argsort(-sims)
            lines[cid] = [
                (row.start_line + units[i][0], float(sims[i]), row.start_line + units[i][1])
                for i in order[:4]
            ]
        samples.append(Sample(kind, evidence, r, lines, qid, all_units, all_vectors))
    return samples


def collect_cranfield(
    provider: EmbeddingProvider, tokenizer: FtsTokenizer
) -> tuple[list[Sample], dict[int, dict[str, int]]]:
    """Every judged Cranfield query retrieved once (cached on disk), and the judgments.

    The separate check of a variant on prose (``tests.bench.cranfield``'s index:
    abstracts hard-wrapped at ~70 characters); ``evidence`` is the query id.
    """
    files, queries, qrels = cranfield.load(common.data_dir("cranfield"))
    path = common.CACHE_DIR / "calibrate" / tokenizer / "cranfield.pickle"
    if path.exists():
        stored = _load(path)
        if stored.get("format") == FORMAT:
            return stored["samples"], qrels
    root = common.CACHE_DIR / "cranfield"
    for rel, text in files.items():
        common.write_if_changed(root / "ws" / rel, text)
    engine = common.open_engine(root / "ws", root / "state", provider, tokenizer)
    engine.sync(reason="bench")
    judged = [
        ("cranfield", q, [], qid)
        for qid, q in queries
        if any(cranfield.gain(g) for g in qrels[qid].values())
    ]
    base = common.default_options(max_results=cranfield.NDCG_K, candidate_multiplier=MAX_MULTIPLIER)
    samples = _samples(engine, provider, judged, base)
    engine.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump({"format": FORMAT, "samples": samples}, fh)
    common.log(f"cranfield ({tokenizer}): {len(samples)} queries retrieved")
    return samples, qrels


# -- variants ----------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """One way of ranking the stored retrievals."""

    kappa: float = scoring.CALIBRATED_TEXT_SCALE
    cos_zero: float = scoring.CALIBRATED_COSINE_ZERO
    cos_one: float = scoring.CALIBRATED_COSINE_ONE
    #: how a chunk's unit cosines become its V input, before the ranking takes the
    #: larger of it and the chunk's own cosine: "max" (the best unit), "mean2" (mean
    #: of the best two), "chunk" (no units: the chunk's cosine alone)
    lines: str = "max"
    vector_weight: float = 0.7
    multiplier: int = 4
    tokenizer: FtsTokenizer = "unicode61"
    fusion: str = "calibrated"
    #: the feedback's β (0: none) and the first-pass score it needs
    feedback: float = scoring.FEEDBACK_WEIGHT
    gate: float = scoring.FEEDBACK_GATE
    #: τ of a question about when, in the feedback (0: none)
    time_weight: float = scoring.TIME_WEIGHT

    def label(self) -> str:
        return (
            f"{self.fusion} κ={self.kappa:g} cos∈[{self.cos_zero:g},{self.cos_one:g}]"
            f" lines={self.lines} vw={self.vector_weight:g} cand×{self.multiplier}"
            f" β={self.feedback:g} gate={self.gate:g} τ={self.time_weight:g} {self.tokenizer}"
        )


@contextlib.contextmanager
def constants(v: Variant) -> Iterator[None]:
    """The fitted coefficients of ``scoring`` set to the variant's, then restored."""
    saved = (
        scoring.CALIBRATED_TEXT_SCALE,
        scoring.CALIBRATED_COSINE_ZERO,
        scoring.CALIBRATED_COSINE_ONE,
        scoring.FEEDBACK_GATE,
    )
    scoring.CALIBRATED_TEXT_SCALE = v.kappa
    scoring.CALIBRATED_COSINE_ZERO = v.cos_zero
    scoring.CALIBRATED_COSINE_ONE = v.cos_one
    scoring.FEEDBACK_GATE = v.gate
    try:
        yield
    finally:
        (
            scoring.CALIBRATED_TEXT_SCALE,
            scoring.CALIBRATED_COSINE_ZERO,
            scoring.CALIBRATED_COSINE_ONE,
            scoring.FEEDBACK_GATE,
        ) = saved


def shaped(s: Sample, v: Variant, max_results: int = locomo.K) -> Retrieval:
    """The sample's retrieval as the variant's search would have made it (the
    feedback scores the units again: with another aggregation than the best unit,
    only the chunks' vectors are given to it)."""
    r = common.truncate(s.retrieval, max_results * v.multiplier)
    if v.lines == "max":
        return dataclasses.replace(r, units=s.units, vectors=s.vectors)
    r = dataclasses.replace(r, vectors=s.vectors)
    hits: dict[int, UnitHit] = {}
    for cid, best in s.lines.items():
        first, _, last = best[0]
        if v.lines == "mean2":
            sims = [c for _, c, _ in best[:2]]
            hits[cid] = UnitHit(first, sum(sims) / len(sims), last)
    return dataclasses.replace(r, line_hits=hits)


def measure(
    samples: dict[int, tuple[list[Sample], Any]], v: Variant, options: SearchOptions
) -> dict[str, float]:
    opts = options.with_(
        fusion=v.fusion,
        vector_weight=v.vector_weight,
        text_weight=round(1 - v.vector_weight, 3),
        candidate_multiplier=v.multiplier,
        feedback_weight=v.feedback,
        time_weight=v.time_weight,
    )
    opts0 = opts.with_(min_score=0.0)
    hits = hits0 = n = 0
    rr = 0.0
    off = {"cranfield": [0, 0], "nonsense": [0, 0]}
    with constants(v):
        for conv_samples, today in samples.values():
            for s in conv_samples:
                r = shaped(s, v)
                if s.kind != "question":
                    off[s.kind][0] += bool(rank(r, opts).results)
                    off[s.kind][1] += 1
                    continue
                n += 1
                first = locomo.first_hit(rank(r, opts, today).results, s.evidence)
                if first is not None and first <= locomo.K:
                    hits += 1
                    rr += 1 / first
                first0 = locomo.first_hit(rank(r, opts0, today).results, s.evidence)
                if first0 is not None and first0 <= locomo.K:
                    hits0 += 1
    return {
        "hit@6": hits / n,
        "MRR@6": rr / n,
        "hit@6 minScore 0": hits0 / n,
        "off-topic": off["cranfield"][0] / max(1, off["cranfield"][1]),
        "nonsense": off["nonsense"][0] / max(1, off["nonsense"][1]),
    }


def measure_cranfield(
    samples: list[Sample], qrels: dict[int, dict[str, int]], v: Variant, options: SearchOptions
) -> float:
    """Cranfield nDCG@10 of the variant (maxResults 10, minScore 0: the protocol ranks)."""
    opts = options.with_(
        fusion=v.fusion,
        vector_weight=v.vector_weight,
        text_weight=round(1 - v.vector_weight, 3),
        candidate_multiplier=v.multiplier,
        feedback_weight=v.feedback,
        time_weight=v.time_weight,
        max_results=cranfield.NDCG_K,
        min_score=0.0,
    )
    total = 0.0
    with constants(v):
        for s in samples:
            ranking = cranfield.doc_ranking(rank(shaped(s, v, cranfield.NDCG_K), opts).results)
            total += cranfield.ndcg(ranking, qrels[s.qid], cranfield.NDCG_K)
    return total / len(samples)


def time_rank(samples: dict[int, tuple[list[Sample], Any]], options: SearchOptions) -> None:
    """Milliseconds per ``rank`` of each question's retrieval (the default's
    candidates), with and without the feedback, alternated three times."""
    retrievals = [
        (shaped(s, Variant()), today)
        for conv_samples, today in samples.values()
        for s in conv_samples
        if s.kind == "question"
    ]
    rows = []
    for round_ in range(1, 4):
        for name, opts in (
            ("feedback (default)", options),
            ("no feedback", options.with_(feedback_weight=0.0)),
        ):
            ms = []
            for r, today in retrievals:
                t0 = time.perf_counter()
                rank(r, opts, today)
                ms.append((time.perf_counter() - t0) * 1000)
            ms.sort()
            rows.append([f"{name}, round {round_}", ms[len(ms) // 2], ms[int(0.95 * len(ms))]])
    table = common.table(
        ["rank()", "p50 ms", "p95 ms"], rows, title=f"rank() of {len(retrievals)} questions"
    )
    common.write_results("calibrate_rank_time", {"table": table})


def grid() -> list[Variant]:
    """The directions measured (docs/benchmarks/2026-11-23-calibration.md)."""
    now = Variant()
    out = [now, dataclasses.replace(now, fusion="geometric")]
    out += [dataclasses.replace(now, kappa=k) for k in (0.3, 0.4, 0.6, 0.8)]
    out += [dataclasses.replace(now, lines=agg) for agg in ("mean2", "chunk")]
    out += [dataclasses.replace(now, vector_weight=w) for w in (0.5, 0.6)]
    out += [dataclasses.replace(now, multiplier=m) for m in (2, 8)]
    out += [dataclasses.replace(now, feedback=b) for b in (0.0, 0.1, 0.2, 0.4, 0.5)]
    out += [dataclasses.replace(now, gate=g) for g in (0.0, 0.5)]
    out += [dataclasses.replace(now, time_weight=t) for t in (0.0, 0.05, 0.1, 0.2)]
    for zero in (0.0, 0.1, 0.2):
        for one in (0.8, 1.0, 1.2, 1.5):
            out.append(dataclasses.replace(now, cos_zero=zero, cos_one=one))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizers", default="unicode61,porter", help="FTS5 tokenizers to try")
    ap.add_argument("--convs", default="0-4", help="tuning conversations (default 0-4)")
    ap.add_argument("--holdout", action="store_true", help="rank 5-9 instead (after choosing)")
    ap.add_argument("--only-default", action="store_true", help="just the current default")
    ap.add_argument("--kappas", help="a grid of κ × --lines × --weights instead, e.g. 0.5,0.6")
    ap.add_argument("--lines", default="max", help="line aggregations for --kappas")
    ap.add_argument("--weights", default="0.7", help="vector weights for --kappas")
    ap.add_argument("--cos", default="0:1", help="cosine calibrations for --kappas, e.g. 0:0.7")
    ap.add_argument(
        "--feedback", help="the feedback's β × --gates (× the --kappas grid), e.g. 0,0.3"
    )
    ap.add_argument("--gates", default=str(scoring.FEEDBACK_GATE), help="gates for --feedback")
    ap.add_argument("--times", help="τ of a question about when instead, e.g. 0,0.1,0.15")
    ap.add_argument(
        "--cranfield", action="store_true", help="also each variant's Cranfield nDCG@10 (a check)"
    )
    ap.add_argument("--no-locomo", action="store_true", help="only Cranfield (with --cranfield)")
    ap.add_argument(
        "--time-rank", action="store_true", help="time rank() with and without the feedback"
    )
    args = ap.parse_args(argv)
    convs = locomo.parse_convs("5-9" if args.holdout else args.convs)
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    provider = common.local_provider()
    tokenizers = [t for t in FTS_TOKENIZERS if t in args.tokenizers.split(",")]
    variants = [Variant()] if args.only_default else grid()
    if args.kappas:
        variants = [
            Variant(
                kappa=float(k),
                lines=agg,
                vector_weight=float(w),
                cos_zero=float(cos.split(":")[0]),
                cos_one=float(cos.split(":")[1]),
            )
            for k in args.kappas.split(",")
            for agg in args.lines.split(",")
            for w in args.weights.split(",")
            for cos in args.cos.split(",")
        ]
    if args.feedback:  # each variant of --kappas (else the default) × β × gate
        variants = [
            dataclasses.replace(v, feedback=float(b), gate=float(g))
            for v in (variants if args.kappas else [Variant()])
            for b in args.feedback.split(",")
            for g in args.gates.split(",")
        ]
    if args.times:
        variants = [Variant(time_weight=float(t)) for t in args.times.split(",")]
    by_tok = {
        t: {} if args.no_locomo else {ci: collect(ci, data, provider, t) for ci in convs}
        for t in tokenizers
    }
    cran = {t: collect_cranfield(provider, t) for t in tokenizers} if args.cranfield else {}
    options = common.default_options()
    if args.time_rank:
        time_rank(by_tok[tokenizers[0]], options)
        provider.close()
        return
    rows = []
    headers = ["variant"]
    if not args.no_locomo:
        headers += ["hit@6", "MRR@6", "hit@6 minScore 0", "off-topic", "nonsense"]
    if cran:
        headers.append("Cranfield nDCG@10")
    for tok in tokenizers:
        for v in variants:
            v = dataclasses.replace(v, tokenizer=tok)
            m = {} if args.no_locomo else measure(by_tok[tok], v, options)
            if cran:
                m["Cranfield nDCG@10"] = measure_cranfield(*cran[tok], v, options)
            rows.append([v.label(), *m.values()])
            common.log(f"{v.label()}: {m}")
    half = "5–9 (held out)" if args.holdout else f"{args.convs} (tuning)"
    table = common.table(
        headers,
        rows,
        title=f"calibrated fusion variants on LoCoMo {half}, minScore {options.min_score}",
    )
    common.write_results(
        "calibrate_holdout" if args.holdout else "calibrate",
        {"conversations": convs, "min_score": options.min_score, "table": table},
    )
    provider.close()


if __name__ == "__main__":
    main()
