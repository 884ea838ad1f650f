"""What the default configuration costs, from one run (``make bench-cost``).

On LoCoMo conversation 5 (a chat log: 106 KB of Markdown), with the default
configuration (the local MiniLM, line vectors on):

* the index's size against the Markdown's, and table by table (SQLite's dbstat);
* a cold index with line vectors and without (``store.lineVectors: false``),
  back to back, with KB/s and chunks/s;
* whole-process wall times of ``memdeck search`` keyword-only and hybrid and of
  ``memdeck get`` (the median of ``--runs``), and the top-level modules a
  keyword-only search imports;
* a paired run against OpenClaw 2026.9.6's CLI (``openclaw memory search --json``,
  keyword-only as its ``provider: "none"``) on the same workspace: wall time and
  peak RSS of each process, beside ``memdeck search --mode fts``'s;
* the app's start on the demo workspace (``tests.bench.bench_tui``'s measure: launch
  to a usable search box, and to the provider shown);

each timing beside the machine's load average. Results go to
tests/bench/results/cost.json; docs/benchmarks/ keeps the dated reports.

The package's modules are compiled to bytecode first, as an installed package's
are: where ``PYTHONDONTWRITEBYTECODE`` is set (CI containers set it) an editable
checkout would otherwise compile ~200 modules on every call, ~0.1 s of each.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench import common
from tests.bench.locomo import write_conversation_workspace

REPO = Path(__file__).resolve().parents[2]
_IMPORTS = """
import json, runpy, sys
sys.argv = ["memdeck", *json.loads(sys.argv[1])]
try:
    runpy.run_module("engine.cli.main", run_name="__main__")
except SystemExit:
    pass
print("IMPORTED " + json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""


def load() -> float:
    return round(os.getloadavg()[0], 2)


def table_sizes(index: Path) -> dict[str, int]:
    """Bytes per table (indexes and FTS5's shadow tables under their own names)."""
    from engine.index.db import Database

    db = Database(index)
    try:
        rows = db.execute("select name, sum(pgsize) from dbstat group by name order by 2 desc")
    finally:
        db.close()
    return {str(name): int(size) for name, size in rows}


def cold_index(ws: Path, state: Path, line_vectors: bool) -> dict[str, Any]:
    from engine.core import Engine

    settings = common.bench_settings(ws, state)
    store = dataclasses.replace(settings.memory_search.store, line_vectors=line_vectors)
    ms = dataclasses.replace(settings.memory_search, store=store)
    engine = Engine(
        dataclasses.replace(settings, memory_search=ms), provider=common.local_provider()
    )
    markdown = sum(f.size for f in engine.source_files())
    before = load()
    t0 = time.perf_counter()
    done = engine.sync(reason="bench")
    seconds = time.perf_counter() - t0
    engine.close()
    index = settings.memory_search.store.path
    assert index is not None
    size = index.stat().st_size
    return {
        "line_vectors": line_vectors,
        "seconds": round(seconds, 2),
        "load_before": before,
        "load_after": load(),
        "chunks": done.chunks_embedded,
        "kb_per_s": round(markdown / 1024 / seconds, 1),
        "chunks_per_s": round(done.chunks_embedded / seconds, 2),
        "markdown_bytes": markdown,
        "index_bytes": size,
        "ratio": round(size / markdown, 2),
        "tables": table_sizes(index),
    }


#: seconds of rest between the cold index and the timed CLI calls
SETTLE_S = 20


def cli_times(ws: Path, index: Path, state: Path, runs: int) -> dict[str, Any]:
    """Whole-process times of the CLI on the default run's index (``store.path``)."""
    env = {**os.environ, "OPENCLAW_STATE_DIR": str(state), "MEMDECK_HOME": str(state / "md")}
    state.mkdir(parents=True, exist_ok=True)
    config = state / "openclaw.json"
    config.write_text(
        json.dumps({"agents": {"defaults": {"memorySearch": {"store": {"path": str(index)}}}}})
    )
    memdeck = [sys.executable, "-m", "engine.cli.main"]
    where = ["--config", str(config), "-w", str(ws)]
    calls = {
        "search_fts": ["search", "Caroline support group", "--mode", "fts", *where],
        "search_hybrid": ["search", "Caroline support group", *where],
        "get": ["get", "MEMORY.md", *where],
    }
    out: dict[str, Any] = {}
    for name, argv in calls.items():
        times = []
        loads = []
        for _ in range(runs):
            loads.append(load())
            t0 = time.perf_counter()
            subprocess.run([*memdeck, *argv], env=env, cwd=REPO, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
        out[name] = {
            "median_s": round(statistics.median(times), 3),
            "min_s": round(min(times), 3),
            "load": loads,
        }
    probe = subprocess.run(
        [sys.executable, "-c", _IMPORTS, json.dumps(calls["search_fts"])],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in probe.stderr.splitlines() if x.startswith("IMPORTED "))
    out["search_fts_imports"] = json.loads(line[len("IMPORTED ") :])
    return out


#: GNU time prints the command's own peak RSS: a child forked from this (large) process
#: would report the parent's pages as its high-water mark until its exec
_GNU_TIME = "/usr/bin/time"


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one process (RSS 0 without GNU time)."""
    wrap = [_GNU_TIME, "-f", "PEAK_RSS_KB %M"] if Path(_GNU_TIME).exists() else []
    t0 = time.perf_counter()
    proc = subprocess.run([*wrap, *argv], env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    peak = [x for x in proc.stderr.splitlines() if x.startswith("PEAK_RSS_KB ")]
    return wall, int(peak[-1].split()[1]) / 1024 if peak else 0.0


def paired_openclaw(ws: Path, root: Path, runs: int) -> dict[str, Any] | None:
    """``openclaw memory search --json`` against ``memdeck search --mode fts`` on the
    same workspace and query, alternating, keyword-only on both sides (OpenClaw with
    ``provider: "none"``, each with its own index built first)."""
    from tests.openclaw.reference import PREFIX, Reference

    ref = Reference(PREFIX)
    if not ref.launcher.exists():
        common.log("OpenClaw is not installed (bash scripts/install_openclaw.sh): no paired run")
        return None
    home = root / "openclaw-home"
    home.mkdir()
    ref.cli(home, ws, "memory", "index")  # writes its config and builds its index
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home / "state"),
        "OPENCLAW_CONFIG_PATH": str(home / "openclaw.json"),
        "NO_COLOR": "1",
        "CI": "1",
    }
    query = "Caroline support group"
    state = root / "paired-memdeck"
    ours_env = {**os.environ, "OPENCLAW_STATE_DIR": str(state), "MEMDECK_HOME": str(state)}
    memdeck = [sys.executable, "-m", "engine.cli.main"]
    subprocess.run([*memdeck, "index", "-w", str(ws)], env=ours_env, cwd=REPO, check=True,
                   capture_output=True)  # fmt: skip
    theirs, ours = [], []
    loads = []
    for _ in range(runs):
        loads.append(load())
        theirs.append(_timed([str(ref.launcher), "memory", "search", "--json", query], env, home))
        ours.append(
            _timed([*memdeck, "search", query, "--mode", "fts", "-w", str(ws)], ours_env, REPO)
        )
    o_wall = statistics.median(w for w, _ in theirs)
    m_wall = statistics.median(w for w, _ in ours)
    return {
        "query": query,
        "openclaw_median_s": round(o_wall, 3),
        "openclaw_peak_rss_mib": round(max(r for _, r in theirs), 1),
        "memdeck_fts_median_s": round(m_wall, 3),
        "memdeck_fts_peak_rss_mib": round(max(r for _, r in ours), 1),
        "times_faster": round(o_wall / m_wall, 1),
        "load": loads,
    }


def app_start(runs: int) -> dict[str, Any]:
    from tests.bench.bench_tui import measure_startup

    before = load()
    got = measure_startup(runs)
    got.pop("runs")
    return {**{k: round(v, 3) if isinstance(v, float) else v for k, v in got.items()},
            "load_before": before, "load_after": load()}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conv", type=int, default=5, help="LoCoMo conversation (default 5)")
    parser.add_argument("--runs", type=int, default=5, help="CLI calls per timing")
    parser.add_argument(
        "--only-times", action="store_true", help="skip the cold indexes (CLI and app times)"
    )
    args = parser.parse_args(argv)
    for package in ("engine", "tui"):
        compileall.compile_dir(str(REPO / package), quiet=1)
    with tempfile.TemporaryDirectory(prefix="memdeck-cost-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        write_conversation_workspace(args.conv, ws)
        runs = []
        for line_vectors in (True, False) if not args.only_times else (True,):
            state = root / f"state-{'lines' if line_vectors else 'chunks'}"
            shutil.rmtree(state, ignore_errors=True)
            common.log(f"cold index, line vectors {'on' if line_vectors else 'off'}")
            runs.append(cold_index(ws, state, line_vectors))
        if args.only_times:
            runs.append(runs[0])  # not reported: see ``only_times`` below
        # the cold index kept both cores busy for ~45 s; CLI calls started right after
        # it ran ~0.1 s slower for several seconds (0.42 against 0.31 s, the same calls
        # a minute later), so the machine is given a while first
        time.sleep(SETTLE_S)
        common.log("CLI calls")
        cli = cli_times(ws, root / "state-lines" / "index.memdeck.sqlite", root / "cli", args.runs)
        common.log("paired with OpenClaw's CLI")
        paired = paired_openclaw(ws, root, args.runs)
    common.log("the app's start on the demo workspace")
    app = app_start(args.runs)
    with_lines, without = runs
    payload = {
        "machine": common.machine_info(),
        "conversation": args.conv,
        "default": with_lines,
        "without_line_vectors": None if args.only_times else without,
        "index_time_ratio": (
            None if args.only_times else round(with_lines["seconds"] / without["seconds"], 2)
        ),
        "cli": cli,
        "paired_openclaw": paired,
        "app_start": app,
    }
    path = common.write_results("cost", payload)
    print(
        common.table(
            ["measure", "value"],
            [
                ["index ÷ Markdown (default)", f"{with_lines['ratio']}×"],
                ["index bytes (default)", f"{with_lines['index_bytes']:,}"],
                [
                    "cold index, default",
                    f"{with_lines['seconds']} s (load {with_lines['load_before']})",
                ],
                *(
                    []
                    if args.only_times
                    else [
                        ["index ÷ Markdown (no line vectors)", f"{without['ratio']}×"],
                        [
                            "cold index, no line vectors",
                            f"{without['seconds']} s (load {without['load_before']})",
                        ],
                        ["time ratio", f"{payload['index_time_ratio']}×"],
                    ]
                ),
                [
                    "KB/s, chunks/s (default)",
                    f"{with_lines['kb_per_s']}, {with_lines['chunks_per_s']}",
                ],
                *[
                    [f"memdeck {k} (median)", f"{v['median_s']} s (load {v['load'][0]})"]
                    for k, v in cli.items()
                    if isinstance(v, dict)
                ],
                *(
                    [
                        [
                            "OpenClaw CLI search (median, peak RSS)",
                            f"{paired['openclaw_median_s']} s, "
                            f"{paired['openclaw_peak_rss_mib']} MiB",
                        ],
                        [
                            "memdeck search --mode fts, same run",
                            f"{paired['memdeck_fts_median_s']} s, "
                            f"{paired['memdeck_fts_peak_rss_mib']} MiB "
                            f"(×{paired['times_faster']} faster)",
                        ],
                    ]
                    if paired
                    else []
                ),
                [
                    "app: launch → usable search box (median)",
                    f"{app['to_usable_s_median']} s (load {app['load_before']})",
                ],
                ["app: launch → provider shown (median)", f"{app['to_ready_s_median']} s"],
            ],
            title=f"cost of the default, LoCoMo conv-{args.conv}",
        )
    )
    print("tables (default):")
    for name, size in list(with_lines["tables"].items())[:12]:
        print(f"  {name:32} {size:>10,}")
    print("keyword-only search imports:", " ".join(cli["search_fts_imports"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
