"""The one object that owns a workspace's index, provider and search.

The TUI, the CLI and the agent tools are clients of ``Engine``. It is safe to
call from several threads: searches use the live store while a full reindex
builds its replacement file; the swap happens under ``_swap_lock``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine import __version__
from engine.db import CorruptIndexError, DatabaseError
from engine.embeddings.base import EmbeddingProvider, ProviderError
from engine.embeddings.factory import ProviderChoice, create_provider
from engine.events import EventBus, SearchTimed, SyncDone, SyncFailed
from engine.indexer import (
    Indexer,
    SourceFile,
    clean_debris,
    finalize_for_swap,
    index_fingerprint,
    memory_source_files,
    swap_in,
    temp_index_path,
)
from engine.lock import writer_lock
from engine.search import SearchOptions, SearchOutcome, rank, retrieve
from engine.settings import Settings
from engine.store import Store
from engine.workspace import Workspace


@dataclass
class SyncState:
    running: bool = False
    last_done: SyncDone | None = None
    last_error: str | None = None
    dirty: bool = True


class Engine:
    """A workspace's memory index with hybrid search that explains itself."""

    def __init__(
        self,
        settings: Settings,
        *,
        provider: EmbeddingProvider | str | None = "auto",
        bus: EventBus | None = None,
        env: Mapping[str, str] = os.environ,
    ):
        self.settings = settings
        self.ms = settings.memory_search
        self.bus = bus or EventBus()
        self.workspace = Workspace(settings.workspace, self.ms.extra_paths)
        self.index_path = settings.index_path
        self.vector_path = "auto"
        self.lock_timeout = 30.0
        if provider == "auto":
            self.choice = create_provider(settings, env)
        else:
            self.choice = ProviderChoice(provider, "injected", "provider given by caller")  # type: ignore[arg-type]
        self.provider: EmbeddingProvider | None = self.choice.provider
        self.provider_error: str | None = self.choice.error
        self._fingerprint: dict | None = None
        self._sync_lock = threading.Lock()
        self._swap_lock = threading.RLock()
        self.state = SyncState()
        self.recovered: str | None = None
        self.index_path.parent.mkdir(parents=True, exist_ok=True)
        self.debris_removed = clean_debris(self.index_path)
        self.store = self._open_store()

    # -- store lifecycle -------------------------------------------------------
    def _new_store(self, path: Path) -> Store:
        st = self.ms.store
        return Store(
            path,
            vector_enabled=st.vector_enabled,
            extension_path=st.extension_path,
            fts_tokenizer=st.fts_tokenizer,
        )

    def _open_store(self) -> Store:
        try:
            store = self._new_store(self.index_path)
            store.counts()  # touches every table: a damaged file fails here
            return store
        except CorruptIndexError as exc:
            return self._recover_corrupt(str(exc))

    def _recover_corrupt(self, why: str) -> Store:
        """Move a damaged index aside (keeping only the latest copy) and start fresh.

        The Markdown files are the source of truth, so nothing is lost; the next
        sync rebuilds everything.
        """
        aside = self.index_path.with_name(self.index_path.name + ".corrupt")
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.index_path, aside)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                self.index_path.with_name(self.index_path.name + suffix).unlink()
        self.recovered = f"index was unreadable ({why}); moved to {aside.name} and rebuilt"
        self.state.dirty = True
        return self._new_store(self.index_path)

    def fingerprint(self) -> dict:
        if self._fingerprint is None:
            try:
                self._fingerprint = index_fingerprint(self.ms, self.provider)
            except ProviderError as exc:
                # A provider that cannot even load (missing/broken model): FTS-only.
                self.provider_error = str(exc)
                self.provider = None
                self._fingerprint = index_fingerprint(self.ms, None)
        return self._fingerprint

    def needs_full_reindex(self) -> bool:
        return self.store.fingerprint() != self.fingerprint()

    # -- sync --------------------------------------------------------------------
    def source_files(self) -> list[SourceFile]:
        files = memory_source_files(self.workspace)
        if self.ms.session_memory and "sessions" in self.ms.sources:
            from engine.sessions import session_source_files

            files += session_source_files(self.settings, self.store.files())
        return files

    def sync(
        self, *, reason: str = "manual", force: bool = False, cancel: threading.Event | None = None
    ) -> SyncDone:
        """Bring the index up to date (full atomic rebuild if the fingerprint changed)."""
        with self._sync_lock, writer_lock(self.index_path, timeout=self.lock_timeout):
            self.state.running = True
            try:
                fp = self.fingerprint()
                if force or self.store.fingerprint() != fp:
                    done = self._full_reindex(fp, reason, cancel)
                else:
                    try:
                        done = self._indexer(self.store, cancel).sync(
                            self.source_files(), reason=reason
                        )
                    except CorruptIndexError as exc:
                        with self._swap_lock:
                            self.store.close()
                            self.store = self._recover_corrupt(str(exc))
                        done = self._full_reindex(fp, reason, cancel)
                self.state.last_done = done
                self.state.last_error = None
                self.state.dirty = False
                return done
            except Exception as exc:
                self.state.last_error = f"{type(exc).__name__}: {exc}"
                self.bus.publish(SyncFailed(reason=reason, error=self.state.last_error))
                raise
            finally:
                self.state.running = False

    def _indexer(self, store: Store, cancel: threading.Event | None) -> Indexer:
        return Indexer(store, self.provider, self.ms, self.bus, cancel)

    def _full_reindex(self, fp: dict, reason: str, cancel: threading.Event | None) -> SyncDone:
        tmp = temp_index_path(self.index_path)
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(tmp) + suffix).unlink()
        new = self._new_store(tmp)
        try:
            new.copy_cache_from(self.index_path)
            done = self._indexer(new, cancel).sync(self.source_files(), reason=reason, full=True)
            new.set_fingerprint(fp)
            finalize_for_swap(new)
        except BaseException:
            new.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    Path(str(tmp) + suffix).unlink()
            raise
        with self._swap_lock:
            with contextlib.suppress(DatabaseError):
                self.store.db.execute("pragma wal_checkpoint(TRUNCATE)")
            self.store.close()
            swap_in(tmp, self.index_path)
            self.store = self._new_store(self.index_path)
        return done

    def mark_dirty(self) -> None:
        self.state.dirty = True

    # -- search ------------------------------------------------------------------
    def default_options(self) -> SearchOptions:
        return SearchOptions.from_settings(self.ms)

    def search(
        self,
        query: str,
        options: SearchOptions | None = None,
        *,
        today: dt.date | None = None,
    ) -> SearchOutcome:
        """Retrieve and rank; an empty, never-synced index is synced first."""
        options = options or self.default_options()
        if self.store.get_meta("fingerprint") is None:
            self.sync(reason="search")
        t0 = time.perf_counter()
        with self._swap_lock:
            store = self.store
            try:
                retrieval = retrieve(
                    store, self.provider, query, options, vector_path=self.vector_path
                )
            except CorruptIndexError as exc:
                self.store.close()
                self.store = self._recover_corrupt(str(exc))
                raise
        outcome = rank(retrieval, options, today)
        ms = (time.perf_counter() - t0) * 1000
        outcome.timings_ms["total"] = ms
        self.bus.publish(SearchTimed(query=query, mode=outcome.mode, duration_ms=ms))
        return outcome

    # -- status ------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        store = self.store
        counts = store.counts()
        fp = self.fingerprint()
        stored_fp = store.fingerprint()
        provider = self.provider
        files = store.files()
        return {
            "version": __version__,
            "workspace": str(self.workspace.root),
            "agent": self.settings.agent_id,
            "config": str(self.settings.config_path) if self.settings.config_path else None,
            "index": str(self.index_path),
            "backend": self.settings.backend,
            "binding": store.db.binding,
            "sqlite_version": store.db.sqlite_version,
            "fts": "fts5" if store.fts_available else "unavailable",
            "fts_tokenizer": store.fts_tokenizer,
            "vector": "sqlite-vec" if store.vec.loaded else "numpy",
            "sqlite_vec_version": store.vec.version,
            "sqlite_vec_error": store.vec.reason if not store.vec.loaded else None,
            "provider": provider.id if provider else "none",
            "provider_requested": self.choice.requested,
            "provider_reason": self.choice.reason,
            "provider_error": self.provider_error,
            "model": provider.model if provider else None,
            "dims": fp.get("dims"),
            "provider_detail": provider.describe() if provider else None,
            "mode": "hybrid" if provider else "fts",
            "files": counts["files"],
            "files_on_disk": len(self.source_files()),
            "chunks": counts["chunks"],
            "embedded_chunks": counts["embedded"],
            "cache_entries": counts["cache_entries"],
            "file_errors": {p: r.error for p, r in files.items() if r.error},
            "dirty": self.state.dirty or stored_fp != fp,
            "needs_full_reindex": stored_fp != fp,
            "fingerprint": fp,
            "indexed_fingerprint": stored_fp,
            "sync_running": self.state.running,
            "last_sync": _sync_summary(self.state.last_done),
            "last_error": self.state.last_error,
            "recovered": self.recovered,
            "debris_removed": [p.name for p in self.debris_removed],
            "warnings": list(self.settings.warnings),
        }

    def db_integrity(self) -> str:
        """``pragma integrity_check`` of the live index ("ok" when healthy)."""
        rows = self.store.db.execute("pragma integrity_check")
        return "; ".join(str(r[0]) for r in rows)

    def close(self) -> None:
        with self._swap_lock:
            self.store.close()
        if self.provider is not None:
            with contextlib.suppress(Exception):
                self.provider.close()


def _sync_summary(done: SyncDone | None) -> dict[str, object] | None:
    if done is None:
        return None
    return {
        "at": dt.datetime.fromtimestamp(done.at).isoformat(timespec="seconds"),
        "reason": done.reason,
        "full": done.full,
        "files_indexed": done.files_indexed,
        "files_removed": done.files_removed,
        "chunks_embedded": done.chunks_embedded,
        "cache_hits": done.cache_hits,
        "duration_s": round(done.duration, 3),
        "errors": list(done.errors),
    }
