"""Several writers and searchers on one PostgreSQL database: errors, losses, p95.

4 writer processes (one workspace and namespace each) append a line with a
unique word to their daily log and sync, in a loop; 8 searcher processes run
hybrid searches over random namespaces meanwhile. Afterwards every appended word
must be findable in its namespace. Hash embeddings (``tests.bench.synthetic``),
so the numbers measure the store, not a model.

Run: ``.venv/bin/python -m tests.bench.pg_stress`` (``--seconds 60 --writers 4
--searchers 8``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.bench import common


def _env(home: Path, dsn: str, ns: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "MEMDECK_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home),
        "MEMDECK_STORE_BACKEND": "postgres",
        "MEMDECK_PG_DSN": dsn,
        "MEMDECK_PG_NAMESPACE": ns,
    }


def _engine(ws: Path, home: Path, dsn: str, ns: str, read_only: bool = False) -> Any:
    from engine.config.loader import load_settings
    from engine.core import Engine
    from tests.integration.sync_support import HashEmbedder

    env = _env(home, dsn, ns)
    settings = load_settings(workspace=ws, env=env)
    return Engine(settings, provider=HashEmbedder(), env=env, read_only=read_only)


def writer(i: int, root: str, dsn: str, seconds: float, start: Any, out: Any) -> None:
    ws = Path(root) / f"ws-{i}"
    eng = _engine(ws, Path(root) / f"home-{i}", dsn, f"writer-{i}")
    log = ws / "memory" / "2026-01-01.md"
    words: list[str] = []
    errors: list[str] = []
    syncs = 0
    k = 0
    start.wait()  # every process is ready: the clock starts now
    until = time.time() + seconds
    while time.time() < until:
        k += 1
        word = f"zq{i}x{k}"
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"- entry {k} of writer {i}: {word} about topic{k % 7}\n")
        words.append(word)
        try:
            eng.sync(reason="stress")
            syncs += 1
        except Exception as exc:  # counted, reported
            errors.append(f"{type(exc).__name__}: {exc}")
    try:
        eng.sync(reason="stress-final")
    except Exception as exc:
        errors.append(f"final {type(exc).__name__}: {exc}")
    eng.close()
    out.put({"role": "writer", "i": i, "words": words, "syncs": syncs, "errors": errors})


def searcher(
    i: int, root: str, dsn: str, writers: int, seconds: float, start: Any, out: Any
) -> None:
    engines = []
    for w in range(writers):
        engines.append(_engine(Path(root) / f"ws-{w}", Path(root) / f"s{i}-{w}", dsn, f"writer-{w}",
                               read_only=True))  # fmt: skip
    rng = random.Random(i)
    lat: list[float] = []
    errors: list[str] = []
    not_built = 0
    start.wait()
    until = time.time() + seconds
    while time.time() < until:
        eng = engines[rng.randrange(writers)]
        q = f"entry topic{rng.randrange(7)} writer"
        t0 = time.perf_counter()
        try:
            eng.search(q)
            lat.append((time.perf_counter() - t0) * 1000)
        except Exception as exc:
            if type(exc).__name__ == "IndexNotBuilt":
                not_built += 1
                time.sleep(0.2)
                continue
            errors.append(f"{type(exc).__name__}: {exc}")
    for eng in engines:
        eng.close()
    out.put({"role": "searcher", "i": i, "lat": lat, "errors": errors, "not_built": not_built})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--searchers", type=int, default=8)
    args = ap.parse_args(argv)
    from engine.index.tokens import build_fts_query
    from tests.pg_server import running_server

    ctx = mp.get_context("spawn")
    with running_server() as server, tempfile.TemporaryDirectory() as root:
        for w in range(args.writers):
            ws = Path(root) / f"ws-{w}"
            (ws / "memory").mkdir(parents=True)
            (ws / "MEMORY.md").write_text(f"Writer {w} keeps its notes here.\n")
        q: Any = ctx.Queue()
        start = ctx.Barrier(args.writers + args.searchers)
        procs = [
            ctx.Process(target=writer, args=(w, root, server.dsn, args.seconds, start, q))
            for w in range(args.writers)
        ] + [
            ctx.Process(
                target=searcher,
                args=(s, root, server.dsn, args.writers, args.seconds, start, q),
            )
            for s in range(args.searchers)
        ]
        for p in procs:
            p.start()
        results = [q.get(timeout=args.seconds + 600) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        exit_codes = [p.exitcode for p in procs]
        lost = 0
        appended = 0
        for r in (r for r in results if r["role"] == "writer"):
            eng = _engine(Path(root) / f"ws-{r['i']}", Path(root) / "check", server.dsn,
                          f"writer-{r['i']}", read_only=True)  # fmt: skip
            for word in r["words"]:
                appended += 1
                lost += not eng.store.fts_search(build_fts_query(word), 1, ["memory"])
            eng.close()
    lat = [x for r in results if r["role"] == "searcher" for x in r["lat"]]
    errors = [e for r in results for e in r["errors"]]
    summary = {
        "seconds": args.seconds,
        "writers": args.writers,
        "searchers": args.searchers,
        "lines_appended": appended,
        "lines_not_findable": lost,
        "syncs": sum(r.get("syncs", 0) for r in results),
        "searches": len(lat),
        "errors": len(errors),
        "error_samples": errors[:5],
        "search_ms": {
            "p50": round(float(np.percentile(lat, 50)), 1) if lat else None,
            "p95": round(float(np.percentile(lat, 95)), 1) if lat else None,
        },
        "searches_before_first_build": sum(r.get("not_built", 0) for r in results),
        "exit_codes": exit_codes,
        "note": "2 CPU cores shared with other engineers' test runs; hash embeddings",
    }
    print(json.dumps(summary, indent=1))
    common.write_results("pg_stress", summary)


if __name__ == "__main__":
    main()
