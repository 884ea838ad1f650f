"""The local model's attention kernel: a cold index with llama.cpp's fused (flash)
attention and without it, with unit vectors and without, back to back.

On LoCoMo conversation 5 (106 KB of chat, 90 chunks), the real MiniLM GGUF on the
machine's threads; the order of the runs alternates between rounds so that a
machine getting slower or faster does not favour one kernel. Also the largest
difference between the two kernels' vectors of the same index (chunks and units).

    .venv/bin/python -m tests.bench.attention [--rounds 2] [--conv 5]

Results go to tests/bench/results/attention.json.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import engine.embeddings.local as local
from tests.bench import common
from tests.bench.cost import cold_index
from tests.bench.locomo import write_conversation_workspace


def _row(run: dict[str, Any]) -> list[Any]:
    kernel = "fused" if run["fused"] else "plain"
    units = "on" if run["line_vectors"] else "off"
    return [run["round"], kernel, units, run["seconds"], run["load_before"], run["chunks_per_s"]]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conv", type=int, default=5, help="LoCoMo conversation (default 5)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    runs: list[dict[str, Any]] = []
    kept: dict[bool, Path] = {}
    with tempfile.TemporaryDirectory(prefix="memdeck-attention-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        write_conversation_workspace(args.conv, ws)
        for r in range(args.rounds):
            order = [True, False] if r % 2 == 0 else [False, True]
            for fused in order:
                for lines in (True, False):
                    local.FLASH_ATTENTION = fused
                    state = root / f"state-{r}-{int(fused)}-{int(lines)}"
                    common.log(f"round {r + 1}: fused {fused}, unit vectors {lines}")
                    got = cold_index(ws, state, lines)
                    runs.append({"round": r + 1, "fused": fused, **got})
                    if lines and r == 0:
                        kept[fused] = state / "index.memdeck.sqlite"
        (c1, u1), (c0, u0) = common.stored_vectors(kept[True]), common.stored_vectors(kept[False])
        diff = {
            "chunks": max(float(np.abs(c1[h] - c0[h]).max()) for h in c1 if h in c0),
            "units": max(float(np.abs(u1[h] - u0[h]).max()) for h in u1 if h in u0),
        }
    local.FLASH_ATTENTION = True
    payload = {"machine": common.machine_info(), "conversation": args.conv, "runs": runs,
               "largest_vector_difference": diff}  # fmt: skip
    path = common.write_results("attention", payload)
    print(
        common.table(
            ["round", "attention", "unit vectors", "cold index s", "load", "chunks/s"],
            [_row(x) for x in runs],
            title=f"cold index of LoCoMo conv-{args.conv}, by attention kernel",
        )
    )
    print(f"largest difference between the kernels' vectors: {diff}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
