"""What ``Engine.status()`` reports: one frozen record the CLI, TUI and tools read.

Clients read attributes (``st.files_on_disk``), so renaming a field breaks them
loudly, in tests, instead of leaving a blank in the monitor. ``to_json()`` is
``memdeck status --json``: the same keys, in the same order, as before the
record existed (``qmd`` only when the qmd backend is configured).
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from engine.config.settings import SearchMode
from engine.events import SyncDone
from engine.records import JsonRecord

if TYPE_CHECKING:  # the qmd backend's record, built and imported only when it is used
    from engine.qmd.status import QmdStatus

#: Why the index cannot be written, in the monitor's words.
WriteProblemKind = Literal[
    "disk full", "read-only", "folder in the way", "no folder", "cannot open"
]


@dataclass(frozen=True)
class RecallSize(JsonRecord):
    """How much the recall log holds, against the caps it is pruned to."""

    searches: int
    hits: int
    max_searches: int
    max_hits: int


@dataclass(frozen=True)
class WriteProblem(JsonRecord):
    """Why writing the index stopped (reading goes on): ``kind`` is the short label
    the monitor shows, ``text`` names the path and the remedy."""

    kind: WriteProblemKind
    text: str


@dataclass(frozen=True)
class SyncSummary(JsonRecord):
    """The last sync this process ran (``last_sync`` in status)."""

    at: str  # local ISO time, seconds
    reason: str
    full: bool
    files_indexed: int
    files_removed: int
    chunks_embedded: int
    cache_hits: int
    duration_s: float
    errors: tuple[str, ...]

    @classmethod
    def of(cls, done: SyncDone) -> SyncSummary:
        return cls(
            at=dt.datetime.fromtimestamp(done.at).isoformat(timespec="seconds"),
            reason=done.reason,
            full=done.full,
            files_indexed=done.files_indexed,
            files_removed=done.files_removed,
            chunks_embedded=done.chunks_embedded,
            cache_hits=done.cache_hits,
            duration_s=round(done.duration, 3),
            errors=tuple(done.errors),
        )


@dataclass(frozen=True)
class MultimodalScope(JsonRecord):
    """Whether media files are indexed with the current provider, and why."""

    active: bool
    why: str


@dataclass(frozen=True)
class EngineStatus(JsonRecord):
    """A workspace index at one moment: where it is, what built it, how fresh it is.

    ``provider_detail``, ``provider_fallback`` and the fingerprints stay mappings:
    their keys belong to each provider (endpoint, batch state, key source…).
    """

    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"qmd"})

    version: str
    workspace: str
    agent: str
    config: str | None
    index: str
    backend: str
    binding: str
    store: Literal["sqlite", "postgres"]  # the index's store (store.backend)
    store_version: str  # "SQLite 3.x" or "PostgreSQL 18.x": the engine the index lives in
    sqlite_version: str | None  # None on PostgreSQL
    fts: Literal["fts5", "tsvector", "unavailable"]
    fts_tokenizer: str
    vector: Literal["sqlite-vec", "numpy", "pgvector"]
    sqlite_vec_version: str | None
    sqlite_vec_error: str | None
    provider: str  # provider id, "none" for FTS-only
    provider_requested: str
    provider_reason: str
    provider_error: str | None
    model: str | None
    dims: int | None
    provider_detail: Mapping[str, object] | None
    provider_fallback: Mapping[str, object] | None  # the embedding fallback switch
    multimodal: MultimodalScope
    mode: SearchMode
    files: int
    files_on_disk: int
    chunks: int
    embedded_chunks: int
    cache_entries: int
    file_errors: Mapping[str, str]
    dirty: bool
    needs_full_reindex: bool
    fingerprint: Mapping[str, object]
    indexed_fingerprint: Mapping[str, object] | None
    sync_running: bool
    last_sync: SyncSummary | None
    last_error: str | None
    recovered: str | None
    debris_removed: tuple[str, ...]
    warnings: tuple[str, ...]
    fallback: str | None  # "builtin" while a failing qmd is replaced by the builtin index
    fallback_reason: str | None
    qmd: QmdStatus | None = None
    #: which memory-search layout was read (seed memorySearch, 2026.9 memory.search, both)
    config_layout: str = ""
    #: what OpenClaw 2026.9.6 would refuse in the config file (memdeck still opens it)
    openclaw_rejections: tuple[str, ...] = ()
    #: the check run because the last writer died holding the lock (what it found)
    integrity_check: str | None = None
    #: what the last check of the index found damaged (``Store.check``); a writer
    #: (``memdeck index``) rebuilds it from the Markdown
    damage: tuple[str, ...] = ()
    #: why the last search failed (None after one succeeds)
    search_error: str | None = None
    #: the recall log: searches and hits kept, and the caps they are pruned to
    recall: RecallSize | None = None
    #: why the index cannot be written right now (full disk, read-only folder…);
    #: None while writes work
    write_problem: WriteProblem | None = None
    #: whether chunks get unit vectors (``store.vector.lines``) and why
    unit_vectors: bool = False
    unit_vectors_reason: str = ""
    #: whether the index's chunk vectors are pooled from its unit vectors
    #: (``engine.index.pooled_chunks``); a never-built index: whether they will be
    chunk_vectors_pooled: bool = False
    #: text chunks (distinct contents) whose unit vectors the next sync embeds; None
    #: while unit vectors are off, or in a quick status (``load_provider`` False)
    units_missing: int | None = None


# -- why the index cannot be written ----------------------------------------------------
#: below this much free space where the index lives, status warns of a full disk
LOW_SPACE_BYTES = 1024 * 1024


def index_problem(path: Path, exc: BaseException) -> str:
    """What is wrong with the index at ``path`` and what the user can do about it."""
    return diagnose_index(path, exc).text


def diagnose_index(path: Path, exc: BaseException) -> WriteProblem:
    """``index_problem`` with its kind (the monitor's short label)."""
    why = getattr(exc, "strerror", None) or str(exc)
    folder = path.parent
    if path.is_dir():
        return WriteProblem(
            "folder in the way",
            f"the index path {path} is a folder, not a file: move it away (memdeck rebuilds)",
        )
    if not folder.is_dir():
        return WriteProblem(
            "no folder",
            f"cannot create the index folder {folder} ({why}): check the path, or set "
            "OPENCLAW_STATE_DIR to a writable folder (`memdeck status`, `search` and `get`"
            " need none)",
        )
    read_only_fs = getattr(exc, "errno", None) == errno.EROFS
    if (
        read_only_fs
        or not os.access(folder, os.W_OK)
        or (path.exists() and not os.access(path, os.W_OK))
    ):
        return WriteProblem(
            "read-only",
            f"cannot write the index {path} ({why}): {folder} is read-only; fix its "
            "permissions or set OPENCLAW_STATE_DIR to a writable folder",
        )
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = -1
    if free == 0 or "full" in why.lower() or "No space" in why:
        return WriteProblem(
            "disk full",
            f"cannot write the index {path}: the disk holding {folder} is full; free space "
            "there (search, get and status keep reading meanwhile)",
        )
    return WriteProblem("cannot open", f"cannot open the index {path}: {why}")


def low_space_problem(folder: Path) -> WriteProblem | None:
    """A disk with (almost) no room left where the index lives: the next write will
    fail, so status says so before it does."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    if free >= LOW_SPACE_BYTES:
        return None
    return WriteProblem(
        "disk full",
        f"the disk holding {folder} has {free:,} bytes free: the index cannot be "
        "written; free space there (search, get and status keep reading meanwhile)",
    )
