"""How the engine repairs its index: from the Markdown, which is the source of truth.

Part of :class:`engine.core.Engine` (a mixin, so the engine reads as its
lifecycle, sync and search). Each repair is said in ``recovered`` or
``integrity_check`` and in status:

* a writer that died holding the lock → the index is checked (``quick_check``);
  damaged pages → the file is moved aside and rebuilt; sqlite-vec's table out of
  step → rebuilt from the stored vectors;
* a query that failed on damage → the same, under the writer lock (a reader
  never repairs: it reports, and leaves the repair to a writer);
* ``memdeck index`` (and ``--check``) finds damage in memdeck's own structures →
  a full rebuild;
* temp files of killed rebuilds → removed, their embeddings salvaged.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engine.index.backends import SqliteBackend, StoreBackend
from engine.index.db import CorruptIndexError, DatabaseError
from engine.index.index_store import IndexStore
from engine.index.lock import IndexLocked
from engine.index.store import Store


class IndexRepair:
    """The repairs (see the module docstring); ``Engine`` provides what they use."""

    store: IndexStore
    backend: StoreBackend
    index_path: Path
    recovered: str | None
    integrity_check: str | None
    damage: tuple[str, ...]
    lock_timeout: float
    _swap_lock: threading.RLock
    _store_key: tuple[object, ...]

    if TYPE_CHECKING:  # provided by ``Engine``; declared here for the type checker

        def _writer(
            self, timeout: float, cancel: threading.Event | None = None
        ) -> AbstractContextManager[None]: ...

        def _new_store(self, path: Path, *, snapshot: bool = False) -> Store: ...

        def _mark_rebuild(self) -> None: ...

        def _sync_after_repair(self) -> None:
            """Build the index again from the Markdown (``Engine.sync``)."""

    def quick_check(self) -> str:
        """A cheap check of the live index: "ok", or what is damaged; never raises."""
        return self.store.quick_check()

    def _check_after_crash(self, pid: int) -> None:
        """The writer before us (``pid``) died while writing: its transaction was
        rolled back by the WAL, which SQLite guarantees only while the disk kept
        its promises. Cheap enough to check now (it happens once per crash):
        damaged pages → the file is moved aside and rebuilt from the Markdown;
        sqlite-vec's table out of step → rebuilt from the stored vectors."""
        t0 = time.perf_counter()
        found = self.quick_check()
        took = time.perf_counter() - t0
        why = f"the last writer (pid {pid}) died while writing"
        if found != "ok":
            with self._swap_lock:
                self.store.close()
                self.store = self._recover_corrupt(f"{why}; quick_check: {found}")
                self._store_key = self.backend.identity(self.store)
            self.integrity_check = f"{why}: index damaged ({found}), rebuilt from the Markdown"
            return
        vec_ok = self.store.vec_table_consistent()
        if not vec_ok:
            self._rebuild_vec_table(why)
        self.integrity_check = f"{why}: index checked in {took:.2f} s, ok" + (
            "" if vec_ok else "; sqlite-vec table rebuilt from the stored vectors"
        )

    def _clean_debris(self) -> list[Path]:
        """Remove temp files of dead reindexes, keeping the embeddings they hold.

        Also the moment a crash is noticed: taking the writer lock tells whether its
        last holder died holding it, and if so the index is checked."""
        assert isinstance(self.backend, SqliteBackend)
        try:
            with self._writer(timeout=0):
                return self.backend.clean_debris(self.store, assume_dead=True)
        except IndexLocked:  # a writer is busy: only remove files of dead processes
            return self.backend.clean_debris(self.store, assume_dead=False)
        except OSError:  # the lock file cannot be written (full disk): clean up next time
            return []

    def _rebuild_vec_table(self, why: str) -> None:
        """sqlite-vec's table is an accelerator: rebuild it from ``chunks.embedding``."""
        with self._swap_lock:
            try:
                self.store.rebuild_vec_table()
            except CorruptIndexError:
                raise
            except DatabaseError as exc:
                raise CorruptIndexError(f"sqlite-vec table cannot be rebuilt: {exc}") from exc
        self.recovered = f"sqlite-vec table was damaged ({why}); rebuilt from the stored vectors"

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
        self._mark_rebuild()
        store = self._new_store(self.index_path)
        # the embeddings paid for usually sit on undamaged pages: keep what reads
        with contextlib.suppress(Exception):
            store.copy_cache_from(aside)
        return store

    def _damage_found(self, level: Literal["index", "thorough"]) -> bool:
        """Check the index under the writer lock; damaged pages → the file is moved
        aside; any finding → True (the caller rebuilds), said in ``recovered``."""
        found = self.store.check(level)
        self.damage = found
        if not found:
            return False
        what = "; ".join(found)
        if self.backend.local_file and any(
            f.startswith(("damaged pages", "the index cannot be read")) for f in found
        ):
            with self._swap_lock:
                self.store.close()
                self.store = self._recover_corrupt(what)
                self._store_key = self.backend.identity(self.store)
        else:
            self.recovered = f"index damage found ({what}); rebuilt from the Markdown"
        return True

    def _repair_after_failed_query(self, why: str, *, corrupt: bool, vec: bool = False) -> bool:
        """A query failed: the cheap moment to check the index (``quick_check``,
        under the writer lock). Damaged pages, or an error SQLite calls corruption,
        → the file is moved aside and rebuilt from the Markdown (the embedding cache
        salvaged); a sqlite-vec error on sound pages → its table is rebuilt from the
        stored vectors. False when nothing was found to repair (the caller raises)."""
        rebuild = False
        with self._writer(timeout=self.lock_timeout):
            found = self.quick_check()
            if found == "ok" and vec:
                try:
                    self._rebuild_vec_table(why)
                except CorruptIndexError as exc:  # pages under it are damaged
                    found = str(exc)
                else:
                    if not self.store.vec_table_consistent():  # rebuilt, still unreadable
                        found = "sqlite-vec table still unreadable after its rebuild"
            if found != "ok" or corrupt:
                detail = why if found == "ok" else f"{why}; quick_check: {found}"
                with self._swap_lock:
                    self.store.close()
                    self.store = self._recover_corrupt(detail)
                    self._store_key = self.backend.identity(self.store)
                rebuild = True
            elif not vec:
                return False
        if rebuild:
            self._sync_after_repair()  # from the Markdown (and the salvaged cache)
        return True
