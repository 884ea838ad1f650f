"""How the engine opens, locks and rebuilds its store: one backend per kind of store.

The engine chooses a :class:`StoreBackend` once, when it opens
(``store.backend`` in memdeck's settings, see ``engine.index.pg_backend``):

* :class:`SqliteBackend` — the index is a local file. One writer at a time takes
  a lock file beside it; a full reindex builds a temp file and copies it into the
  live file in one transaction; damaged pages are repaired by moving the file
  aside and rebuilding it from the Markdown.
* ``PgBackend`` (``engine.index.pg_backend``) — one namespace of a shared
  PostgreSQL database. The writer lock is a server-side advisory lock; a full
  reindex fills a new generation of the namespace and switches to it; the server
  keeps its own pages, so there is no file to repair or clean.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from engine.index.db import DatabaseError
from engine.index.index_store import IndexStore
from engine.index.lock import LockGrant, writer_lock
from engine.index.pooled_chunks import fingerprint_pools
from engine.index.sqlite_files import (
    clean_debris,
    copy_into,
    finalize_for_swap,
    temp_index_path,
)
from engine.index.store import Store

T = TypeVar("T")


class StoreBackend(Protocol):
    """One kind of store, as the engine drives it (see the module docstring)."""

    kind: Literal["sqlite", "postgres"]
    #: True when the store is a local file this process checks, repairs, cleans of
    #: debris and swaps; False for a shared server that keeps its own pages
    local_file: bool
    #: what this store adds to the index fingerprint (``index_fingerprint``): a store
    #: that cuts its keyword terms itself names how, so a change of those rules
    #: rebuilds its index
    fingerprint_keys: Mapping[str, object]

    def open(self, *, snapshot: bool = False) -> IndexStore:
        """The live store (``snapshot``: read-only, writing nothing); raises
        ``DatabaseError``/``OSError`` when it cannot be opened."""
        ...

    def exists(self) -> bool:
        """Something was ever built here (the file exists; always for a server)."""
        ...

    def identity(self, store: IndexStore) -> tuple[object, ...]:
        """Which build the live store is: changes when another process rebuilt,
        replaced or deleted it, so the engine reopens it."""
        ...

    def writer(
        self, store: IndexStore, timeout: float, cancel: threading.Event | None = None
    ) -> AbstractContextManager[LockGrant]:
        """The single-writer lock (raises ``IndexLocked`` after ``timeout``)."""
        ...

    def rebuild(
        self,
        live: IndexStore,
        build: Callable[[IndexStore], T],
        fingerprint: dict[str, Any],
        cancelled: Callable[[], bool],
        before_swap: Callable[[T], None],
    ) -> tuple[T, IndexStore]:
        """Build the whole index apart (``build`` fills the new store), then make it
        the live one in one step; returns ``build``'s result and the live store to
        use from now on (the caller closes the old one if it is another).
        Runs under the writer lock."""
        ...


class SqliteBackend:
    """The index as one SQLite file (see the module docstring)."""

    kind: Literal["sqlite", "postgres"] = "sqlite"
    local_file = True
    fingerprint_keys: Mapping[str, object] = {}  # SQLite's FTS5 cuts the terms

    def __init__(self, path: Path, new_store: Callable[[Path, bool], Store]):
        self.path = path
        #: ``new_store(path, snapshot)``: a Store with the configured options
        self.new_store = new_store

    def open(self, *, snapshot: bool = False) -> IndexStore:
        return self.new_store(self.path, snapshot)

    def exists(self) -> bool:
        return self.path.exists()

    def identity(self, store: IndexStore) -> tuple[object, ...]:
        try:
            st = os.stat(self.path)
            ident: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            ident = None
        try:
            build = store.get_meta("build")
        except DatabaseError:
            build = None
        return ident, build

    @contextlib.contextmanager
    def writer(
        self, store: IndexStore, timeout: float, cancel: threading.Event | None = None
    ) -> Iterator[LockGrant]:
        with writer_lock(self.path, timeout=timeout, cancel=cancel) as grant:
            yield grant

    def clean_debris(self, live: IndexStore, *, assume_dead: bool) -> list[Path]:
        """Remove temp files of dead reindexes, salvaging the embeddings they hold."""
        return clean_debris(self.path, assume_dead=assume_dead, salvage=live.copy_cache_from)

    def rebuild(
        self,
        live: IndexStore,
        build: Callable[[IndexStore], T],
        fingerprint: dict[str, Any],
        cancelled: Callable[[], bool],
        before_swap: Callable[[T], None],
    ) -> tuple[T, IndexStore]:
        """Build in a temp file, then copy it in with one transaction.

        Called under the writer lock, so every other temp file is debris of a
        killed build: its embedding cache is salvaged first, which is how a
        killed reindex resumes instead of re-embedding everything.
        """
        from engine.index.indexer import SyncCancelled

        assert isinstance(live, Store)
        clean_debris(self.path, assume_dead=True, salvage=live.copy_cache_from)
        tmp = temp_index_path(self.path)
        new = self.new_store(tmp, False)
        try:
            # a rebuild that pools its chunk vectors has no use for the old file's
            new.copy_cache_from(self.path, chunk_vectors=not fingerprint_pools(fingerprint))
            new.recode_line_vectors()  # older unit matrices in today's smaller layout
            done = build(new)
            new.set_fingerprint(fingerprint)
            new.set_meta("build", uuid.uuid4().hex)
            finalize_for_swap(new)
            if cancelled():
                raise SyncCancelled("sync cancelled")
            before_swap(done)
            live.recall.carry_into(tmp)  # recall history outlives the rebuild
            copy_into(tmp, self.path, live.db.binding, live=live.db)
        finally:
            new.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    Path(str(tmp) + suffix).unlink()
        return done, self.new_store(self.path, False)


def choose_backend(
    env: Mapping[str, str], agent_id: str, path: Path, new_store: Callable[[Path, bool], Store]
) -> StoreBackend:
    """PostgreSQL when memdeck's settings (or ``$MEMDECK_STORE_BACKEND``) choose it,
    else the SQLite file at ``path``; a mistake in the choice raises ``ConfigError``."""
    from engine.index.pg_backend import PgBackend, load_store_backend

    selection = load_store_backend(env)
    if selection is not None:
        return PgBackend(selection, agent_id)
    return SqliteBackend(path, new_store)
