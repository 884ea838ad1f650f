"""``memdeck mcp --http`` under load: 100 concurrent clients × 20 ``memory_search`` calls.

The workspace, index and queries are ``tests.bench.mcp_latency``'s (10,000
chunks, every query embedded by the real MiniLM in the server). The server is
a real ``memdeck mcp --http 127.0.0.1:0`` process; each client is the MCP SDK's
own streamable-HTTP client with its own session (initialize, then its calls one
after another), and all clients run at once.

What must hold (the run exits 1 otherwise):

* zero errors: no tool error, no exception in a client (connect, session, call);
* no "database is locked" and no traceback on the server's stderr;
* every call recorded: the recall log holds one row per call under its client's
  name (recording swallows a failed write so a search never fails over it, so a
  lost row is how a lock timeout would show).

Reported: per-call latency at the client (p50/p95/p99/max), calls per second,
the wall time, and the server's own recall-write failures.

Run: ``make bench-mcp-http`` (``.venv/bin/python -m tests.bench.mcp_http_load``;
``--clients``, ``--per-client``, ``--servers`` to change the shape: with
``--servers 2`` the clients are split over two server processes on one index,
both running their background sync). Results go to
``tests/bench/results/mcp_http_load.json`` with the machine's load.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from engine.config.loader import load_settings
from engine.core import Engine
from engine.memory.recall import load_searches
from tests.bench import common, synthetic
from tests.bench.mcp_latency import N_CHUNKS, SEED, prepare, server_cmd, wait_idle

CLIENT_PREFIX = "bench-http-"


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else ordered
    pick = (lambda i: q[i]) if len(q) > 1 else (lambda i: q[0])
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(pick(94), 2),
        "p99": round(pick(98), 2),
        "max": round(ordered[-1], 2),
        "mean": round(statistics.fmean(ordered), 2),
        "n": len(ordered),
    }


class Server:
    """One ``memdeck mcp --http 127.0.0.1:0`` process; its stderr is kept."""

    def __init__(self, ws: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            server_cmd(ws, "--http", "127.0.0.1:0"),
            env=env,
            cwd=common.REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        self.lines: list[str] = []
        self.url = ""
        for line in self.proc.stderr:
            self.lines.append(line)
            if "listening on " in line:
                self.url = line.split("listening on ", 1)[1].strip()
                break
        if not self.url:
            raise SystemExit("memdeck mcp --http did not start:\n" + "".join(self.lines))

    def stop(self) -> str:
        self.proc.terminate()
        rest = self.proc.communicate(timeout=60)[1]
        return "".join(self.lines) + (rest or "")


async def load(
    urls: list[str], queries: list[str], clients: int, per_client: int
) -> dict[str, Any]:
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    for url in urls:  # steady state: each server's start-up sync is done
        async with Client(
            streamable_http_client(url),
            client_info=types.Implementation(name="bench-wait", version="1"),
        ) as c:
            await wait_idle(c)

    times: list[float] = []
    connect: list[float] = []
    failures: list[str] = []
    calls_ok = 0

    async def one_client(i: int) -> None:
        nonlocal calls_ok
        url = urls[i % len(urls)]
        http = httpx2.AsyncClient(timeout=300)
        transport = streamable_http_client(url, http_client=http)
        info = types.Implementation(name=f"{CLIENT_PREFIX}{i}", version="1")
        t0 = time.perf_counter()
        try:
            async with Client(transport, client_info=info) as client:
                connect.append((time.perf_counter() - t0) * 1000)
                for j in range(per_client):
                    q = queries[(i * per_client + j) % len(queries)]
                    t1 = time.perf_counter()
                    result = await client.call_tool("memory_search", {"query": q})
                    times.append((time.perf_counter() - t1) * 1000)
                    if result.is_error:
                        failures.append(f"client {i} call {j}: {result.content[0]}")
                    elif not isinstance((result.structured_content or {}).get("results"), list):
                        failures.append(f"client {i} call {j}: no results list")
                    else:
                        calls_ok += 1
        except Exception as exc:
            failures.append(f"client {i}: {type(exc).__name__}: {exc}")
        finally:
            await http.aclose()

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(one_client, i)
    wall = time.perf_counter() - started
    return {
        "calls": clients * per_client,
        "calls_ok": calls_ok,
        "errors": len(failures),
        "first_errors": failures[:5],
        "wall_s": round(wall, 2),
        "calls_per_s": round(len(times) / wall, 1) if wall else None,
        "per_call_ms": percentiles(times) if times else None,
        "session_open_ms": percentiles(connect) if connect else None,
    }


def recorded_per_client(config: Path, ws: Path, env: dict[str, str], since_id: int) -> Any:
    engine = Engine(load_settings(config_path=config, workspace=ws, env=env), provider=None)
    try:
        rows = load_searches(engine.store, limit=1_000_000, after_id=since_id)
    finally:
        engine.close()
    return collections.Counter(s.client for s in rows if s.client.startswith(CLIENT_PREFIX))


def last_search_id(config: Path, ws: Path, env: dict[str, str]) -> int:
    engine = Engine(load_settings(config_path=config, workspace=ws, env=env), provider=None)
    try:
        newest = load_searches(engine.store, limit=1)
    finally:
        engine.close()
    return newest[0].id if newest else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=100, help="concurrent HTTP clients")
    ap.add_argument("--per-client", type=int, default=20, help="memory_search calls per client")
    ap.add_argument("--servers", type=int, default=1, help="server processes on the one index")
    ap.add_argument("--out", default="mcp_http_load", help="results file name (without .json)")
    args = ap.parse_args()
    root = common.CACHE_DIR / "synthetic" / f"{N_CHUNKS}-{SEED}"
    machine_before = common.machine_info()
    ws, config, env = prepare(root)
    queries = synthetic.queries(max(200, args.clients), SEED)
    since = last_search_id(config, ws, env)
    servers = [Server(ws, env) for _ in range(args.servers)]
    common.log(
        f"http: {args.clients} clients x {args.per_client} memory_search calls "
        f"on {args.servers} server(s)"
    )
    try:
        result = anyio.run(load, [s.url for s in servers], queries, args.clients, args.per_client)
    finally:
        logs = [s.stop() for s in servers]
    log = "".join(logs)
    recorded = recorded_per_client(config, ws, env, since)
    missing = {
        f"{CLIENT_PREFIX}{i}": args.per_client - recorded.get(f"{CLIENT_PREFIX}{i}", 0)
        for i in range(args.clients)
    }
    missing = {k: v for k, v in missing.items() if v}
    payload = {
        "workspace_chunks": N_CHUNKS,
        "clients": args.clients,
        "calls_per_client": args.per_client,
        "servers": args.servers,
        **result,
        "database_locked": log.lower().count("database is locked"),
        "tracebacks": log.count("Traceback"),
        "searches_recorded": sum(recorded.values()),
        "clients_with_missing_records": len(missing),
        "machine_before": machine_before,
        "machine_after": common.machine_info(),
    }
    out = common.write_results(args.out, payload)
    p = result["per_call_ms"] or {}
    common.table(
        ["clients × calls", "servers", "ok", "errors", "p50 ms", "p95 ms", "p99 ms", "calls/s"],
        [
            [
                f"{args.clients} × {args.per_client}",
                args.servers,
                result["calls_ok"],
                result["errors"],
                p.get("p50", "-"),
                p.get("p95", "-"),
                p.get("p99", "-"),
                result["calls_per_s"],
            ]
        ],
        title=f"memdeck mcp --http: memory_search on {N_CHUNKS} chunks (MiniLM queries)",
    )
    print(
        f"database is locked: {payload['database_locked']} · tracebacks: {payload['tracebacks']}"
        f" · recorded {payload['searches_recorded']}/{result['calls']}"
    )
    print(f"load before {machine_before.get('loadavg')}; results: {out}")
    for e in result["first_errors"]:
        print(f"error: {e}", file=sys.stderr)
    bad = (
        result["errors"]
        or payload["database_locked"]
        or payload["tracebacks"]
        or payload["searches_recorded"] != result["calls"]
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
