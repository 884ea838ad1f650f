"""How cost grows with the memory: 1k / 10k / 100k / 1M chunks.

Per size, on the synthetic daily logs of ``tests/bench/synthetic.py`` (the same
workspaces as ``tests.bench.scale``): cold index time, index size on disk and peak
RSS of an FTS-only index and of one with ``HashEmbedder`` vectors (384 dims, a
cheap stand-in: embedding 1M chunks with MiniLM would take days here), then search
latency p50/p95 for FTS-only and hybrid search, the query embedded by the real
MiniLM, with the vector path the engine picks by itself (``auto``: numpy up to
its 256 MB budget, sqlite-vec beyond).

The two phases are separate commands because a 1M cold index takes far longer
than a benchmark slot: ``index`` (run it beside other work: its times are
reported with the load average) and ``latency`` (run it with the machine to
itself). Every step runs in its own child process, so each peak RSS is that
step's own. Results are merged into ``tests/bench/results/growth.json`` (one
entry per size and step, each with its command, commit and load average) and the
table is printed from all entries found there.

Run: ``.venv/bin/python -m tests.bench.growth index --sizes 1000,10000,100000``
then ``.venv/bin/python -m tests.bench.growth latency --sizes 1000,10000,100000``;
``--only hash`` leaves out the FTS-only index (the 1M run does), ``table`` prints
the table again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engine.search.retrieve import retrieve
from tests.bench import common, scale, synthetic

SIZES = (1_000, 10_000, 100_000, 1_000_000)
RESULTS = common.RESULTS_DIR / "growth.json"
#: ``lines``: HashEmbedder vectors with a vector per unit (line or paragraph) as well,
#: stored as the default configuration stores the local model's (``store.lineVectors``)
INDEXES = ("fts", "hash", "lines")


def _commit() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=common.REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip()


def _root(n: int, seed: int) -> Path:
    return common.CACHE_DIR / "synthetic" / f"{n}-{seed}"


# -- children -----------------------------------------------------------------------
def child_index(n: int, seed: int, kind: str) -> dict[str, Any]:
    """Cold index of one kind (``fts``: no provider; ``hash``: HashEmbedder vectors;
    ``lines``: HashEmbedder vectors per chunk and per unit, the default's shape)."""
    root = _root(n, seed)
    provider = synthetic.HashEmbedder() if kind != "fts" else None
    common.log(f"{n}: cold index ({kind})")
    lines = True if kind == "lines" else None
    out = scale.cold_index(root / "ws", root / f"state-{kind}", provider, line_vectors=lines)
    out["peak_rss_mb"] = round(scale.vm_hwm_mb(), 1)
    return out


def child_latency(n: int, seed: int, n_queries: int, kind: str = "hash") -> dict[str, Any]:
    """FTS-only and hybrid latency on the hash-vector index (``lines``: the one with
    unit vectors too, ranked as the default ranks), MiniLM query embedding, in a
    process set up as ``memdeck mcp`` and the app set theirs up: numpy's BLAS on one
    thread and the vector scan split over two (``engine/blas.py``)."""
    from engine.blas import limit_blas_threads
    from engine.index.vector_matrix import split_scans_beside_one_blas_thread

    limit_blas_threads()  # the command sets it before numpy loads
    split_scans_beside_one_blas_thread()
    root = _root(n, seed)
    state = root / f"state-{kind}"
    if kind == "lines":
        engine = scale.open_with_line_vectors(root / "ws", state, synthetic.HashEmbedder(), True)
    else:
        engine = common.open_engine(root / "ws", state, synthetic.HashEmbedder())
    qprov, qname = scale.query_embedder()
    qprov.embed_query("warm up the model")
    if kind == "lines":  # the stored units are HashEmbedder's: score them as the default
        qprov = synthetic.TimedStandIn(qprov, synthetic.HashEmbedder())
        qname = f"{qname}, timed only"
    queries = synthetic.queries(n_queries, seed)
    opts = common.default_options()
    out: dict[str, Any] = {"query_embedder": qname, "queries": n_queries}
    # the first hybrid search pays for loading the vectors (numpy path) or the pages
    t0 = time.perf_counter()
    first = retrieve(engine.store, qprov, queries[0], opts, vector_path="auto")
    out["first_hybrid_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    out["first_vector_ms"] = round(first.vector_ms, 1)
    out["vector_path"] = "sqlite-vec" if engine.store._auto_prefers_vec() else "numpy"
    common.log(f"{n}: FTS-only")
    out["fts_only"] = scale.time_queries(engine, None, queries, opts.with_(mode="fts"), "auto")
    common.log(f"{n}: hybrid")
    out["hybrid"] = scale.time_queries(engine, qprov, queries, opts, "auto")
    qprov.close()
    engine.close()
    out["peak_rss_mb"] = round(scale.vm_hwm_mb(), 1)
    return out


# -- parent -------------------------------------------------------------------------
def spawn(args: list[str]) -> dict[str, Any] | None:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = Path(tmp.name)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.bench.growth", *args, "--out", str(out)],
        cwd=common.REPO_ROOT,
    )
    try:
        if proc.returncode != 0 or out.stat().st_size == 0:
            common.log(f"child {' '.join(args)} failed (exit {proc.returncode})")
            return None
        data: dict[str, Any] = json.loads(out.read_text())
        return data
    finally:
        out.unlink(missing_ok=True)


def load() -> dict[str, Any]:
    if RESULTS.exists():
        data: dict[str, Any] = json.loads(RESULTS.read_text())
        return data
    return {"sizes": {}}


def record(n: int, step: str, value: dict[str, Any], command: str, loads: list[Any]) -> None:
    data = load()
    value = {
        **value,
        "command": command,
        "commit": _commit(),
        "loadavg_before_after": [[round(x, 2) for x in la] for la in loads],
        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    data.setdefault("sizes", {}).setdefault(str(n), {})[step] = value
    common.write_results("growth", {k: v for k, v in data.items() if k != "machine"})


def _cell(entry: dict[str, Any] | None, *path: str, fmt: str = "{}") -> str:
    for key in path:
        if not isinstance(entry, dict) or key not in entry:
            return "–"
        entry = entry[key]
    return fmt.format(entry)


def table() -> str:
    data = load()
    rows = []
    for n, e in sorted(data.get("sizes", {}).items(), key=lambda kv: int(kv[0])):
        lat = e.get("latency")
        lines = e.get("latency_lines")
        rows.append(
            [
                f"{int(n):,}",
                _cell(e, "manifest", "files", fmt="{:,}"),
                _cell(e, "manifest", "text_mb", fmt="{:.1f}"),
                _cell(e, "index_fts", "seconds", fmt="{:.1f}"),
                _cell(e, "index_fts", "index_mb", fmt="{:.1f}"),
                _cell(e, "index_fts", "peak_rss_mb", fmt="{:.0f}"),
                _cell(e, "index_hash", "seconds", fmt="{:.1f}"),
                _cell(e, "index_hash", "index_mb", fmt="{:.1f}"),
                _cell(e, "index_hash", "peak_rss_mb", fmt="{:.0f}"),
                (
                    f"{lat['fts_only']['total']['p50']:.1f} / {lat['fts_only']['total']['p95']:.1f}"
                    if lat
                    else "–"
                ),
                (
                    f"{lat['hybrid']['total']['p50']:.1f} / {lat['hybrid']['total']['p95']:.1f}"
                    if lat
                    else "–"
                ),
                _cell(lat, "hybrid", "vector_p50", fmt="{:.1f}"),
                _cell(lat, "first_hybrid_ms", fmt="{:.0f}"),
                _cell(lat, "peak_rss_mb", fmt="{:.0f}"),
                _cell(e, "index_lines", "seconds", fmt="{:.1f}"),
                _cell(e, "index_lines", "index_mb", fmt="{:.1f}"),
                _cell(e, "index_lines", "peak_rss_mb", fmt="{:.0f}"),
                (
                    f"{lines['hybrid']['total']['p50']:.1f} / {lines['hybrid']['total']['p95']:.1f}"
                    if lines
                    else "–"
                ),
                _cell(lines, "peak_rss_mb", fmt="{:.0f}"),
            ]
        )
    return common.table(
        [
            "chunks",
            "files",
            "text MB",
            "cold index FTS-only s",
            "index MB FTS-only",
            "peak RSS MB",
            "cold index + hash vectors s",
            "index MB with vectors",
            "peak RSS MB",
            "FTS-only p50/p95 ms",
            "hybrid p50/p95 ms",
            "of it vector p50 ms",
            "first hybrid ms",
            "peak RSS searching MB",
            "default shape: cold index s",
            "index MB",
            "peak RSS MB",
            "hybrid p50/p95 ms",
            "peak RSS searching MB",
        ],
        rows,
        title=(
            "How cost grows (synthetic daily logs, 400-token chunks; vectors from the hash "
            "stand-in; 'default shape' = a vector per unit as well, as the default stores)"
        ),
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("phase", choices=("index", "latency", "table", "child"))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--seed", type=int, default=synthetic.DEFAULT_SEED)
    ap.add_argument("--queries", type=int, default=30, help="timed queries per cell")
    ap.add_argument("--only", choices=INDEXES, help="index: build only this index")
    ap.add_argument(
        "--latency-on",
        choices=("hash", "lines"),
        default="hash",
        help="latency: the index to search (lines: with unit vectors, the default's shape)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.phase == "child":
        if args.child == "latency":
            data = child_latency(args.size, args.seed, args.queries, args.latency_on)
        else:
            data = child_index(args.size, args.seed, args.child)
        args.out.write_text(json.dumps(data))
        return
    if args.phase == "table":
        table()
        return
    command = ".venv/bin/python -m tests.bench.growth " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:])
    )
    for n in (int(s) for s in args.sizes.split(",") if s):
        with common.Stopwatch() as sw:
            manifest = synthetic.generate(_root(n, args.seed), n, args.seed)
        common.log(f"{n}: {manifest['files']} files ({sw.seconds:.1f} s to generate or find)")
        record(
            n,
            "manifest",
            {"files": manifest["files"], "text_mb": round(int(str(manifest["bytes"])) / 2**20, 1)},
            command,
            [],
        )
        steps = [args.only] if args.only else list(INDEXES)
        jobs = (
            [(f"index_{k}", ["child", "--child", k]) for k in steps]
            if args.phase == "index"
            else [
                (
                    "latency" if args.latency_on == "hash" else "latency_lines",
                    [
                        "child",
                        "--child",
                        "latency",
                        "--queries",
                        str(args.queries),
                        "--latency-on",
                        args.latency_on,
                    ],
                )
            ]
        )
        for step, child_args in jobs:
            before = os.getloadavg()
            got = spawn([*child_args, "--size", str(n), "--seed", str(args.seed)])
            if got is not None:
                record(n, step, got, command, [before, os.getloadavg()])
    table()


if __name__ == "__main__":
    main()
