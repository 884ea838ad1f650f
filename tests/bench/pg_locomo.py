"""LoCoMo on the PostgreSQL store beside the SQLite store: same hit@6?

Same protocol as ``tests.bench.locomo`` (maxResults 6, minScore 0, the real
MiniLM GGUF), each conversation indexed into a SQLite file and into one
namespace of a throwaway PostgreSQL + pgvector (``tests.pg_server``). The
PostgreSQL embedding cache is seeded from the SQLite index's, so both stores
hold the very same vectors and any difference comes from the stores: keyword
ranks (bm25 over the same terms) and HNSW (approximate) against exact search.

Run: ``.venv/bin/python -m tests.bench.pg_locomo`` (``--convs 0-4`` to restrict).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import numpy as np

from engine.core import Engine
from engine.search.model import Candidate
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import common
from tests.bench.locomo import CATEGORIES, K, build_conversation, first_hit, parse_convs
from tests.pg_server import running_server


def _seed_cache(lite: Engine, pg: Engine) -> int:
    rows = lite.store.db.execute(
        "select provider, model, provider_key, hash, embedding from embedding_cache"
    )
    groups: dict[tuple[str, str, str], dict[str, np.ndarray]] = defaultdict(dict)
    for provider, model, key, h, blob in rows:
        groups[(provider, model, key)][h] = np.frombuffer(blob, dtype=np.float32)
    for (provider, model, key), items in groups.items():
        pg.store.cache_put(provider, model, key, items)
    return sum(len(v) for v in groups.values())


def _row(c: Candidate) -> list[object]:
    """One ranked result as the difference report shows it."""

    def r4(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    return [c.path, c.start_line, r4(c.score), r4(c.text_score), r4(c.vector_score)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--convs", default="0-9")
    args = ap.parse_args(argv)
    convs = parse_convs(args.convs)
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    provider = common.local_provider()
    modes = common.modes(common.default_options(min_score=0.0, max_results=K))
    modes = {m: modes[m] for m in ("fts-only", "vector-only", "hybrid weighted (OpenClaw)")}
    modes["default"] = common.default_options(min_score=0.0, max_results=K)
    hits: dict[str, dict[str, list[int | None]]] = {
        s: {m: [] for m in modes} for s in ("sqlite", "postgres")
    }
    same_top6 = {m: 0 for m in modes}
    differences: list[dict[str, object]] = []  # every question whose top-6 lists differ
    latency: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    questions = 0
    with running_server() as server:
        for ci in convs:
            conv = build_conversation(ci, data[ci])
            root = common.CACHE_DIR / "locomo" / f"conv-{ci}"
            ws = root / "ws"
            for rel, text in conv.files.items():
                common.write_if_changed(ws / rel, text)
            lite = common.open_engine(ws, root / "state", provider)
            lite.sync(reason="bench")
            env = {
                "HOME": str(root / "pg-home"),
                "MEMDECK_HOME": str(root / "pg-home"),
                "MEMDECK_STORE_BACKEND": "postgres",
                "MEMDECK_PG_DSN": server.dsn,
                "MEMDECK_PG_NAMESPACE": f"locomo-{ci}",
            }
            (root / "pg-state").mkdir(parents=True, exist_ok=True)
            pg = Engine(common.bench_settings(ws, root / "pg-state"), provider=provider, env=env)
            seeded = _seed_cache(lite, pg)
            done = pg.sync(reason="bench")
            common.log(
                f"conv {ci}: {pg.status().chunks} chunks, cache seeded {seeded},"
                f" embedded now {done.chunks_embedded}, {len(conv.questions)} questions"
            )
            for q in conv.questions:
                questions += 1
                outs = {}
                for name, eng in (("sqlite", lite), ("postgres", pg)):
                    t0 = time.perf_counter()
                    r = retrieve(eng.store, eng.provider, q.text, modes["default"])
                    latency[name].append((time.perf_counter() - t0) * 1000)
                    outs[name] = r
                for mode, opts in modes.items():
                    tops = {}
                    shown: dict[str, list[list[object]]] = {}
                    for name in ("sqlite", "postgres"):
                        res = rank(outs[name], opts, conv.today).results
                        hits[name][mode].append(first_hit(res, q.evidence))
                        tops[name] = [(c.path, c.start_line) for c in res]
                        shown[name] = [_row(c) for c in res]
                    same_top6[mode] += tops["sqlite"] == tops["postgres"]
                    if tops["sqlite"] != tops["postgres"]:
                        differences.append(
                            {
                                "conv": ci,
                                "mode": mode,
                                "question": q.text,
                                "fts_query": outs["sqlite"].fts_query,
                                "hit@6": {n: hits[n][mode][-1] for n in hits},
                                **shown,
                            }
                        )
            lite.close()
            pg.close()
    provider.close()

    def rate(ranks: list[int | None]) -> float:
        return sum(1 for r in ranks if r is not None and r <= K) / max(len(ranks), 1)

    summary = {
        mode: {
            "sqlite hit@6": round(rate(hits["sqlite"][mode]), 4),
            "postgres hit@6": round(rate(hits["postgres"][mode]), 4),
            "identical top-6 lists": f"{same_top6[mode]}/{questions}",
        }
        for mode in modes
    }
    p = {
        n: {
            "p50": round(float(np.percentile(v, 50)), 1),
            "p95": round(float(np.percentile(v, 95)), 1),
        }
        for n, v in latency.items()
    }
    rows = [
        [m, s["sqlite hit@6"], s["postgres hit@6"], s["identical top-6 lists"]]
        for m, s in summary.items()
    ]
    table = common.table(
        ["mode", "SQLite hit@6", "PostgreSQL hit@6", "identical top-6"],
        rows,
        title=f"LoCoMo conversations {args.convs}, {questions} questions",
    )
    print(table)
    print(f"retrieve latency ms (incl. query embedding): {p}")
    print(f"{len(differences)} (question, mode) pairs with different top-6 lists")
    common.write_results(
        "pg_locomo",
        {
            "conversations": convs,
            "questions": questions,
            "summary": summary,
            "categories": list(CATEGORIES.values()),
            "retrieve_ms": p,
            "differences": differences,
            "table": table,
            "note": "2 CPU cores shared with other engineers' test runs",
        },
    )


if __name__ == "__main__":
    main()
