"""What the check after an unclean shutdown costs (docs/robustness.md).

Usage: python -m tests.bench.bench_crash_check [--sizes 10000,100000] [--build]

``--build`` writes the synthetic workspaces (``tests.bench.synthetic``) under
``tests/bench/.cache/crash-check/`` and indexes them with the 384-dim
``HashEmbedder`` (CPU-heavy: run it under ``/work/wt/run``, once). Without it,
each size is opened three times and timed: a clean open, an open after a writer
died holding the lock (its pid is left in ``<index>.lock`` exactly as a
``kill -9`` leaves it, which makes the engine run ``pragma quick_check`` and the
sqlite-vec consistency check), and ``quick_check`` alone. Median of 3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from tests.bench.common import open_engine
from tests.bench.synthetic import HashEmbedder, generate

CACHE = Path(__file__).parent / ".cache" / "crash-check"
DEAD_PID = 2**22 + 12345  # above Linux's default pid_max: never a live process


def build(n: int) -> None:
    root = CACHE / str(n)
    generate(root, n)
    engine = open_engine(root / "ws", root / "state", HashEmbedder())
    try:
        engine.vector_path = "sqlite-vec"  # the vec table exists, so its check runs too
        engine.sync()
    finally:
        engine.close()


def measure(n: int) -> dict[str, object]:
    root = CACHE / str(n)
    index = root / "state" / "index.memdeck.sqlite"
    clean, crashed, quick = [], [], []
    note = None
    for _ in range(3):
        t0 = time.perf_counter()
        engine = open_engine(root / "ws", root / "state", HashEmbedder())
        clean.append(time.perf_counter() - t0)
        engine.close()
        Path(str(index) + ".lock").write_text(str(DEAD_PID))
        t0 = time.perf_counter()
        engine = open_engine(root / "ws", root / "state", HashEmbedder())
        crashed.append(time.perf_counter() - t0)
        note = engine.integrity_check
        t0 = time.perf_counter()
        assert engine.quick_check() == "ok"
        quick.append(time.perf_counter() - t0)
        chunks = engine.status().chunks
        engine.close()
    return {
        "chunks": chunks,
        "index_mb": round(index.stat().st_size / 1e6, 1),
        "clean_open_s": round(statistics.median(clean), 3),
        "open_after_crash_s": round(statistics.median(crashed), 3),
        "quick_check_s": round(statistics.median(quick), 3),
        "note": note,
        "load": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--build", action="store_true")
    args = parser.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        if args.build:
            build(n)
            print(f"built {n}", flush=True)
        else:
            print(json.dumps({"size": n, **measure(n)}), flush=True)


if __name__ == "__main__":
    main()
