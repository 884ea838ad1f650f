"""Speed and memory at 1k, 10k and 100k chunks: indexing, query latency, edits, RSS, disk.

Each size runs in its own child process so its peak RSS is its own. Per size:

* cold index, FTS-only (no provider): wall time and chunks/s, index size on disk;
* cold index with vectors from ``HashEmbedder`` (a cheap deterministic 384-dim
  stand-in: embedding 100k chunks with MiniLM would take hours on 2 cores) —
  that index serves the latency runs;
* query latency p50/p95 for FTS-only, vector-only and hybrid, each with the
  sqlite-vec (``vec0``) and the numpy vector path, the query embedding included
  and done by the real MiniLM (vector search cost does not depend on what the
  stored numbers are, so the 384-dim stand-in vectors time the same);
* edit-to-searchable: append a line to a daily log, incremental ``sync()``, then
  search until the new line is among the results;
* peak RSS (VmHWM) after indexing and at the end, index size on disk.

At 1k chunks a further child indexes with the real MiniLM and compares its
throughput with raw llama.cpp on the same chunk texts (the ceiling), then runs
the latency and edit measurements on that real index.

Run: ``.venv/bin/python -m tests.bench.scale`` (``--sizes 1000,10000`` for a subset).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.core import Engine
from engine.embeddings.base import EmbeddingProvider
from engine.index import vector_matrix
from engine.index.chunking import chunk_markdown
from engine.index.db import Database
from engine.index.keyword_index import KeywordIndex
from engine.index.store import Store
from engine.search.model import SearchOptions
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from engine.workspace.files import Workspace
from tests.bench import common, synthetic

SIZES = (1_000, 10_000, 100_000)
VECTOR_PATHS = ("sqlite-vec", "numpy")
WARMUP = 5


# -- measurements (run inside a child) ----------------------------------------------
def vm_hwm_mb() -> float:
    """Peak RSS of this process since start or the last ``reset_hwm``."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return common.peak_rss_mb()


def index_bytes(state_dir: Path) -> int:
    return sum(p.stat().st_size for p in state_dir.glob("index.memdeck.sqlite*"))


def cold_index(
    ws: Path, state: Path, provider: EmbeddingProvider | None, line_vectors: bool | None = None
) -> dict[str, Any]:
    """Index ``ws`` from nothing (fresh state dir) and time it; ``line_vectors``
    overrides ``store.lineVectors`` (None: the default, on for the local model only)."""
    if state.exists():
        shutil.rmtree(state)
    engine = (
        common.open_engine(ws, state, provider)
        if line_vectors is None
        else open_with_line_vectors(ws, state, provider, line_vectors)
    )
    spent: list[float] = []
    maintain = Store.maintain_keyword_index

    def timed_maintain(store: Store) -> None:
        t0 = time.perf_counter()
        maintain(store)
        spent.append(time.perf_counter() - t0)

    Store.maintain_keyword_index = timed_maintain  # type: ignore[method-assign]
    try:
        with common.Stopwatch() as sw:
            done = engine.sync(reason="bench")
    finally:
        Store.maintain_keyword_index = maintain  # type: ignore[method-assign]
    counts = engine.store.counts()
    postings_mb = engine.store.db.scalar(
        "select coalesce(sum(length(term) + length(docs) + length(tfs)), 0) from kw_postings"
    )
    engine.store.db.execute("pragma wal_checkpoint(TRUNCATE)")
    engine.close()
    return {
        "seconds": round(sw.seconds, 3),
        "chunks": counts["chunks"],
        "files": counts["files"],
        "chunks_per_s": round(counts["chunks"] / sw.seconds, 1),
        "embedded": done.chunks_embedded,
        "index_mb": round(index_bytes(state) / 2**20, 1),
        "keyword_postings_s": round(sum(spent), 2),
        "keyword_postings_mb": round(int(postings_mb) / 2**20, 1),
    }


def open_with_line_vectors(
    ws: Path, state: Path, provider: EmbeddingProvider | None, line_vectors: bool
) -> Engine:
    """An engine on a benchmark workspace with ``store.lineVectors`` set."""
    settings = common.bench_settings(ws, state)
    ms = settings.memory_search
    ms = dataclasses.replace(ms, store=dataclasses.replace(ms.store, line_vectors=line_vectors))
    return Engine(dataclasses.replace(settings, memory_search=ms), provider=provider)


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else ordered
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(q[94] if len(q) > 1 else q[0], 2),
        "mean": round(statistics.fmean(ordered), 2),
        "n": len(ordered),
    }


def time_queries(
    engine: Engine,
    query_provider: EmbeddingProvider | None,
    queries: list[str],
    options: SearchOptions,
    vector_path: str,
) -> dict[str, Any]:
    """retrieve + rank per query (what ``Engine.search`` does), after a warm-up."""
    provider = None if options.mode == "fts" else query_provider
    # "query embedding included": every timed query is embedded by the model, never
    # answered from the provider's cache of recent query vectors (the warm-up repeats
    # queries, and each cell repeats the one before it)
    forget = getattr(provider, "forget_queries", None)
    totals, embeds, fts, vec = [], [], [], []
    for i, q in enumerate(queries[:WARMUP] + queries):
        if forget is not None:
            forget()
        t0 = time.perf_counter()
        r = retrieve(engine.store, provider, q, options, vector_path=vector_path)
        rank(r, options)
        ms = (time.perf_counter() - t0) * 1000
        if i >= WARMUP:
            totals.append(ms)
            embeds.append(r.embed_ms)
            fts.append(r.fts_ms)
            vec.append(r.vector_ms)
    return {
        "total": percentiles(totals),
        "embed_p50": round(statistics.median(embeds), 2),
        "fts_p50": round(statistics.median(fts), 2),
        "vector_p50": round(statistics.median(vec), 2),
        "vector_p95": percentiles(vec)["p95"],
    }


def latency_suite(
    engine: Engine,
    query_provider: EmbeddingProvider | None,
    queries: list[str],
    paths: tuple[str, ...] = VECTOR_PATHS,
) -> dict[str, Any]:
    opts = common.default_options()
    out: dict[str, Any] = {
        "fts-only": time_queries(engine, None, queries, opts.with_(mode="fts"), "auto")
    }
    for path in paths:
        engine.store._matrix_cache = None  # a cold numpy matrix for the first-query number
        t0 = time.perf_counter()
        retrieve(engine.store, query_provider, queries[0], opts, vector_path=path)
        first_ms = (time.perf_counter() - t0) * 1000
        out[path] = {
            "first_query_ms": round(first_ms, 1),
            "vector-only": time_queries(
                engine, query_provider, queries, opts.with_(mode="vector"), path
            ),
            "hybrid": time_queries(engine, query_provider, queries, opts, path),
        }
    out["auto"] = {
        "hybrid": time_queries(engine, query_provider, queries, opts, "auto"),
    }
    # Before the keyword postings: FTS5's exhaustive ``ORDER BY rank`` (same answers).
    with fts5_keyword_side():
        out["fts-only-fts5"] = time_queries(engine, None, queries, opts.with_(mode="fts"), "auto")
        out["auto"]["hybrid_fts5"] = time_queries(engine, query_provider, queries, opts, "auto")
    return out


@contextlib.contextmanager
def fts5_keyword_side() -> Iterator[None]:
    """Searches as before ``engine.index.keyword_index``: FTS5 ranks every match."""
    original = KeywordIndex.ready
    KeywordIndex.ready = lambda self: False  # type: ignore[method-assign]
    try:
        yield
    finally:
        KeywordIndex.ready = original  # type: ignore[method-assign]


def old_layout_mb(state: Path) -> float | None:
    """The same index rewritten in the layout memdeck wrote before 2026-11-23 (FTS5
    with its own copy of the text, sqlite-vec's table filled): its size on disk."""
    src = state / "index.memdeck.sqlite"
    if not src.exists():
        return None
    with tempfile.TemporaryDirectory(dir=state.parent) as tmp:
        copy = Path(tmp) / "index.memdeck.sqlite"
        shutil.copyfile(src, copy)
        store = Store(copy)
        db = store.db
        if store.fts_external:
            db.execute("drop table chunks_fts")
            db.execute("create virtual table chunks_fts using fts5(text, tokenize='unicode61')")
            db.execute("insert into chunks_fts(rowid, text) select id, text from chunks")
        if store.vec.loaded and store.dims and not store._vec_table_exists():
            store._ensure_vec_table(store.dims, create=True)
        db.execute("pragma wal_checkpoint(TRUNCATE)")
        store.close()
        return round(sum(p.stat().st_size for p in Path(tmp).iterdir()) / 2**20, 1)


def vacuumed_mb(state: Path) -> dict[str, Any] | None:
    """The index ``VACUUM``ed (a copy) in its own page size and in the 4 KB pages
    memdeck wrote before 2026-11-23: what each page size costs on disk."""
    src = state / "index.memdeck.sqlite"
    if not src.exists():
        return None
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=state.parent) as tmp:
        copy = Path(tmp) / "index.memdeck.sqlite"
        shutil.copyfile(src, copy)
        db = Database(copy)
        out["page_size"] = db.page_size()
        db.execute("pragma journal_mode=delete")
        for label, size in (("own", None), ("4k", 4096)):
            if size is not None:
                db.execute(f"pragma page_size={size}")
            db.execute("vacuum")
            out[f"{label}_mb"] = round(copy.stat().st_size / 2**20, 1)
        db.close()
    return out


def query_embed_latency(queries: list[str]) -> dict[str, Any]:
    """MiniLM query embedding alone, with the provider's default threads and with one.

    A 10-token query is too small to gain from two threads, and on a busy
    2-core machine llama.cpp's threads wait on each other; one thread is steadier.
    """
    out: dict[str, Any] = {}
    try:
        probe = common.local_provider()
    except SystemExit:
        return out
    from engine.embeddings.local import LocalProvider

    path = Path(probe.path)  # type: ignore[attr-defined]
    probe.close()
    for label, threads in (("default threads", None), ("1 thread", 1)):
        provider = LocalProvider(path, n_threads=threads)
        provider.embed_query("warm up")
        times = []
        for q in queries:
            t0 = time.perf_counter()
            provider.embed_query(q)
            times.append((time.perf_counter() - t0) * 1000)
        out[label] = {**percentiles(times), "threads": provider.n_threads}
        provider.close()
    return out


def newest_daily(ws: Path) -> Path:
    daily = sorted((ws / "memory").glob("*.md"))
    return daily[-1]


def edit_to_searchable(
    engine: Engine, ws: Path, repeats: int = 5, *, listing: bool = True
) -> dict[str, Any]:
    """Append a line with a unique word, sync, search until it is among the results.

    The file is restored afterwards so the cached workspace stays as generated.
    """
    target = newest_daily(ws)
    original = target.read_bytes()
    # FTS mode: "searchable" means the new text is in the index. A one-word query
    # for a made-up word has no meaningful embedding, so a hybrid ranking could
    # legitimately put other chunks first; the sync embeds the changed chunk anyway.
    opts = common.default_options(min_score=0.0, mode="fts")
    syncs, searches, totals = [], [], []
    try:
        for i in range(repeats):
            word = f"zebrafinch{i}x{os.getpid()}"
            with target.open("a", encoding="utf-8") as fh:
                fh.write(f"- 23:5{i} Note: the {word} migration is parked until Monday.\n")
            t0 = time.perf_counter()
            # listing: what every sync did before 2026-11-23; otherwise the file the
            # watcher reports (the sync service's way since)
            engine.sync(reason="edit", paths=None if listing else [target])
            t1 = time.perf_counter()
            found = False
            for _ in range(50):
                out = engine.search(word, opts)
                if any(word in r.text for r in out.results):
                    found = True
                    break
            t2 = time.perf_counter()
            if not found:
                raise RuntimeError(f"edit {word!r} not searchable after sync")
            syncs.append((t1 - t0) * 1000)
            searches.append((t2 - t1) * 1000)
            totals.append((t2 - t0) * 1000)
    finally:
        target.write_bytes(original)
        engine.sync(reason="restore")
    return {
        "file": target.name,
        "sync_ms_p50": round(statistics.median(syncs), 1),
        "search_ms_p50": round(statistics.median(searches), 1),
        "total_ms_p50": round(statistics.median(totals), 1),
        "total_ms_max": round(max(totals), 1),
        "repeats": repeats,
    }


def query_embedder() -> tuple[EmbeddingProvider, str]:
    try:
        return common.local_provider(), "MiniLM (llama.cpp)"
    except SystemExit:
        return synthetic.HashEmbedder(), "HashEmbedder (no local model available)"


#: parts of a size's run that ``--skip`` can leave out (to split a 100k run in calls
#: that each fit a benchmark slot)
PARTS = (
    "fts-index",
    "hash-index",
    "latency",
    "sqlite-vec",
    "edit",
    "old-layout",
    "vacuum",
    "exact-vectors",
)


def child_size(
    n: int, seed: int, n_queries: int, skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    root = common.CACHE_DIR / "synthetic" / f"{n}-{seed}"
    ws = root / "ws"
    queries = synthetic.queries(n_queries, seed)
    result: dict[str, Any] = {"chunks": n, "skipped": sorted(skip)}
    if "fts-index" not in skip:
        common.log(f"{n}: cold index FTS-only")
        result["index_fts"] = cold_index(ws, root / "state-fts", None)
    if "hash-index" not in skip or not (root / "state-hash").exists():
        common.log(f"{n}: cold index FTS + HashEmbedder vectors")
        result["index_hash"] = cold_index(ws, root / "state-hash", synthetic.HashEmbedder())
    result["rss_after_index_mb"] = round(vm_hwm_mb(), 1)
    engine = common.open_engine(ws, root / "state-hash", synthetic.HashEmbedder())
    if "latency" not in skip:
        qprov, qname = query_embedder()
        qprov.embed_query("warm up the model")
        result["query_embedder"] = qname
        result["stored_vectors"] = "HashEmbedder (feature hashing, 384 dims)"
        common.log(f"{n}: query latency")
        paths = tuple(p for p in VECTOR_PATHS if p not in skip)  # "sqlite-vec": numpy only
        result["latency"] = latency_suite(engine, qprov, queries, paths)
        result["rss_after_latency_mb"] = round(vm_hwm_mb(), 1)
        qprov.close()
        if n == min(SIZES):
            result["query_embed"] = query_embed_latency(queries)
    if "edit" not in skip:
        common.log(f"{n}: edit-to-searchable")
        result["edit_hash_vectors"] = edit_to_searchable(engine, ws, listing=False)
        result["edit_hash_vectors_listing"] = edit_to_searchable(engine, ws)
    engine.close()
    if "edit" not in skip and (root / "state-fts").exists():
        fts_engine = common.open_engine(ws, root / "state-fts", None)
        result["edit_fts_only"] = edit_to_searchable(fts_engine, ws, listing=False)
        result["edit_fts_only_listing"] = edit_to_searchable(fts_engine, ws)
        fts_engine.close()
    if "old-layout" not in skip:
        common.log(f"{n}: the old on-disk layout, for its size")
        result["old_layout_mb"] = {
            "fts": old_layout_mb(root / "state-fts"),
            "hash": old_layout_mb(root / "state-hash"),
        }
    if "vacuum" not in skip:
        common.log(f"{n}: the index VACUUMed, in its page size and in 4 KB pages")
        result["vacuumed"] = {
            "fts": vacuumed_mb(root / "state-fts"),
            "hash": vacuumed_mb(root / "state-hash"),
        }
    result["peak_rss_mb"] = round(vm_hwm_mb(), 1)
    if "exact-vectors" not in skip and "latency" not in skip:
        # last, so that the float32 matrix it loads is not in the peak RSS above
        common.log(f"{n}: the numpy scan with exact float32 rows, for comparison")
        engine = common.open_engine(ws, root / "state-hash", synthetic.HashEmbedder())
        qprov, _ = query_embedder()
        qprov.embed_query("warm up the model")
        result["exact_vectors"] = exact_against_quantized(engine, qprov, queries)
        qprov.close()
        engine.close()
    return result


@contextlib.contextmanager
def exact_vector_matrix(store: Store) -> Iterator[None]:
    """The numpy path as before quantization: float32 rows whatever the size."""
    original = vector_matrix.QUANTIZE_FROM
    vector_matrix.QUANTIZE_FROM = 2**62
    store._matrix_cache = None
    try:
        yield
    finally:
        vector_matrix.QUANTIZE_FROM = original
        store._matrix_cache = None


def scan_ms(store: Store, qvecs: list[Any], k: int) -> tuple[dict[str, float], list[list[int]]]:
    """``vector_search`` alone (numpy path): p50/p95 ms and each query's top ``k``."""
    store.vector_search(qvecs[0], k, ["memory"], path="numpy")  # load the matrix
    times, tops = [], []
    for q in qvecs:
        t0 = time.perf_counter()
        hits = store.vector_search(q, k, ["memory"], path="numpy")
        times.append((time.perf_counter() - t0) * 1000)
        tops.append([cid for cid, _ in hits])
    return percentiles(times), tops


def exact_against_quantized(
    engine: Engine, query_provider: EmbeddingProvider, queries: list[str]
) -> dict[str, Any]:
    """The numpy path quantized (as it runs) and with exact float32 rows, from one
    process: hybrid latency, the vector scan alone, recall@24 of the quantized scan
    against the exact one, and the matrix's bytes."""
    store = engine.store
    opts = common.default_options()
    k = opts.candidates
    qvecs = [query_provider.embed_query(q) for q in queries]
    # the keyword side's postings decoded once for these words, as in the suite above
    # (whichever cell ran first would otherwise pay it)
    time_queries(engine, query_provider, queries, opts, "numpy")
    store._matrix_cache = None
    quantized = {"hybrid": time_queries(engine, query_provider, queries, opts, "numpy")}
    quantized["scan"], got = scan_ms(store, qvecs, k)
    matrix = store._matrix_cache
    quantized["matrix_mb"] = round(matrix.nbytes() / 2**20, 1) if matrix else None
    quantized["quantized"] = bool(matrix and matrix.quantized)
    with exact_vector_matrix(store):
        exact = {"hybrid": time_queries(engine, query_provider, queries, opts, "numpy")}
        exact["scan"], want = scan_ms(store, qvecs, k)
        matrix = store._matrix_cache
        exact["matrix_mb"] = round(matrix.nbytes() / 2**20, 1) if matrix else None
    recall = [len(set(g) & set(w)) / max(1, len(w)) for g, w in zip(got, want, strict=True)]
    return {
        "quantized": quantized,
        "exact": exact,
        "k": k,
        "recall_at_k": round(statistics.fmean(recall), 4),
        "queries_with_all_k": sum(r == 1.0 for r in recall),
        "queries": len(recall),
    }


def chunk_texts(ws: Path) -> list[str]:
    """The distinct chunk texts the indexer embeds for ``ws`` (same chunker, same order)."""
    seen: dict[str, str] = {}
    for f in Workspace(ws).list_files():
        for c in chunk_markdown(f.abs.read_text(encoding="utf-8")):
            seen.setdefault(c.hash, c.text)
    return list(seen.values())


def raw_llama_throughput(model_path: Path, texts: list[str], n_threads: int) -> dict[str, Any]:
    """llama.cpp alone, same model, same context and threads as ``LocalProvider``."""
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(model_path),
        embedding=True,
        n_ctx=512,
        n_batch=512,
        n_ubatch=512,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        verbose=False,
    )
    llm.embed(texts[:2], normalize=False, truncate=True)
    with common.Stopwatch() as sw:
        llm.embed(texts, normalize=False, truncate=True)
    llm.close()
    return {"seconds": round(sw.seconds, 2), "chunks_per_s": round(len(texts) / sw.seconds, 2)}


def child_model(n: int, seed: int, n_queries: int) -> dict[str, Any]:
    root = common.CACHE_DIR / "synthetic" / f"{n}-{seed}"
    ws = root / "ws"
    provider = common.local_provider()
    provider.embed_query("load")
    texts = chunk_texts(ws)
    threads = getattr(provider, "n_threads", os.cpu_count() or 1)
    common.log(f"model {n}: raw llama.cpp on {len(texts)} chunk texts")
    raw1 = raw_llama_throughput(Path(provider.path), texts, threads)  # type: ignore[attr-defined]
    common.log(f"model {n}: raw {raw1['chunks_per_s']} chunks/s; memdeck cold index")
    indexed = cold_index(ws, root / "state-minilm", provider)
    common.log(f"model {n}: memdeck {indexed['chunks_per_s']} chunks/s; raw again")
    raw2 = raw_llama_throughput(Path(provider.path), texts, threads)  # type: ignore[attr-defined]
    raw_rate = (raw1["chunks_per_s"] + raw2["chunks_per_s"]) / 2
    engine = common.open_engine(ws, root / "state-minilm", provider)
    latency = latency_suite(engine, provider, synthetic.queries(n_queries, seed))
    edit = edit_to_searchable(engine, ws)
    engine.close()
    return {
        "chunks": n,
        "texts": len(texts),
        "threads": threads,
        "raw_runs": [raw1, raw2],
        "raw_chunks_per_s": round(raw_rate, 2),
        "index": indexed,
        "ratio": round(indexed["chunks_per_s"] / raw_rate, 3),
        "latency": latency,
        "edit": edit,
        "peak_rss_mb": round(vm_hwm_mb(), 1),
    }


# -- orchestration (parent) ---------------------------------------------------------
def spawn(
    kind: str, n: int, seed: int, n_queries: int, skip: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = Path(tmp.name)
    cmd = [
        sys.executable,
        "-m",
        "tests.bench.scale",
        f"--child-{kind}",
        str(n),
        "--seed",
        str(seed),
        "--queries",
        str(n_queries),
        "--out",
        str(out),
    ]
    if skip:
        cmd += ["--skip", ",".join(sorted(skip))]
    proc = subprocess.run(cmd, cwd=common.REPO_ROOT)
    try:
        if proc.returncode != 0 or out.stat().st_size == 0:
            common.log(f"child {kind} {n} failed (exit {proc.returncode})")
            return None
        return json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)


def lat(cell: dict[str, Any]) -> str:
    return f"{cell['total']['p50']:.1f} / {cell['total']['p95']:.1f}"


def tables(sizes: dict[int, dict[str, Any]], model: dict[str, Any] | None) -> dict[str, str]:
    out = {}
    out["index"] = common.table(
        [
            "chunks",
            "files",
            "text MB",
            "cold index FTS-only (s)",
            "chunks/s",
            "index MB FTS-only",
            "cold index + hash vectors (s)",
            "index MB with vectors",
            "peak RSS MB",
        ],
        [
            [
                n,
                r["index_fts"]["files"],
                r.get("text_mb"),
                r["index_fts"]["seconds"],
                r["index_fts"]["chunks_per_s"],
                r["index_fts"]["index_mb"],
                r["index_hash"]["seconds"],
                r["index_hash"]["index_mb"],
                r["peak_rss_mb"],
            ]
            for n, r in sizes.items()
        ],
        title="Indexing and memory (synthetic daily logs, 400-token chunks)",
    )
    rows = []
    for n, r in sizes.items():
        L = r["latency"]
        for path in VECTOR_PATHS:
            rows.append(
                [
                    n,
                    path,
                    lat(L["fts-only"]),
                    lat(L[path]["vector-only"]),
                    lat(L[path]["hybrid"]),
                    L[path]["hybrid"]["embed_p50"],
                    L[path]["hybrid"]["vector_p50"],
                    L[path]["first_query_ms"],
                ]
            )
    if model:
        L = model["latency"]
        for path in VECTOR_PATHS:
            rows.append(
                [
                    f"{model['chunks']} (MiniLM vectors)",
                    path,
                    lat(L["fts-only"]),
                    lat(L[path]["vector-only"]),
                    lat(L[path]["hybrid"]),
                    L[path]["hybrid"]["embed_p50"],
                    L[path]["hybrid"]["vector_p50"],
                    L[path]["first_query_ms"],
                ]
            )
    out["latency"] = common.table(
        [
            "chunks",
            "vector path",
            "FTS-only p50/p95 ms",
            "vector-only p50/p95 ms",
            "hybrid p50/p95 ms",
            "query embed p50 ms",
            "vector search p50 ms",
            "first query ms (cold)",
        ],
        rows,
        title="Query latency, query embedding by MiniLM included",
    )
    embed = next((r["query_embed"] for r in sizes.values() if r.get("query_embed")), None)
    if embed:
        out["query_embed"] = common.table(
            ["MiniLM query embedding", "threads", "p50 ms", "p95 ms"],
            [[k, v["threads"], v["p50"], v["p95"]] for k, v in embed.items()],
            title="Query embedding alone (llama.cpp)",
        )
    edit_rows = [
        [
            n,
            "FTS-only",
            r["edit_fts_only"]["sync_ms_p50"],
            r["edit_fts_only"]["search_ms_p50"],
            r["edit_fts_only"]["total_ms_p50"],
        ]
        for n, r in sizes.items()
    ]
    edit_rows += [
        [
            n,
            "hash vectors",
            r["edit_hash_vectors"]["sync_ms_p50"],
            r["edit_hash_vectors"]["search_ms_p50"],
            r["edit_hash_vectors"]["total_ms_p50"],
        ]
        for n, r in sizes.items()
    ]
    if model:
        e = model["edit"]
        edit_rows.append(
            [model["chunks"], "MiniLM", e["sync_ms_p50"], e["search_ms_p50"], e["total_ms_p50"]]
        )
    out["edit"] = common.table(
        ["chunks", "index", "incremental sync ms", "search ms", "edit → searchable ms (p50)"],
        edit_rows,
        title=(
            "Edit to searchable (append one line to a daily log; sync of that file"
            " as the watcher reports it; no debounce)"
        ),
    )
    before_after = []
    for n, r in sizes.items():
        a = r["latency"]["auto"]
        if "hybrid_fts5" not in a:
            continue
        old_mb = r.get("old_layout_mb", {})
        before_after.append(
            [
                n,
                lat(r["latency"]["fts-only-fts5"]),
                lat(r["latency"]["fts-only"]),
                lat(a["hybrid_fts5"]),
                lat(a["hybrid"]),
                r["edit_hash_vectors_listing"]["total_ms_p50"],
                r["edit_hash_vectors"]["total_ms_p50"],
                old_mb.get("hash"),
                r["index_hash"]["index_mb"],
                old_mb.get("fts"),
                r["index_fts"]["index_mb"],
                r["index_fts"].get("keyword_postings_mb"),
                r["index_fts"].get("keyword_postings_s"),
            ]
        )
    if before_after:
        out["before_after"] = common.table(
            [
                "chunks",
                "FTS-only p50/p95 ms, FTS5 ranks (before)",
                "postings (after)",
                "hybrid p50/p95 ms, FTS5 keyword side (before)",
                "postings (after)",
                "edit → searchable ms, listing sync",
                "watcher's files",
                "index MB with vectors, old layout",
                "now",
                "index MB FTS-only, old layout",
                "now",
                "of it postings MB",
                "cold index: postings s",
            ],
            before_after,
            title="Postings, watcher, layout: before and after, one run (same index and queries)",
        )
    if model:
        out["model"] = common.table(
            ["chunks", "raw llama.cpp chunks/s", "memdeck cold index chunks/s", "ratio", "threads"],
            [
                [
                    model["texts"],
                    model["raw_chunks_per_s"],
                    model["index"]["chunks_per_s"],
                    model["ratio"],
                    model["threads"],
                ]
            ],
            title="Indexing with the local MiniLM vs raw llama.cpp on the same texts",
        )
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--seed", type=int, default=synthetic.DEFAULT_SEED)
    ap.add_argument("--queries", type=int, default=100, help="timed queries per cell")
    ap.add_argument("--no-model", action="store_true", help="skip the MiniLM indexing run")
    ap.add_argument("--model-size", type=int, default=1_000)
    ap.add_argument(
        "--skip",
        default="",
        help=f"parts of each size's run to leave out, comma-separated: {', '.join(PARTS)}"
        " (a partial run writes its JSON without the tables)",
    )
    ap.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-model", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_size or args.child_model:
        skip = frozenset(p for p in args.skip.split(",") if p)
        if args.child_size:
            data = child_size(args.child_size, args.seed, args.queries, skip)
        else:
            data = child_model(args.child_model, args.seed, args.queries)
        args.out.write_text(json.dumps(data))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    skip = frozenset(p for p in args.skip.split(",") if p)
    if skip - set(PARTS):
        ap.error(f"--skip: unknown part(s) {', '.join(sorted(skip - set(PARTS)))}")
    results: dict[int, dict[str, Any]] = {}
    loads = [os.getloadavg()]
    for n in sizes:
        common.log(f"{n}: generating the workspace (cached after the first run)")
        with common.Stopwatch() as sw:
            manifest = synthetic.generate(
                common.CACHE_DIR / "synthetic" / f"{n}-{args.seed}", n, args.seed
            )
        common.log(
            f"{n}: {manifest['files']} files, {manifest['bytes'] / 1e6:.1f} MB ({sw.seconds:.1f} s)"
        )
        r = spawn("size", n, args.seed, args.queries, skip)
        if r is not None:
            r["files"] = manifest["files"]
            r["text_mb"] = round(int(manifest["bytes"]) / 2**20, 1)
            results[n] = r
        loads.append(os.getloadavg())
    model = None
    if not args.no_model:
        synthetic.generate(
            common.CACHE_DIR / "synthetic" / f"{args.model_size}-{args.seed}",
            args.model_size,
            args.seed,
        )
        model = spawn("model", args.model_size, args.seed, args.queries)
        loads.append(os.getloadavg())
    text = tables(results, model) if not skip else {}
    common.write_results(
        "scale" if not skip else f"scale_{'_'.join(map(str, sizes))}_partial",
        {
            "seed": args.seed,
            "queries_per_cell": args.queries,
            "stored_vectors": "HashEmbedder (cheap deterministic 384-dim feature hashing) for"
            " the synthetic sizes; real MiniLM for the model run",
            "loadavg_during": [[round(x, 2) for x in la] for la in loads],
            "sizes": {str(k): v for k, v in results.items()},
            "model": model,
            "tables": text,
        },
    )


if __name__ == "__main__":
    main()
