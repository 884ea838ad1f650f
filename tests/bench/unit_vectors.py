"""Cold index with unit vectors pooled from the chunk's run, embedded on their own,
and without unit vectors, back to back (``engine.embeddings.late_units``).

On LoCoMo conversation 5 written as daily logs (the cost benchmark's workspace),
each variant indexes into a fresh state folder: wall seconds and CPU seconds (this
process: llama.cpp's threads included), the load average before and after, KB/s
and chunks/s; then how far the late run's chunk vectors are from the separate
run's (the chunk vector must not change: the mean of the token rows is the pooled
embedding, to float32 rounding) and how the two kinds of unit vectors compare.
The variants run in the order given by ``--order``, ``--rounds`` times, so that a
change of the machine's load falls on all of them.

Run: ``.venv/bin/python -m tests.bench.unit_vectors``; results go to
tests/bench/results/unit_vectors.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.bench import common
from tests.bench.locomo import write_conversation_workspace

VARIANTS = ("none", "separate", "late")


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def cold_index(ws: Path, state: Path, variant: str) -> dict[str, Any]:
    from engine.core import Engine
    from engine.embeddings.local import LocalProvider

    settings = common.bench_settings(ws, state)
    store = dataclasses.replace(settings.memory_search.store, line_vectors=variant != "none")
    ms = dataclasses.replace(settings.memory_search, store=store)
    base = common.local_provider()
    assert isinstance(base, LocalProvider)
    provider = LocalProvider(base.path, n_threads=base.n_threads, late_units=variant == "late")
    engine = Engine(dataclasses.replace(settings, memory_search=ms), provider=provider)
    markdown = sum(f.size for f in engine.source_files())
    provider.dims  # noqa: B018 - the model loads before the clock starts
    before, cpu0, t0 = os.getloadavg()[0], _cpu(), time.perf_counter()
    done = engine.sync(reason="bench")
    seconds, cpu = time.perf_counter() - t0, _cpu() - cpu0
    engine.close()
    return {
        "variant": variant,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "load_before": round(before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "chunks": done.chunks_embedded,
        "kb_per_s": round(markdown / 1024 / seconds, 1),
        "chunks_per_s": round(done.chunks_embedded / seconds, 2),
        "markdown_bytes": markdown,
    }


def compare(separate: Path, late: Path) -> dict[str, Any]:
    """Chunk vectors of the two indexes (must match) and their unit vectors."""
    a_chunks, a_units = common.stored_vectors(separate / "index.memdeck.sqlite")
    b_chunks, b_units = common.stored_vectors(late / "index.memdeck.sqlite")
    common_hashes = sorted(set(a_chunks) & set(b_chunks))
    diff = max(float(np.abs(a_chunks[h] - b_chunks[h]).max()) for h in common_hashes)
    cosines = np.concatenate(
        [
            np.sum(a_units[h] * b_units[h], axis=1)
            for h in common_hashes
            if h in a_units and h in b_units and a_units[h].shape == b_units[h].shape
        ]
    )
    return {
        "chunks_compared": len(common_hashes),
        "chunk_vector_max_abs_diff": diff,
        "units_compared": int(cosines.size),
        "unit_cosine_late_vs_separate": {
            "mean": round(float(cosines.mean()), 4),
            "p10": round(float(np.percentile(cosines, 10)), 4),
            "min": round(float(cosines.min()), 4),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conv", type=int, default=5, help="LoCoMo conversation (default 5)")
    parser.add_argument("--rounds", type=int, default=1, help="times each variant runs")
    parser.add_argument("--order", default="none,separate,late", help="variants, in order")
    args = parser.parse_args(argv)
    order = args.order.split(",")
    if any(v not in VARIANTS for v in order):
        raise SystemExit(f"--order takes {', '.join(VARIANTS)}")
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memdeck-units-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        write_conversation_workspace(args.conv, ws)
        for _ in range(args.rounds):
            for variant in order:
                state = root / f"state-{variant}"
                shutil.rmtree(state, ignore_errors=True)
                common.log(f"cold index, unit vectors: {variant}")
                runs.append(cold_index(ws, state, variant))
        compared = (
            compare(root / "state-separate", root / "state-late")
            if {"separate", "late"} <= set(order)
            else None
        )

    def total(variant: str, key: str) -> float:
        return sum(r[key] for r in runs if r["variant"] == variant)

    ratios = {
        f"{v}_over_none_{key}": round(total(v, key) / total("none", key), 3)
        for v in ("separate", "late")
        for key in ("seconds", "cpu_seconds")
        if v in order and "none" in order
    }
    payload = {
        "machine": common.machine_info(),
        "conversation": args.conv,
        "runs": runs,
        "ratios": ratios,
        "compared": compared,
    }
    path = common.write_results("unit_vectors", payload)
    print(
        common.table(
            ["variant", "wall s", "CPU s", "load before→after", "KB/s", "chunks/s"],
            [
                [
                    r["variant"],
                    r["seconds"],
                    r["cpu_seconds"],
                    f"{r['load_before']}→{r['load_after']}",
                    r["kb_per_s"],
                    r["chunks_per_s"],
                ]
                for r in runs
            ],
            title=f"cold index, LoCoMo conversation {args.conv}",
        )
    )
    print(json.dumps({"ratios": ratios, "compared": compared}, indent=1))
    print(f"results: {path}")


if __name__ == "__main__":
    main()
