"""Keeping the index fresh in the background: file watcher, schedules, requests.

``Engine.sync`` is blocking and single-writer. ``SyncService`` decides *when*
to call it and does so on its own thread, so neither the TUI nor a search ever
waits for a sync:

* a ``watchfiles`` watcher over ``MEMORY.md``/``memory.md``, ``memory/``,
  extraPaths (and the agent's transcripts when session memory is on) marks the
  index dirty and schedules a sync once the files have been quiet for the
  debounce (1.5 s), or at the latest ``max_wait`` after the first unsynced
  change, so a stream of writes is coalesced into a few syncs instead of one
  per write;
* a sync at start (``sync.onSessionStart``), or unconditionally when the index
  has never been built or its fingerprint no longer matches the settings;
* every ``sync.intervalMinutes`` when > 0, and when the index file is missing
  (deleted while the app runs: the scheduler looks every poll interval);
* after a search while the index is dirty (``sync.onSearch``): the service
  listens for the engine's ``SearchTimed`` event, so the search is answered
  from the current index and the refresh happens behind it;
* ``request_sync(reason)`` for anything else (a "sync now" key). Requests that
  arrive while a sync runs are merged into one follow-up sync.

Which folders are watched, and how, is :mod:`engine.index.watch` (one folder at a
time, never through a symlink or into ignored trees, re-planned when folders
appear or vanish); when a trigger becomes a sync is :mod:`engine.index.schedule`.
When the engine runs the qmd sidecar, the same plan also covers its collection
folders, so one watcher serves both indexes.

Progress goes out through ``engine.bus`` (the indexer's SyncStarted /
SyncProgress / SyncDone / SyncFailed / FileError); the service's own state
(running, queued, dirty, watching, last sync, errors) is a ``SyncStatus``
snapshot, readable at any time as ``state`` and published on the same bus (and
to ``subscribe``rs) whenever it changes.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.config.paths import sessions_dir
from engine.events import Event, EventBus, FileError, SearchTimed, SyncDone, SyncStatus
from engine.index.indexer import SyncCancelled
from engine.index.lock import LockWaitCancelled
from engine.index.schedule import RefreshSchedule, wait_for_job
from engine.index.watch import DirectoryWatcher, WatchPlan, build_watch_plan

if TYPE_CHECKING:
    from engine.core import Engine  # drives an Engine; core never imports this module

DEBOUNCE_S = 1.5
MAX_WAIT_S = 10.0
POLL_S = 1.0
RETRY_MIN_S = 5.0
RETRY_MAX_S = 300.0

#: The service's state snapshot is the ``SyncStatus`` event it publishes.
SyncServiceState = SyncStatus
StateListener = Callable[[SyncServiceState], None]


# -- the service ------------------------------------------------------------------
class SyncService:
    """Background sync of one ``Engine``: ``start()``, then ``stop()`` before ``engine.close()``."""

    def __init__(
        self,
        engine: Engine,
        *,
        debounce: float = DEBOUNCE_S,
        max_wait: float = MAX_WAIT_S,
        poll_interval: float = POLL_S,
        retry_min: float = RETRY_MIN_S,
        force_polling: bool | None = None,
    ):
        self.engine = engine
        self.sync_settings = engine.ms.sync
        self.debounce = debounce
        self.max_wait = max(max_wait, debounce)
        self.poll_interval = poll_interval
        self.retry_min = retry_min
        self.force_polling = force_polling
        ms = engine.ms
        self.transcripts: Path | None = (
            sessions_dir(engine.settings.state_dir, engine.settings.agent_id)
            if ms.session_memory and "sessions" in ms.sources
            else None
        )
        self._cond = threading.Condition()
        self._schedule = RefreshSchedule(debounce=debounce, max_wait=max_wait)
        self._gen = 0  # bumped on every relevant file change
        self._running_gen: int | None = None
        self._running_reason: str | None = None
        self._backoff = retry_min
        self._syncs_done = 0
        self._last_done: SyncDone | None = None
        self._last_error: str | None = None
        self._dirty = True
        #: files the watcher reported since the last sync started; None when some
        #: change was not a file's (a folder moved, a re-plan) or no sync has listed
        #: the workspace yet in this service: the next sync must then list it
        self._changed: set[Path] | None = None
        self._errors: collections.deque[str] = collections.deque(maxlen=20)
        self._watching = False
        self._watched_dirs = 0
        self._watch_error: str | None = None
        self._disabled: str | None = None
        self._state_bus = EventBus()  # subscribers of the state snapshots only
        self._emit_lock = threading.Lock()
        self._last_emitted: SyncServiceState | None = None
        self._stop = threading.Event()
        self._cancel = threading.Event()
        self._armed = threading.Event()
        self._starting = False  # until the start-up decision is queued (or not)
        self._threads: list[threading.Thread] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._watcher: DirectoryWatcher | None = None

    # -- lifecycle ----------------------------------------------------------------
    @property
    def started(self) -> bool:
        return bool(self._threads)

    def start(self) -> None:
        """Start the scheduler (and the watcher if ``sync.watch``); returns at once.

        The start-up decision (sync because the index is missing, stale or
        ``onSessionStart``) is taken on the scheduler thread, because computing
        the fingerprint may load an embedding model.
        """
        if self._threads:
            raise RuntimeError("sync service already started")
        if not self.engine.ms.enabled:
            self._disabled = "memorySearch.enabled is false"
            self._emit()
            return
        self._stop = threading.Event()
        self._cancel = threading.Event()
        self._armed = threading.Event()
        self._unsubscribe = self.engine.bus.subscribe(self._on_event)
        interval = self.sync_settings.interval_minutes
        with self._cond:
            self._starting = True
            self._schedule.interval = interval * 60 if interval and interval > 0 else None
            self._schedule.start_interval(time.monotonic())
        self._watcher = DirectoryWatcher(
            self._plan,
            self.notify_change,
            stop=self._stop,
            armed=self._armed,
            on_state=self._set_watch,
            poll_interval=self.poll_interval,
            force_polling=self.force_polling,
        )
        self._threads = [
            threading.Thread(target=self._scheduler_loop, name="memdeck-sync", daemon=True)
        ]
        if self.sync_settings.watch:
            self._threads.append(
                threading.Thread(target=self._watcher.run, name="memdeck-watch", daemon=True)
            )
        else:
            self._armed.set()
        for thread in self._threads:
            thread.start()
        self._emit()

    def stop(self, timeout: float = 10.0) -> bool:
        """Cancel a running sync, stop watching, join the threads.

        A cancelled sync stops between files (each file is one transaction),
        discards its temporary full-reindex file, or gives up waiting for another
        process's writer lock, so the index stays consistent and no temp file is
        left. Returns False if a thread is still busy after ``timeout`` (the
        threads are daemons, so the process can still exit).
        """
        self._stop.set()
        self._cancel.set()
        # the first index a search started in the background holds the writer's lock
        # that the scheduler may be waiting for: it stops between files too
        self.engine.stop_background()
        with self._cond:
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = any(t.is_alive() for t in self._threads)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._threads = []
        with self._cond:
            self._watching = False
            self._starting = False
            self._cond.notify_all()
        self._emit()
        return not alive

    def __enter__(self) -> SyncService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- requests -------------------------------------------------------------------
    def request_sync(self, reason: str = "manual", *, force: bool = False) -> None:
        """Ask for a sync soon; never blocks. Requests made while one runs are merged
        into a single follow-up sync."""
        with self._cond:
            self._schedule.request(reason, force=force)
            self._cond.notify_all()
        self._emit()

    def notify_search(self) -> None:
        """A search just ran: refresh in the background if the index is dirty.

        Called from the engine's ``SearchTimed`` event; a sync already running
        that started after the last change makes another one pointless.
        """
        if not self.sync_settings.on_search or self._stop.is_set() or not self._threads:
            return
        with self._cond:
            # The engine's flag covers changes the watcher cannot see (sync.watch off,
            # an editor save reported through ``engine.mark_dirty()``).
            if not (self._dirty or self.engine.state.dirty):
                return
            if self._running_gen is not None and self._running_gen == self._gen:
                return
            if self._schedule.requests:
                return
        self.request_sync("search")

    def notify_change(self, files: frozenset[Path] | None = None) -> None:
        """A watched file changed: mark dirty and (re)start the debounce clock.

        ``files``: which ones (the watcher's report); None when unknown."""
        now = time.monotonic()
        with self._cond:
            self._gen += 1
            if files is None or self._changed is None:
                self._changed = None
            else:
                self._changed |= files
            new_quiet_period = self._schedule.note_change(now)
            was_quiet = not self._dirty or new_quiet_period
            self._dirty = True
            self._cond.notify_all()
        self.engine.mark_dirty()
        if was_quiet:
            self._emit()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until nothing is running or pending (tests, benchmarks, the CLI)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                busy = self._starting or self._running_reason is not None or self._schedule.pending
                if not busy:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))

    def wait_watching(self, timeout: float = 10.0) -> bool:
        """Block until the watcher is armed: changes from now on are seen."""
        return self._armed.wait(timeout)

    # -- state ----------------------------------------------------------------------
    @property
    def state(self) -> SyncServiceState:
        with self._cond:
            retry = self._schedule.retry_at
            return SyncServiceState(
                started=bool(self._threads),
                running=self._running_reason is not None,
                running_reason=self._running_reason,
                queued=tuple(self._schedule.requests),
                dirty=self._dirty,
                watching=self._watching,
                watched_dirs=self._watched_dirs,
                watch_error=self._watch_error,
                syncs_done=self._syncs_done,
                last_done=self._last_done,
                last_error=self._last_error,
                next_retry_in=max(0.0, retry - time.monotonic()) if retry is not None else None,
                errors=tuple(self._errors),
                disabled=self._disabled,
            )

    def subscribe(self, fn: StateListener) -> Callable[[], None]:
        """Call ``fn(state)`` (on a service thread) whenever the state changes.

        The same snapshots also go out on ``engine.bus`` as ``SyncStatus`` events;
        this is for clients that want only them.
        """
        return self._state_bus.subscribe(fn)  # type: ignore[arg-type]

    def _emit(self) -> None:
        """Publish the state if it changed (ignoring the retry countdown's ticking)."""
        with self._emit_lock:
            snapshot = self.state
            comparable = dataclasses.replace(snapshot, next_retry_in=None)
            if comparable == self._last_emitted:
                return
            self._last_emitted = comparable
            self._state_bus.publish(snapshot)
            self.engine.bus.publish(snapshot)

    def _on_event(self, event: Event) -> None:
        """Engine bus subscriber: must never raise (the bus drops failing subscribers)."""
        try:
            if isinstance(event, SearchTimed):
                self.notify_search()
            elif isinstance(event, FileError):
                with self._cond:
                    self._errors.append(event.line)
        except Exception:  # pragma: no cover - defensive
            pass

    # -- scheduler ------------------------------------------------------------------
    def _startup_reason(self) -> str | None:
        engine = self.engine
        try:
            engine.refresh_store()
            if engine.store.get_meta("fingerprint") is None:
                return "missing"
            if self.sync_settings.on_session_start:
                return "start"
            if engine.needs_full_reindex():
                return "reindex"
        except Exception as exc:
            with self._cond:
                self._errors.append(f"start-up check failed: {type(exc).__name__}: {exc}")
            return "start"
        return None

    def _request_if_missing(self) -> None:
        """Queue a sync when the index file vanished (no retry already pending)."""
        sched = self._schedule
        if (
            sched.retry_at is None
            and "missing" not in sched.requests
            and getattr(self.engine, "pg", None) is None  # PostgreSQL: no file to miss
            and not os.path.exists(self.engine.index_path)
        ):
            sched.request("missing")

    def _scheduler_loop(self) -> None:
        # Changes made before the watcher is armed have no event: wait for it (briefly)
        # so the start-up sync's scan comes after the arming and misses nothing.
        self._armed.wait(max(3.0, 3 * self.poll_interval))
        reason = self._startup_reason()
        with self._cond:
            if reason is not None:
                self._schedule.request(reason, first=True)
            self._starting = False
            self._cond.notify_all()
        while True:
            with self._cond:
                # Wake at least every poll interval to notice a deleted index file.
                job = wait_for_job(
                    self._schedule,
                    self._cond,
                    self._stop,
                    tick=self.poll_interval,
                    on_tick=self._request_if_missing,
                )
                if job is None:
                    return
                reason, force = job.reason, job.force
                self._running_reason = reason
                self._running_gen = self._gen
                # A run due only to watched files looks at just those files; anything
                # else (start-up, interval, a request, an unknown change) lists all.
                paths = (
                    sorted(self._changed)
                    if job.only_changes and not force and self._changed
                    else None
                )
                self._changed = set()  # changes from now on are the next run's
            self._emit()
            self._run(reason, force, paths)

    def _run(self, reason: str, force: bool, paths: list[Path] | None = None) -> None:
        done: SyncDone | None = None
        error: str | None = None
        cancelled = False
        try:
            done = self.engine.sync(reason=reason, force=force, cancel=self._cancel, paths=paths)
        except (SyncCancelled, LockWaitCancelled):
            cancelled = True
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        with self._cond:
            started_gen = self._running_gen
            self._running_reason = None
            self._running_gen = None
            if done is not None:
                self._syncs_done += 1
                self._last_done = done
                self._last_error = None
                self._backoff = self.retry_min
                self._dirty = self._gen != started_gen
            else:
                self._dirty = True
                self._changed = None  # what the failed run did not do is unknown
                if error is not None:
                    self._last_error = error
                    self._errors.append(f"sync ({reason}) failed: {error}")
                    if not self._stop.is_set():
                        self._schedule.retry(time.monotonic() + self._backoff, reason)
                        self._backoff = min(self._backoff * 2, RETRY_MAX_S)
            dirty = self._dirty
            self._cond.notify_all()
        if dirty or cancelled:
            self.engine.mark_dirty()
        self._emit()

    # -- watcher --------------------------------------------------------------------
    def _plan(self) -> WatchPlan:
        """The workspace's memory files, plus the qmd sidecar's collection folders when
        the engine has one: one watcher serves both indexes (a change there marks the
        engine dirty, which the engine forwards to qmd's own schedule)."""
        engine = self.engine
        qmd_trees: tuple[Path, ...] = ()
        transcripts = self.transcripts
        if engine.qmd is not None:
            qmd_trees = engine.qmd.watch_trees()
            transcripts = transcripts or engine.qmd.watch_transcripts()
        return build_watch_plan(
            engine.workspace, transcripts, media=engine.ms.multimodal.enabled, more_trees=qmd_trees
        )

    def _set_watch(self, watching: bool, dirs: int, error: str | None) -> None:
        with self._cond:
            changed = (self._watching, self._watched_dirs, self._watch_error) != (
                watching,
                dirs,
                error,
            )
            self._watching, self._watched_dirs, self._watch_error = watching, dirs, error
        if changed:
            self._emit()
