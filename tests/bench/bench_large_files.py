"""Large memory files (docs/robustness.md, "Bounded memory").

Usage: python -m tests.bench.bench_large_files

Three one-file workspaces in a temp folder: a 2 GB sparse ``memory/huge.md``, a
3 GB sparse ``memory/big.md`` and a 2.2 GB dense ``memory/dense.md`` (every byte
written, so reading it costs what reading 2.2 GB costs). For each, ``memdeck
index`` and ``memdeck get … --lines 2`` run as real processes; the table gives
wall time, the process's peak RSS and the bytes it read through read syscalls
(``rchar``, imports included). The files are deleted at the end; the dense one
needs 2.2 GB of free disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.cli_process import REPO, cli_env

WRAPPER = """
import contextlib, io, json, resource, sys
from engine.cli.main import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
with open("/proc/self/io") as fh:
    counters = dict(line.split(": ") for line in fh.read().splitlines())
print(json.dumps({"rc": rc, "out": out.getvalue()[-300:], "rchar": int(counters["rchar"]),
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""
LINE = b"a line of the dense note, every byte of it on disk\n"


def sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.write(b"".join(b"line %d of the big note\n" % i for i in range(1000)))
        fh.truncate(size)


def dense(path: Path, size: int) -> None:
    block = LINE * (2**20 // len(LINE))
    with open(path, "wb") as fh:
        left = size
        while left >= len(block):
            fh.write(block)
            left -= len(block)
        fh.write(block[:left])


def run(args: list[str], env: dict[str, str]) -> dict[str, object]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True, env=env, cwd=REPO
    )
    wall = time.perf_counter() - t0
    data = json.loads(proc.stdout)
    return {
        "rc": data["rc"],
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(data["maxrss_kb"] / 1024, 1),
        "read_mb": round(data["rchar"] / 1e6, 1),
        "says": data["out"].strip().splitlines()[-1][:120] if data["out"].strip() else "",
    }


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="memdeck-large-"))
    rows = []
    try:
        for name, make, size in (
            ("huge.md (2 GB sparse)", sparse, 2 * 2**30),
            ("big.md (3 GB sparse)", sparse, 3 * 2**30),
            ("dense.md (2.2 GB dense)", dense, 2_200_000_000),
        ):
            file = name.split()[0]
            ws, state = root / file / "ws", root / file / "state"
            (ws / "memory").mkdir(parents=True)
            state.mkdir()
            (ws / "MEMORY.md").write_text("# Memory\n\nDana prefers flat white coffee.\n")
            make(ws / "memory" / file, size)
            env = cli_env(state)
            for label, args in (
                ("index", ["index", "--workspace", str(ws)]),
                ("get --lines 2", ["get", f"memory/{file}", "--lines", "2", "-w", str(ws)]),
            ):
                row = {"file": name, "command": f"memdeck {label}", **run(args, env)}
                rows.append(row)
                print(json.dumps(row), flush=True)
            (ws / "memory" / file).unlink()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = Path(__file__).parent / "results" / "large_files.json"
    out.write_text(json.dumps({"load": os.getloadavg(), "rows": rows}, indent=2) + "\n")
    print(f"{'file':26} {'command':22} {'wall s':>7} {'peak RSS MB':>12} {'read MB':>9}")
    for r in rows:
        print(
            f"{r['file']:26} {r['command']:22} {r['wall_s']:>7} {r['peak_rss_mb']:>12}"
            f" {r['read_mb']:>9}"
        )


if __name__ == "__main__":
    main()
