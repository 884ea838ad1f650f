"""``memory_search`` through ``memdeck mcp`` vs a ``memdeck search`` process per call.

What an agent pays per memory lookup, on a 10,000-chunk synthetic workspace
with the local MiniLM (llama.cpp) embedding every query:

* **stdio**: the MCP SDK's own client starts ``memdeck mcp`` once and calls
  ``memory_search`` for each query; per-call wall time at the client (JSON-RPC
  over pipes, validation, search, recall logging, the answer's JSON included).
* **CLI**: ``memdeck search QUERY --json`` as a fresh process per call, in the
  same run and on the same index (process start, imports, model load, search).

(The HTTP transport under 100 concurrent clients is ``tests.bench.mcp_http_load``.)

The stored vectors are ``HashEmbedder`` vectors filed under MiniLM's
fingerprint: embedding 10,000 chunks with MiniLM takes ~40 minutes on this
machine (≈4 chunks/s, see results/scale.json), and what a search costs does
not depend on what the stored numbers are (the same 384 floats per chunk,
the same sqlite-vec scan). Every *query* is embedded by the real MiniLM, in
the server process and in each CLI process alike.

Run: ``make bench-mcp`` (``.venv/bin/python -m tests.bench.mcp_latency``; ``--calls``
and ``--cli-calls`` change the sizes). Results go to
``tests/bench/results/mcp_latency.json`` with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from engine.config.loader import load_settings
from engine.core import Engine
from engine.embeddings.base import EmbeddingProvider
from tests.bench import common, synthetic
from tests.bench.scale import percentiles

N_CHUNKS = 10_000
SEED = 7
#: untimed calls before the timed ones (distinct queries too)
WARMUP = 5


class HashVectorsInMiniLMSpace(synthetic.HashEmbedder):
    """Hash vectors filed under the real model's fingerprint (see the module docstring)."""

    def __init__(self, real: EmbeddingProvider):
        super().__init__(real.dims)
        self._fp = real.fingerprint()
        self.id = str(self._fp.get("provider", "local"))
        self.model = str(self._fp.get("model"))

    def fingerprint(self) -> dict[str, object]:
        return dict(self._fp)


def prepare(root: Path) -> tuple[Path, Path, dict[str, str]]:
    """The workspace, the config naming MiniLM and the index, and the child env."""
    synthetic.generate(root, N_CHUNKS, SEED)
    ws = root / "ws"
    state = root / "state-mcp"
    state.mkdir(parents=True, exist_ok=True)
    real = common.local_provider()
    config = state / "openclaw.json"
    config.write_text(
        json.dumps(
            {
                "agents": {
                    "defaults": {
                        "workspace": str(ws),
                        "memorySearch": {
                            "provider": "local",
                            "local": {"modelPath": str(real.path)},
                            "store": {"path": str(state / "index.memdeck.sqlite")},
                        },
                    }
                }
            }
        )
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(config),
        "MEMDECK_HOME": str(state / "memdeck"),
        "PYTHONPATH": str(common.REPO_ROOT),
    }
    settings = load_settings(config_path=config, workspace=ws, env=env)
    engine = Engine(settings, provider=HashVectorsInMiniLMSpace(real))
    with common.Stopwatch() as sw:
        done = engine.sync(reason="bench")
    chunks = engine.store.counts()["chunks"]
    engine.close()
    real.close()
    common.log(f"index: {chunks} chunks ({done.files_indexed} files indexed in {sw.seconds:.1f}s)")
    return ws, config, env


async def wait_idle(client: Any, timeout: float = 600) -> dict[str, Any]:
    """Until the server's start-up sync is done: steady state is what an agent meets."""
    deadline = time.monotonic() + timeout
    while True:
        st = (await client.call_tool("memory_status", {})).structured_content or {}
        sync = st.get("sync") or {}
        if sync.get("syncs_done", 0) >= 1 and not sync.get("running"):
            return st
        if time.monotonic() > deadline:
            raise SystemExit(f"the server's start-up sync did not finish: {sync}")
        await anyio.sleep(0.5)


def server_cmd(ws: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "engine.cli.main", "mcp", "--workspace", str(ws), *extra]


async def stdio_run(
    ws: Path, env: dict[str, str], warm: list[str], queries: list[str]
) -> dict[str, Any]:
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = server_cmd(ws)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env, cwd=str(common.REPO_ROOT))
    times: list[float] = []
    errors = 0
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            client_info=types.Implementation(name="bench-stdio", version="1"),
        ) as client:
            connect_s = time.perf_counter() - started
            await wait_idle(client)
            ready_s = time.perf_counter() - started
            for q in warm:  # load the matrix and postings; never timed, never repeated
                await client.call_tool("memory_search", {"query": q})
            for q in queries:
                t0 = time.perf_counter()
                result = await client.call_tool("memory_search", {"query": q})
                times.append((time.perf_counter() - t0) * 1000)
                errors += bool(result.is_error)
            status = await client.call_tool("memory_status", {})
    st = status.structured_content or {}
    return {
        "connect_s": round(connect_s, 2),
        "startup_sync_done_s": round(ready_s, 2),
        "per_call_ms": percentiles(times),
        "errors": errors,
        "server_mode": st.get("mode"),
        "server_provider": st.get("provider"),
        "server_model": st.get("model"),
        "chunks": st.get("chunks"),
    }


def in_process_run(
    config: Path, ws: Path, env: dict[str, str], warm: list[str], queries: list[str]
) -> dict[str, Any]:
    """The same memory_search calls on an engine in this process: the engine's share."""
    from engine.blas import limit_blas_threads
    from engine.index.vector_matrix import split_scans_beside_one_blas_thread
    from engine.tools import memory_search

    limit_blas_threads()  # the command sets it before numpy loads (engine/blas.py)
    split_scans_beside_one_blas_thread()  # as `memdeck mcp` runs (engine/cli/mcp_command.py)
    engine = Engine(load_settings(config_path=config, workspace=ws, env=env))
    for q in warm:
        memory_search(engine, q, client="bench-in-process")
    times: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        memory_search(engine, q, client="bench-in-process")
        times.append((time.perf_counter() - t0) * 1000)
    engine.close()
    return {"per_call_ms": percentiles(times)}


def cli_run(ws: Path, env: dict[str, str], queries: list[str]) -> dict[str, Any]:
    times: list[float] = []
    modes = set()
    for q in queries:
        t0 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "engine.cli.main", "search", q, "--json", "-w", str(ws)],
            env=env,
            capture_output=True,
            text=True,
            cwd=common.REPO_ROOT,
        )
        times.append((time.perf_counter() - t0) * 1000)
        if r.returncode != 0:
            raise SystemExit(f"memdeck search failed: {r.stderr}")
        modes.add(json.loads(r.stdout)["mode"])
    return {"per_call_ms": percentiles(times), "modes": sorted(modes)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="stdio calls (after 5 warm-up)")
    ap.add_argument("--cli-calls", type=int, default=10, help="`memdeck search` processes")
    ap.add_argument("--out", default="mcp_latency", help="results file name (without .json)")
    args = ap.parse_args()
    root = common.CACHE_DIR / "synthetic" / f"{N_CHUNKS}-{SEED}"
    machine_before = common.machine_info()
    ws, config, env = prepare(root)
    # every timed query is new to the process that answers it: the provider's cache of
    # recent query vectors never answers for the model (a repeated query would)
    pool = synthetic.distinct_queries(WARMUP + max(args.calls, args.cli_calls), SEED)
    warm, queries = pool[:WARMUP], pool[WARMUP:]
    common.log(f"stdio: {args.calls} memory_search calls through the SDK client")
    stdio = anyio.run(stdio_run, ws, env, warm, queries[: args.calls])
    common.log(f"in-process: {args.calls} memory_search calls on an engine in this process")
    in_process = in_process_run(config, ws, env, warm, queries[: args.calls])
    common.log(f"cli: {args.cli_calls} `memdeck search --json` processes")
    cli = cli_run(ws, env, queries[: args.cli_calls])
    speedup = round(cli["per_call_ms"]["p50"] / stdio["per_call_ms"]["p50"], 1)
    payload = {
        "workspace_chunks": N_CHUNKS,
        "stored_vectors": "HashEmbedder rows under MiniLM's fingerprint; queries by real MiniLM",
        "stdio": stdio,
        "in_process": in_process,
        "cli": cli,
        "cli_p50_over_stdio_p50": speedup,
        "machine_before": machine_before,
        "machine_after": common.machine_info(),
    }
    out = common.write_results(args.out, payload)
    common.table(
        ["path", "p50 ms", "p95 ms", "n", "errors"],
        [
            ["stdio MCP (SDK client)", *_row(stdio["per_call_ms"]), stdio["errors"]],
            ["engine in-process (reference)", *_row(in_process["per_call_ms"]), 0],
            ["memdeck search process", *_row(cli["per_call_ms"]), 0],
        ],
        title=f"memory_search on {N_CHUNKS} chunks (MiniLM queries); CLI/stdio p50 {speedup}x",
    )
    print(f"load before {machine_before.get('loadavg')}; results: {out}")


def _row(p: dict[str, float] | None) -> list[Any]:
    return [p["p50"], p["p95"], p["n"]] if p else ["-", "-", 0]


if __name__ == "__main__":
    main()
