"""The one object that owns a workspace's index, provider and search.

The TUI, the CLI and the agent tools are clients of ``Engine``. It is safe to
call from several threads: searches use the live store while a full reindex
builds its replacement file; the swap happens under the swap lock, which other
modules take through :meth:`Engine.pinned_store`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import shutil
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine import __version__
from engine.config.settings import Settings
from engine.embeddings.base import EmbeddingProvider, ProviderError
from engine.embeddings.factory import ProviderChoice, create_provider
from engine.embeddings.fallback import ProviderSwitched
from engine.embeddings.multimodal import multimodal_scope
from engine.events import EventBus, SearchTimed, SyncDone, SyncFailed, SyncProgress
from engine.index.backends import StoreBackend, choose_backend
from engine.index.db import BusyIndexError, CorruptIndexError, DatabaseError
from engine.index.index_store import IndexStore
from engine.index.indexer import (
    Indexer,
    SourceFile,
    disk_differs,
    index_fingerprint,
    media_source_files,
    memory_source_files,
)
from engine.index.line_vectors import lines_setting, space_key
from engine.index.pooled_chunks import fingerprint_pools, pools_chunks
from engine.index.store import PAGE_SIZE, Store, page_size_for
from engine.index.store_checks import CheckLevel
from engine.memory.recall import MAX_EVENTS, MAX_SEARCHES
from engine.memory.recall import counts as recall_counts
from engine.repair import IndexRepair
from engine.search.model import Retrieval, SearchOptions, SearchOutcome
from engine.search.rank import rank
from engine.search.results import check_query
from engine.search.retrieve import VEC_DAMAGED, retrieve
from engine.searchers import OpenClawSearcher, Searcher, choose_searcher
from engine.status import (
    EngineStatus,
    MultimodalScope,
    RecallSize,
    SyncSummary,
    WriteProblem,
    diagnose_index,
    index_problem,
    low_space_problem,
)
from engine.workspace.files import MAX_INDEX_BYTES, Workspace

#: a first build's index size per byte of Markdown: 14.5 measured on LoCoMo conv-5
#: with the default's line vectors (docs/benchmarks/2026-11-28-cost.md), with a
#: margin; a rebuild uses the index's own size
INDEX_PER_MARKDOWN = 16
#: ``memdeck status`` checks the pages of an index up to this size (SQLite's
#: ``quick_check`` reads 64 MiB in about a tenth of a second here)
STATUS_PAGE_CHECK_BYTES = 64 * 1024 * 1024


class IndexNotBuilt(RuntimeError):
    """A read-only engine was asked to search an index no sync has built."""


class IndexReadOnly(RuntimeError):
    """``sync`` on an engine opened with ``read_only=True``."""


class IndexUnavailable(DatabaseError):
    """The index cannot be opened or created; the message names the path and the fix."""


@dataclass
class SyncState:
    running: bool = False
    last_done: SyncDone | None = None
    last_error: str | None = None
    dirty: bool = False  # a change seen by this process (watcher, save) not yet synced


class Engine(IndexRepair):
    """A workspace's memory index with hybrid search that explains itself."""

    def __init__(
        self,
        settings: Settings,
        *,
        provider: EmbeddingProvider | Literal["auto"] | None = "auto",
        bus: EventBus | None = None,
        env: Mapping[str, str] = os.environ,
        read_only: bool = False,
    ):
        #: status/search/get from the CLI: never create or change the index (a
        #: never-built index is an empty in-memory one) and never ask a remote
        #: provider for its size; ``sync`` is refused.
        self.read_only = read_only
        self._trust_index_dims = True  # until a forced rebuild re-learns the size
        self.settings = settings
        self.ms = settings.memory_search
        self.bus = bus or EventBus()
        self.workspace = Workspace(
            settings.workspace, self.ms.extra_paths, self.ms.extra_path_patterns
        )
        self.index_path = settings.index_path
        self.vector_path = "auto"
        self.lock_timeout = 30.0
        #: a search waits at most this long for its query vector, then answers
        #: keyword-only and says so (MEMDECK_SEARCH_BUDGET_S, default 10 s)
        self.search_budget_s = _env_seconds(env, "MEMDECK_SEARCH_BUDGET_S", 10.0)
        if isinstance(provider, str):  # "auto"
            self.choice = create_provider(settings, env)
        else:
            self.choice = ProviderChoice(provider, "injected", "provider given by caller")
        self.provider: EmbeddingProvider | None = self.choice.provider
        self.provider_error: str | None = self.choice.error
        self._fingerprint: dict[str, Any] | None = None
        self._fp_generation = 0  # a fallback switch bumps the provider's generation
        self._sync_lock = threading.Lock()
        self._swap_lock = threading.RLock()
        self.state = SyncState()
        self.recovered: str | None = None
        #: set when the index could only be opened read-only (full disk, read-only dir)
        self.snapshot_reason: str | None = None
        #: set when a read-only engine could not open the index at all (searches raise it)
        self.unavailable: str | None = None
        #: why the index cannot be written now (opened read-only, or the last sync
        #: failed to write); cleared by the next sync that writes
        self.write_problem: WriteProblem | None = None
        #: the integrity check run because the last writer died holding the lock
        #: (what it found and how long it took); None when none was needed
        self.integrity_check: str | None = None
        #: what the last check of memdeck's own structures found (``Store.check``):
        #: reported by status until a writer repairs it from the Markdown
        self.damage: tuple[str, ...] = ()
        #: why the last search failed (None once one succeeds): status reports it
        self.search_error: str | None = None
        # the first search of a new workspace: a background first index, and an
        # in-memory keyword index answering meanwhile (see _search_while_building)
        self._first_sync: threading.Thread | None = None
        self._interim: Store | None = None
        self._interim_lock = threading.Lock()
        self._closing = threading.Event()
        # memory.backend = "qmd": the qmd sidecar answers searches, this index is its fallback.
        self.qmd = None
        if settings.backend == "qmd":
            from engine.qmd.backend import QmdBackend

            self.qmd = QmdBackend(settings, self.workspace, env=env)
        #: store.backend = "postgres" (memdeck's settings.json or $MEMDECK_STORE_BACKEND)
        #: the SQLite file or the PostgreSQL namespace (``store.backend``), chosen once
        self.backend: StoreBackend = choose_backend(
            env,
            settings.agent_id,
            self.index_path,
            lambda path, snapshot: self._new_store(path, snapshot=snapshot),
        )
        if not read_only:
            try:
                self.index_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a read-only or missing state folder: say what to do
                raise IndexUnavailable(diagnose_index(self.index_path, exc).text) from exc
        self.store: IndexStore = self._open_store()
        self._store_key = self.backend.identity(self.store)
        self.debris_removed = (
            []
            if read_only or self.store.snapshot or not self.backend.local_file
            else self._clean_debris()
        )
        if not read_only and self.backend.local_file:
            self.damage = self.store.check()  # cheap; the next sync with a check repairs
        #: who answers memory_search (memdeck's ranking, the openclaw profile or qmd),
        #: chosen once; ``searcher_for`` gives another for one call's ``--backend``
        self._searchers: dict[tuple[str | None, str | None], Searcher] = {
            (None, None): choose_searcher(self)
        }

    @property
    def searcher(self) -> Searcher:
        return self._searchers[None, None]

    def searcher_for(self, backend: str | None = None, profile: str | None = None) -> Searcher:
        """The searcher for one call: ``backend`` ("qmd" or "builtin") overrides
        ``memory.backend``, ``profile`` the ranking profile (each kept for reuse:
        the openclaw profile's index lives in its searcher)."""
        key = (backend, profile)
        if key not in self._searchers:
            self._searchers[key] = choose_searcher(self, backend, profile)
        return self._searchers[key]

    def openclaw_searcher(self) -> OpenClawSearcher:
        """OpenClaw 2026.9.6's ranking for this workspace, whatever the profile
        (the app's side-by-side comparison)."""
        searcher = self.searcher_for(profile="openclaw")
        assert isinstance(searcher, OpenClawSearcher)
        return searcher

    # -- store lifecycle -------------------------------------------------------
    @contextlib.contextmanager
    def pinned_store(self) -> Iterator[IndexStore]:
        """The current store, held so a full reindex cannot swap it out until the block ends.

        Writers outside the engine (recall events, dreaming) use it so a row lands
        either in the old file, which the swap carries over, or in the new one,
        never in a file that is being replaced.
        """
        with self._swap_lock:
            yield self.store

    def _new_store(self, path: Path, *, snapshot: bool = False) -> Store:
        st = self.ms.store
        return Store(
            path,
            snapshot=snapshot,
            vector_enabled=st.vector_enabled,
            extension_path=st.extension_path,
            fts_tokenizer=st.fts_tokenizer,
            page_size=self._page_size_for(path) if not snapshot else PAGE_SIZE,
        )

    def _page_size_for(self, path: Path) -> int:
        """A new index file's page size, from the size of the memory it will hold
        (``store.page_size_for``); an existing file keeps its own."""
        try:
            if str(path) == ":memory:" or (path.exists() and path.stat().st_size > 0):
                return PAGE_SIZE  # not used: the file has its page size
            return page_size_for(sum(f.size for f in memory_source_files(self.workspace)))
        except OSError:
            return PAGE_SIZE

    def _open_store(self) -> IndexStore:
        if not self.backend.local_file:
            try:
                return self.backend.open()
            except DatabaseError as exc:  # the message masks the DSN's password
                raise IndexUnavailable(str(exc)) from exc
        if self.read_only and not self.index_path.exists():
            return self._new_store(Path(":memory:"))  # nothing built yet: nothing to create
        try:
            store = self._new_store(self.index_path)
            store.counts()  # touches every table: a damaged file fails here
            return store
        except CorruptIndexError as exc:
            if not self.read_only:
                return self._recover_corrupt(str(exc))
            # status, search, get and curate only read: the file stays as it is for
            # the next writer (``memdeck index``) to move aside and rebuild
            self.damage = (f"the index cannot be read: {exc}",)
            self.unavailable = (
                f"the index {self.index_path} is damaged ({exc}); run `memdeck index` to "
                "rebuild it from the Markdown"
            )
            return self._new_store(Path(":memory:"))
        except (DatabaseError, OSError) as exc:
            self.write_problem = diagnose_index(self.index_path, exc)
            problem = self.write_problem.text
            if self.index_path.is_dir() and not self.read_only:
                raise IndexUnavailable(problem) from exc
            if self.index_path.is_dir():  # get and status need no index; search says why
                self.unavailable = problem
                self.snapshot_reason = problem
                return self._new_store(Path(":memory:"))
        # Reading must not need writing: open the file as a read-only snapshot.
        try:
            store = self._new_store(self.index_path, snapshot=True)
            store.counts()
        except (DatabaseError, OSError) as exc:
            raise IndexUnavailable(index_problem(self.index_path, exc)) from exc
        self.snapshot_reason = problem
        return store

    def refresh_store(self) -> bool:
        """Reopen the store if another process rebuilt, replaced or deleted the index.

        Another memdeck's full reindex commits a new build into the same file:
        this connection already reads it, but the store's cached state (vector
        table dims) must be reloaded before writing. A file replaced or deleted
        behind our back (index removed by hand, corrupt-index recovery in another
        process) must be reopened by path. Cheap: one ``stat`` and one query.
        """
        with self._swap_lock:
            key = self.backend.identity(self.store)
            if key == self._store_key:
                return False
            self.store.close()
            self.store = self._open_store()
            self._store_key = self.backend.identity(self.store)
            if self.store.get_meta("fingerprint") is None:
                self.state.dirty = True  # the index is gone: it needs building again
            return True

    def open_for_writing(self) -> None:
        """Make a ``read_only`` engine a writer: create the state folder and open (or
        create) the index. The app opens a missing workspace read-only, so that
        declining to create the folder leaves nothing behind, and calls this once the
        user created it."""
        if not self.read_only:
            return
        with self._swap_lock:
            try:
                self.index_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise IndexUnavailable(diagnose_index(self.index_path, exc).text) from exc
            old, self.read_only = self.store, False
            self.unavailable = self.snapshot_reason = None
            self._fingerprint = None
            try:
                self.store = self._open_store()
            except BaseException:
                self.read_only = True
                raise
            old.close()
            self._store_key = self.backend.identity(self.store)

    @contextlib.contextmanager
    def _writer(self, timeout: float, cancel: threading.Event | None = None) -> Iterator[None]:
        """The index's writer lock; if its last holder died holding it, the index
        is checked first (see ``_check_after_crash``)."""
        with self.backend.writer(self.store, timeout, cancel) as grant:
            if grant.died_holding is not None:
                self._check_after_crash(grant.died_holding)
            yield

    def fingerprint(self, *, load: bool = True) -> dict[str, Any]:
        """What the index's contents depend on (``index_fingerprint``). Without
        ``load``, a provider whose vector size is not known yet (a model not loaded,
        an endpoint not asked) is left so: ``dims`` is None, and nothing is cached."""
        generation = getattr(self.provider, "generation", 0)
        if self._fingerprint is None or generation != self._fp_generation:
            fp = self._compute_fingerprint(load)
            if getattr(self.provider, "generation", 0) != self._fp_generation:
                # the fallback took over while the primary's size was asked: the
                # fingerprint is the fallback's, not the primary's name with its size
                fp = self._compute_fingerprint(load)
            return fp
        return self._fingerprint

    def _compute_fingerprint(self, load: bool) -> dict[str, Any]:
        self._fp_generation = getattr(self.provider, "generation", 0)
        self._adopt_index_dims()
        unknown = getattr(self.provider, "known_dims", 0) is None
        try:
            if (self.read_only or not load) and unknown:  # the size would cost a load
                fp = index_fingerprint(self.ms, self.provider, dims_known=False)
                fp.update(self.backend.fingerprint_keys)
                self._fingerprint = None  # not cached: a later call may learn the size
                return fp
            self._fingerprint = index_fingerprint(self.ms, self.provider)
        except ProviderError as exc:
            # A provider that cannot even load (missing/broken model): FTS-only.
            self.provider_error = str(exc)
            self.provider = None
            self._fingerprint = index_fingerprint(self.ms, None)
        self._fingerprint.update(self.backend.fingerprint_keys)
        return self._fingerprint

    def _adopt_index_dims(self) -> None:
        """A remote endpoint's vector size, when the index was built with this very
        provider/model/endpoint, is the size recorded in the index: no probe
        request (``status``, an unchanged ``index`` and searches send none)."""
        adopt = getattr(self.provider, "adopt_dims", None)
        if adopt is None or self.provider is None or not self._trust_index_dims:
            return
        stored = self.store.fingerprint() or {}
        if not isinstance(stored.get("dims"), int):
            return
        mine = self.provider.fingerprint()
        if all(stored.get(k) == mine.get(k) for k in ("provider", "model", "provider_key")):
            adopt(stored["dims"], "index")

    def index_built(self) -> bool:
        """True once a sync has completed into this index (it has a fingerprint)."""
        return self.store.get_meta("fingerprint") is not None

    def needs_full_reindex(self) -> bool:
        return self.store.fingerprint() != self.fingerprint()

    def search_provider(self) -> EmbeddingProvider | None:
        """The provider for the query vector, unless the index holds another vector
        space (a fallback switch or a provider change not yet reindexed: comparing
        across spaces is meaningless) or none at all (the provider failed while
        indexing): such a search is keyword-only, and says so, until a reindex."""
        stored = self.store.fingerprint() or {}
        self._follow_index_provider(stored)
        fp = self.fingerprint()
        keys = ("provider", "model", "provider_key", "dims")
        if not all(stored.get(k) == fp.get(k) for k in keys):
            return None
        # an index whose embedding failed holds no vector to compare with
        return self.provider if self.store.embedded_count() else None

    def _follow_index_provider(self, stored: Mapping[str, object]) -> None:
        """A reader (``status``, ``search``) uses the provider the index was built
        with when that is the configured fallback: an earlier process's primary
        failed and it rebuilt the index with the fallback. A writer's sync asks the
        primary first, and rebuilds with it once it answers again."""
        follow = getattr(self.provider, "follow_index", None)
        if self.read_only and follow is not None and stored:
            follow(stored)

    # -- sync --------------------------------------------------------------------
    def source_files(self) -> list[SourceFile]:
        files = memory_source_files(self.workspace)
        files += media_source_files(self.workspace, self.ms, self.provider)
        if self.ms.session_memory and "sessions" in self.ms.sources:
            from engine.memory.sessions import session_source_files

            files += session_source_files(self.settings, self.store.files())
        return files

    def changed_source_files(self, paths: Iterable[Path | str]) -> list[SourceFile] | None:
        """The source files among ``paths`` (absolute), without listing the workspace.

        None when a path is not a plain Markdown memory file (media, a session
        transcript): only a full listing knows how to read those.
        """
        out: list[SourceFile] = []
        for path in paths:
            if not str(path).lower().endswith(".md"):
                return None
            f = self.workspace.memory_file(path)
            if f is not None:
                base = self.workspace.base_of(f.abs)[0]
                out.append(SourceFile(f.rel, f.abs, "memory", f.size, f.mtime, base=base))
        return out

    def sync(
        self,
        *,
        reason: str = "manual",
        force: bool = False,
        cancel: threading.Event | None = None,
        paths: Iterable[Path | str] | None = None,
        check: Literal["cheap", "thorough"] | None = None,
    ) -> SyncDone:
        """Bring the index up to date (full atomic rebuild if the fingerprint changed).

        Blocking, and single-writer across threads and processes. ``cancel``
        stops it between files (each file is one transaction) or while it waits
        for another process's writer lock, raising ``SyncCancelled`` or
        ``LockWaitCancelled``; the index stays consistent either way.

        ``paths``: absolute paths known to be the only ones changed since the last
        complete sync (the watcher's report). Only they are looked at — at 100k
        chunks listing 18,000 files is ~1 s of an edit's way to the index. Any
        path that is not a Markdown memory file, or a pending full rebuild, makes
        it an ordinary listing sync.

        ``check`` first checks the index (``memdeck index``: "cheap", its pages and
        memdeck's structures; ``--check``: "thorough") and rebuilds it from the
        Markdown when anything is damaged, saying so in ``recovered``.
        """
        if self.read_only:
            raise IndexReadOnly("this engine was opened read-only (status/search/get)")
        try:
            return self._sync_writable(
                reason=reason,
                force=force,
                cancel=cancel,
                paths=None if paths is None else list(paths),
                check=check,
            )
        except (IndexUnavailable, CorruptIndexError, BusyIndexError):
            raise
        except (DatabaseError, OSError) as exc:
            # a full disk or a read-only folder mid-sync: say where and what to do, and
            # give back the write-ahead log's space (it would keep the disk full)
            self.store.release_space()
            self.write_problem = diagnose_index(self.index_path, exc)
            problem = self.write_problem.text
            self.state.last_error = problem
            self.bus.publish(SyncFailed(reason=reason, error=problem))
            raise IndexUnavailable(problem) from exc

    def _sync_writable(
        self,
        *,
        reason: str,
        force: bool,
        cancel: threading.Event | None,
        paths: list[Path | str] | None = None,
        check: Literal["cheap", "thorough"] | None = None,
    ) -> SyncDone:
        if self.store.snapshot:
            # opened read-only (full disk, read-only folder): writable again?
            with self._swap_lock:
                fresh = self._new_store(self.index_path)  # raises while still unwritable
                self.store.close()
                self.store = fresh
                self._store_key = self.backend.identity(fresh)
                self.snapshot_reason = None
        if force:
            # A rebuild on request re-learns a remote endpoint's size instead of
            # trusting the old index (the endpoint may serve another model now).
            self._trust_index_dims = False
            forget = getattr(self.provider, "forget_adopted_dims", None)
            if forget is not None:
                forget()
                self._fingerprint = None
        if self.qmd is not None:
            self.qmd.start()  # idempotent: qmd's boot refresh and schedule, outside our locks
        lock = self._writer(timeout=self.lock_timeout, cancel=cancel)
        with self._sync_lock, lock:
            self.state.running = True
            try:
                self.refresh_store()
                if check is not None and self._damage_found(
                    "thorough" if check == "thorough" else "index"
                ):
                    force = True  # rebuilt from the Markdown (and the sound cached vectors)
                try:
                    done = self._sync_once(self.fingerprint(), force, reason, cancel, paths)
                except ProviderSwitched:
                    # The fallback took over mid-sync: its vectors live in another
                    # space, so its new fingerprint forces one atomic full rebuild.
                    done = self._sync_once(self.fingerprint(), force, reason, cancel)
                done = self._cache_profile_vectors(done)
                if self.workspace.unreadable:  # folders the listing had to skip
                    errors = (*done.errors, *self.workspace.unreadable)
                    done = dataclasses.replace(done, errors=type(done.errors)(errors))
                # Why this index has no vectors, for readers that do not probe:
                # the provider failed its probe here (a refused answer, a missing model).
                refused = self.provider_error if self.provider is None else None
                if (self.store.get_meta("provider_refused") or None) != refused:
                    self.store.set_meta("provider_refused", refused or "")
                self.state.last_done = done
                self.state.last_error = None
                self.write_problem = None
                self.state.dirty = False
                return done
            except Exception as exc:
                self.state.last_error = f"{type(exc).__name__}: {exc}"
                self.bus.publish(SyncFailed(reason=reason, error=self.state.last_error))
                raise
            finally:
                self.state.running = False

    def _cache_profile_vectors(self, done: SyncDone) -> SyncDone:
        """With the ``openclaw`` profile configured and memdeck's chunk vectors pooled
        from unit vectors (``engine.index.pooled_chunks``: not the model's vectors of
        the texts, which the profile needs), the writer puts the model's vectors of the
        profile's chunks in the embedding cache, where its searches in any process
        take them; a failing provider leaves them to the searches. The sync's report
        counts them as embedded and their time in its duration."""
        provider = self.provider
        if self.settings.profile != "openclaw" or provider is None or not self.ms.cache.enabled:
            return done
        if not pools_chunks(provider, self.ms.store.line_vectors):
            return done
        started = time.perf_counter()
        try:
            n = self.openclaw_searcher().cache_model_vectors(provider, self.store)
        except ProviderError:
            return done
        if not n:
            return done
        return dataclasses.replace(
            done,
            chunks_embedded=done.chunks_embedded + n,
            duration=done.duration + time.perf_counter() - started,
        )

    def _sync_once(
        self,
        fp: dict[str, Any],
        force: bool,
        reason: str,
        cancel: threading.Event | None,
        paths: list[Path | str] | None = None,
    ) -> SyncDone:
        if force or self.store.fingerprint() != fp:
            return self._full_reindex(fp, reason, cancel)
        try:
            # a cheap moment: we hold the lock (counts only for the watcher's files)
            if not self.store.vec_table_consistent(deep=paths is None):
                self._rebuild_vec_table("found at sync")
            changed = None if paths is None else self.changed_source_files(paths)
            if changed is not None and paths is not None:
                only = {self.workspace.rel(Path(os.path.abspath(p))) for p in paths}
                return self._indexer(self.store, cancel).sync(changed, reason=reason, only=only)
            return self._indexer(self.store, cancel).sync(self.source_files(), reason=reason)
        except CorruptIndexError as exc:
            with self._swap_lock:
                self.store.close()
                self.store = self._recover_corrupt(str(exc))
                self._store_key = self.backend.identity(self.store)
            return self._full_reindex(fp, reason, cancel)

    def _indexer(self, store: IndexStore, cancel: threading.Event | None) -> Indexer:
        # sqlite-vec's copy of the vectors is built at the end of a sync when this
        # engine searches through it (else only past the numpy budget)
        store.vec_requested = self.vector_path == "sqlite-vec"
        return Indexer(store, self.provider, self.ms, self.bus, cancel)

    def _full_reindex(
        self, fp: dict[str, Any], reason: str, cancel: threading.Event | None
    ) -> SyncDone:
        """Build the whole index apart, then make it the live one in one step
        (``StoreBackend.rebuild``: a temp file copied in, or a new generation).
        A SQLite build that cannot fit on its disk is refused before it starts."""
        started = time.perf_counter()
        if self.backend.local_file:
            need = self.space_needed()
            try:
                free = shutil.disk_usage(self.index_path.parent).free
            except OSError:
                free = need
            if free < need:
                raise IndexUnavailable(
                    f"a full rebuild of the index needs about {need / 1e6:,.1f} MB free in "
                    f"{self.index_path.parent} ({free / 1e6:,.1f} MB is): free space there "
                    "or set OPENCLAW_STATE_DIR to a larger disk"
                )

        def build(new: IndexStore) -> SyncDone:
            return self._indexer(new, cancel).sync(
                self.source_files(), reason=reason, full=True, publish_done=False
            )

        def before_swap(done: SyncDone) -> None:
            total = done.files_indexed
            self.bus.publish(SyncProgress(phase="swap", files_done=0, files_total=total))

        done, live = self.backend.rebuild(
            self.store, build, fp, lambda: cancel is not None and cancel.is_set(), before_swap
        )
        if live is not self.store:
            with self._swap_lock:
                self.store.close()
                self.store = live
                self._store_key = self.backend.identity(self.store)
        self.damage = ()  # rebuilt from the Markdown
        done = dataclasses.replace(done, duration=time.perf_counter() - started, at=time.time())
        total = done.files_indexed
        self.bus.publish(SyncProgress(phase="swap", files_done=total, files_total=total))
        self.bus.publish(done)
        return done

    def index_exists(self) -> bool:
        """The index file exists (always true for the PostgreSQL store)."""
        return self.backend.exists()

    def _sync_after_repair(self) -> None:
        self.sync(reason="recovery")  # from the Markdown (and the salvaged cache)

    def _mark_rebuild(self) -> None:
        self.state.dirty = True  # the next sync builds the index again

    def mark_dirty(self) -> None:
        self.state.dirty = True
        if self.qmd is not None:
            self.qmd.notify_change()

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
        """Retrieve and rank; an empty, never-synced index is synced first. A query
        over ``MAX_QUERY_CHARS`` is refused (``QueryRefused``)."""
        check_query(query)
        if self.unavailable is not None:
            raise IndexUnavailable(self.unavailable)
        options = options or self.default_options()
        self.refresh_store()
        if self.store.get_meta("fingerprint") is None:
            if self.read_only:
                raise IndexNotBuilt(
                    f"no index yet for {self.workspace.root}: run `memdeck index` first"
                )
            if self.provider is None:
                self.sync(reason="search")  # keyword-only: the first index is quick
            else:
                return self._search_while_building(query, options, today)
        t0 = time.perf_counter()
        repairable = not (self.read_only or self.store.snapshot or not self.backend.local_file)
        try:
            retrieval = self._retrieve(query, options)
        except BusyIndexError:
            raise
        except DatabaseError as exc:
            self.search_error = f"{type(exc).__name__}: {exc}"
            if not repairable:  # a reader: say so and leave the repair to a writer
                if isinstance(exc, CorruptIndexError):
                    raise CorruptIndexError(
                        f"{exc}; run `memdeck index` to rebuild it from the Markdown"
                    ) from exc
                raise
            # after a failed query: check the file, rebuild what is damaged, answer again
            if not self._repair_after_failed_query(
                str(exc), corrupt=isinstance(exc, CorruptIndexError)
            ):
                raise  # sound pages, not sqlite-vec: nothing to rebuild
            retrieval = self._retrieve(query, options)
        if (
            retrieval.vector_error is not None
            and retrieval.vector_error.startswith(VEC_DAMAGED)
            and repairable
        ):
            # a failed vec query: sqlite-vec's errors are treated as corruption
            self._repair_after_failed_query(retrieval.vector_error, corrupt=False, vec=True)
            retrieval = self._retrieve(query, options)
        outcome = rank(retrieval, options, today)
        self.search_error = None
        ms = (time.perf_counter() - t0) * 1000
        outcome.timings_ms["total"] = ms
        self.bus.publish(SearchTimed(query=query, mode=outcome.mode, duration_ms=ms))
        return outcome

    def _retrieve(self, query: str, options: SearchOptions) -> Retrieval:
        with self._swap_lock:
            return retrieve(
                self.store,
                self.search_provider(),
                query,
                options,
                vector_path=self.vector_path,
                budget_s=self.search_budget_s,
            )

    def _search_while_building(
        self, query: str, options: SearchOptions, today: dt.date | None
    ) -> SearchOutcome:
        """The first search of a workspace with an embedding provider.

        Embedding a large workspace can take an hour on the local model; the
        search must not wait for it. The first index is started in the
        background (if nothing is building it yet) and this search is answered
        keyword-only from an in-memory FTS index of the files, with the reason.
        """
        t0 = time.perf_counter()
        with self._interim_lock:
            first = self._first_sync
            if (first is None or not first.is_alive()) and not self.state.running:
                self._first_sync = threading.Thread(
                    target=self._first_sync_run, name="memdeck-first-index", daemon=True
                )
                self._first_sync.start()
            if self._interim is None:
                interim = Store(Path(":memory:"), fts_tokenizer=self.ms.store.fts_tokenizer)
                Indexer(interim, None, self.ms).sync(self.source_files(), reason="interim")
                self._interim = interim
            retrieval = retrieve(self._interim, None, query, options)
        retrieval.vector_error = (
            "vectors are still being built (first index of this workspace); answered "
            "keyword-only until it finishes"
        )
        outcome = rank(retrieval, options, today)
        ms = (time.perf_counter() - t0) * 1000
        outcome.timings_ms["total"] = ms
        self.bus.publish(SearchTimed(query=query, mode=outcome.mode, duration_ms=ms))
        return outcome

    def _first_sync_run(self) -> None:
        with contextlib.suppress(Exception):  # SyncFailed carries the error to the app
            self.sync(reason="search", cancel=self._closing)
        with self._interim_lock:
            if self._interim is not None and self.store.get_meta("fingerprint") is not None:
                self._interim.close()
                self._interim = None

    # -- status ------------------------------------------------------------------
    def _status_check(self) -> CheckLevel:
        """How much of the index ``memdeck status`` checks: its pages too (SQLite's
        ``quick_check`` reads each once) when the file is at most
        ``STATUS_PAGE_CHECK_BYTES``, so a damaged page is listed before a search
        meets it; a larger index gets the open check, and ``memdeck index`` checks
        its pages before it syncs."""
        if not self.backend.local_file:
            return "open"
        try:
            size = self.index_path.stat().st_size
        except OSError:
            return "open"
        return "index" if size <= STATUS_PAGE_CHECK_BYTES else "open"

    def status(self, *, load_provider: bool = True) -> EngineStatus:
        """The index, provider and sync state. Without ``load_provider`` a model not
        loaded yet stays unloaded (its ``dims`` unknown, a broken file found by the
        next sync or search instead): the app's status line, which must not wait
        for the model, or for an index run that holds it."""
        store = self.store
        counts = store.counts()
        self._follow_index_provider(store.fingerprint() or {})
        fp = self.fingerprint(load=load_provider)
        # the provider failed the last index and left it without vectors (the reason
        # a search gives for answering keyword-only)
        refused = (
            (store.get_meta("provider_refused") or None)
            if counts["chunks"] and not counts["embedded"]
            else None
        )
        stored_fp = store.fingerprint()
        provider = self.provider
        files = store.files()
        on_disk = self.source_files()
        qmd = self.qmd.status() if self.qmd is not None else None
        info = store.info()
        active, why = multimodal_scope(self.ms, provider)
        lines = lines_setting(provider, self.ms.store.line_vectors)
        return EngineStatus(
            version=__version__,
            workspace=str(self.workspace.root),
            agent=self.settings.agent_id,
            config=str(self.settings.config_path) if self.settings.config_path else None,
            config_layout=self.settings.config_layout,
            openclaw_rejections=self.settings.openclaw_rejections,
            index=str(self.index_path) if self.backend.local_file else info.location,
            backend=self.settings.backend,
            binding=info.binding,
            store=store.backend,
            store_version=info.version,
            sqlite_version=info.sqlite_version,
            fts=info.fts,
            fts_tokenizer=store.fts_tokenizer,
            vector=info.vector,
            sqlite_vec_version=store.vec.version,
            sqlite_vec_error=store.vec.reason if not store.vec.loaded else None,
            provider=provider.id if provider else "none",
            provider_requested=self.choice.requested,
            provider_reason=self.choice.reason,
            provider_error=self.provider_error,
            model=provider.model if provider else None,
            dims=fp.get("dims"),
            provider_detail=provider.describe() if provider else None,
            # embedding fallback: what the switch did and why (None while the primary serves)
            provider_fallback=getattr(provider, "switch", None),
            multimodal=MultimodalScope(active, why),
            mode="hybrid" if provider and not refused else "fts",
            # refused files have a row (with the reason) but nothing indexed
            files=sum(1 for r in files.values() if r.chunks or not r.error),
            files_on_disk=len(on_disk),
            chunks=counts["chunks"],
            embedded_chunks=counts["embedded"],
            cache_entries=counts["cache_entries"],
            file_errors={p: r.error for p, r in files.items() if r.error},
            dirty=self.state.dirty or stored_fp != fp or disk_differs(on_disk, files),
            needs_full_reindex=stored_fp != fp,
            fingerprint=fp,
            indexed_fingerprint=stored_fp,
            sync_running=self.state.running,
            last_sync=SyncSummary.of(self.state.last_done) if self.state.last_done else None,
            last_error=self.state.last_error,
            recovered=self.recovered,
            integrity_check=self.integrity_check,
            damage=self.damage or (store.check(self._status_check()) if self.read_only else ()),
            search_error=self.search_error,
            recall=self._recall_size(),
            write_problem=self.write_problem or self._space_problem(),
            unit_vectors=lines.on,
            unit_vectors_reason=lines.reason,
            # what the index holds (before the rebuild a new rule asks for: the old kind)
            chunk_vectors_pooled=fingerprint_pools(stored_fp or fp),
            units_missing=self._units_missing() if lines.on and load_provider else None,
            debris_removed=tuple(p.name for p in self.debris_removed),
            warnings=tuple(self.settings.warnings)
            + ((f"index opened read-only: {self.snapshot_reason}",) if self.snapshot_reason else ())
            + (
                (
                    "searches are keyword-only: the last index could not use the embedding"
                    f" provider ({refused}); `memdeck index` tries it again",
                )
                if refused
                else ()
            ),
            # qmd failing → searches served by the builtin index (None for builtin)
            fallback=qmd.fallback if qmd else None,
            fallback_reason=qmd.fallback_reason if qmd else None,
            qmd=qmd,
        )

    def _units_missing(self) -> int | None:
        """Text chunks whose unit vectors are not stored yet in the provider's space."""
        if self.provider is None:
            return None
        try:
            return self.store.count_chunks_without_line_vectors(space_key(self.provider))
        except (DatabaseError, OSError, ProviderError):
            return None

    def _recall_size(self) -> RecallSize | None:
        try:
            counts = recall_counts(self.store)
        except (DatabaseError, OSError):
            return None  # a snapshot of an index that never logged a search
        return RecallSize(counts.searches, counts.hits, MAX_SEARCHES, MAX_EVENTS)

    def _space_problem(self) -> WriteProblem | None:
        return low_space_problem(self.index_path.parent) if self.backend.local_file else None

    def space_needed(self) -> int:
        """Bytes a full rebuild needs free beside the index: the rebuilt temp file, the
        copy of it written through the live file's log, and the live file (each about
        the size of the index: today's size, or for a first build the Markdown times
        ``INDEX_PER_MARKDOWN``, the default's measured ratio with line vectors)."""
        try:
            have = self.index_path.stat().st_size
        except OSError:
            have = 0
        # a file over the indexing limit is refused unread: it costs the index nothing
        markdown = sum(f.size for f in self.source_files() if f.size <= MAX_INDEX_BYTES)
        return 2 * max(have, INDEX_PER_MARKDOWN * markdown)

    def db_integrity(self) -> str:
        """The thorough check of the live index ("ok" when healthy)."""
        return self.store.integrity_check()

    def stop_background(self) -> None:
        """Ask the first index a search started in the background to stop (between
        files, or between two calls of the provider; its temporary file is dropped).
        The engine stays usable: ``close`` waits for that thread."""
        self._closing.set()

    def close(self) -> None:
        self.stop_background()
        first = self._first_sync
        if first is not None and first.is_alive():
            first.join(timeout=30)
        if self._interim is not None:
            self._interim.close()
        if self.qmd is not None:
            self.qmd.close()
        with self._swap_lock:
            self.store.close()
        if self.provider is not None:
            with contextlib.suppress(Exception):
                self.provider.close()


def _env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(env.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default
