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

Directories are watched one by one, non-recursively, from a plan rebuilt
whenever a directory appears or vanishes. That is how symlinked directories
and ignored trees (``.git``, ``node_modules``…) are never watched — a recursive
OS watch would descend into both — and how the watcher survives ``memory/``
being created after start, deleted, or renamed. A cheap poll of the few anchor
paths (workspace root, ``memory/``, extraPaths, transcripts folder) catches
what no event can report, such as the workspace root itself appearing.

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
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import watchfiles

from engine.config.paths import sessions_dir
from engine.events import Event, EventBus, FileError, SearchTimed, SyncDone, SyncStatus
from engine.index.indexer import SyncCancelled
from engine.index.lock import LockWaitCancelled
from engine.workspace.files import IGNORED_DIRS, MEMORY_DIR, ROOT_MEMORY_FILES, Workspace

if TYPE_CHECKING:
    from engine.core import Engine  # drives an Engine; core never imports this module

DEBOUNCE_S = 1.5
MAX_WAIT_S = 10.0
POLL_S = 1.0
RETRY_MIN_S = 5.0
RETRY_MAX_S = 300.0
#: watchfiles' own batching, kept short: the real debounce is ours (quiet-period based).
_RAW_DEBOUNCE_MS = 200
_RAW_STEP_MS = 30
#: How often the watch loop returns to Python without changes (stop, plan checks).
_TICK_MS = 200
_MEDIA_SUFFIXES = frozenset(
    [
        ".jpg",
        ".jpeg",
        ".png",
        ".webp",
        ".gif",
        ".heic",
        ".heif",
        ".mp3",
        ".wav",
        ".ogg",
        ".opus",
        ".m4a",
        ".aac",
        ".flac",
    ]
)

#: The service's state snapshot is the ``SyncStatus`` event it publishes.
SyncServiceState = SyncStatus
StateListener = Callable[[SyncServiceState], None]


# -- the watch plan ---------------------------------------------------------------
def _lstat_kind(path: Path) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode))


def _real_dirs(top: Path) -> list[Path]:
    """``top`` and every directory below it, never through a symlink or an ignored dir."""
    out: list[Path] = []
    for dirpath, dirnames, _ in os.walk(top, followlinks=False):
        out.append(Path(dirpath))
        dirnames[:] = [
            d for d in dirnames if d not in IGNORED_DIRS and _lstat_kind(Path(dirpath) / d) == "dir"
        ]
    return out


def _no_symlink_between(path: Path, top: Path) -> bool:
    """True when neither ``path`` nor a parent of it below ``top`` is a symlink."""
    if _lstat_kind(path) == "link":
        return False
    for parent in path.parents:
        if parent == top or not parent.is_relative_to(top):
            break
        if _lstat_kind(parent) == "link":
            return False
    return True


@dataclass(frozen=True)
class WatchPlan:
    """The directories to watch and how to tell which of their changes matter."""

    dirs: frozenset[Path]  # watched non-recursively
    trees: tuple[Path, ...]  # memory/ and extra dirs: matching files anywhere below count
    files: frozenset[Path]  # single files that count (MEMORY.md, memory.md, extra files)
    roots: frozenset[Path]  # paths whose appearance/disappearance changes the plan
    sessions: Path | None  # transcripts folder (``*.jsonl``), when session memory is on
    media: bool  # multimodal: media files in extra dirs count too
    signature: tuple[object, ...]

    def classify(self, change: watchfiles.Change, path: str) -> tuple[bool, bool]:
        """(does this change affect the index?, must the plan be rebuilt?)."""
        p = Path(path)
        if p in self.dirs:
            moved = change != watchfiles.Change.modified
            return moved, moved
        if p in self.files:
            return True, False
        if p in self.roots:
            return True, True
        parent = p.parent
        if parent not in self.dirs:
            return False, False
        name = p.name
        if self.sessions is not None and parent == self.sessions:
            return name.endswith(".jsonl"), False
        tree = next((t for t in self.trees if parent == t or parent.is_relative_to(t)), None)
        if tree is None or name in IGNORED_DIRS:
            return False, False
        kind = _lstat_kind(p)
        if kind == "link":
            return False, False
        if kind == "dir":
            return True, True
        lower = name.lower()
        if lower.endswith(".md"):
            return True, False
        if self.media and tree != self.trees[0] and Path(lower).suffix in _MEDIA_SUFFIXES:
            return True, False
        return False, False


def _anchors(workspace: Workspace, transcripts: Path | None) -> list[Path]:
    anchors = [workspace.root, workspace.root / MEMORY_DIR, *workspace.extra_paths]
    if transcripts is not None:
        anchors.append(transcripts)
    return anchors


def plan_signature(workspace: Workspace, transcripts: Path | None) -> tuple[object, ...]:
    """Identity (device, inode, type) of each anchor path: changes when one appears,
    vanishes or is replaced, which no event from inside it can tell us."""
    return tuple(_identity(p) for p in _anchors(workspace, transcripts))


def build_watch_plan(
    workspace: Workspace, transcripts: Path | None = None, *, media: bool = False
) -> WatchPlan:
    """Which directories to watch right now, given what exists on disk."""
    signature = plan_signature(workspace, transcripts)
    root = workspace.root
    dirs: set[Path] = set()
    trees: list[Path] = []
    files: set[Path] = {root / name for name in ROOT_MEMORY_FILES}
    roots: set[Path] = {root / MEMORY_DIR}
    if _lstat_kind(root) == "dir":
        dirs.add(root)
    mem = root / MEMORY_DIR
    trees.append(mem)
    if _lstat_kind(mem) == "dir":
        dirs.update(_real_dirs(mem))
    for extra in workspace.extra_paths:
        roots.add(extra)
        kind = _lstat_kind(extra)
        if kind is None or not _no_symlink_between(extra, root):
            continue
        if kind == "dir":
            trees.append(extra)
            dirs.update(_real_dirs(extra))
        elif kind == "file":
            files.add(extra)
            if _lstat_kind(extra.parent) == "dir":
                dirs.add(extra.parent)
    if transcripts is not None and _lstat_kind(transcripts) == "dir":
        dirs.add(transcripts)
        roots.add(transcripts)
    return WatchPlan(
        dirs=frozenset(dirs),
        trees=tuple(trees),
        files=frozenset(files),
        roots=frozenset(roots),
        sessions=transcripts,
        media=media,
        signature=signature,
    )


# -- the service ------------------------------------------------------------------
@dataclass
class _Pending:
    requests: dict[str, None] = field(default_factory=dict)  # ordered set of reasons
    force: bool = False
    watch_first: float | None = None
    watch_last: float | None = None
    retry_at: float | None = None
    retry_reason: str = "retry"
    next_interval: float | None = None


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
        self._pending = _Pending()
        self._gen = 0  # bumped on every relevant file change
        self._running_gen: int | None = None
        self._running_reason: str | None = None
        self._backoff = retry_min
        self._syncs_done = 0
        self._last_done: SyncDone | None = None
        self._last_error: str | None = None
        self._dirty = True
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
            if interval and interval > 0:
                self._pending.next_interval = time.monotonic() + interval * 60
        self._threads = [
            threading.Thread(target=self._scheduler_loop, name="memdeck-sync", daemon=True)
        ]
        if self.sync_settings.watch:
            self._threads.append(
                threading.Thread(target=self._watch_loop, name="memdeck-watch", daemon=True)
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
            self._pending.requests[reason] = None
            self._pending.force = self._pending.force or force
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
            if self._pending.requests:
                return
        self.request_sync("search")

    def notify_change(self) -> None:
        """A watched file changed: mark dirty and (re)start the debounce clock."""
        now = time.monotonic()
        with self._cond:
            self._gen += 1
            was_quiet = not self._dirty or self._pending.watch_first is None
            self._dirty = True
            if self._pending.watch_first is None:
                self._pending.watch_first = now
            self._pending.watch_last = now
            self._cond.notify_all()
        self.engine.mark_dirty()
        if was_quiet:
            self._emit()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until nothing is running or pending (tests, benchmarks, the CLI)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                p = self._pending
                busy = (
                    self._starting
                    or self._running_reason is not None
                    or bool(p.requests)
                    or p.watch_first is not None
                    or p.retry_at is not None
                )
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
            retry = self._pending.retry_at
            return SyncServiceState(
                started=bool(self._threads),
                running=self._running_reason is not None,
                running_reason=self._running_reason,
                queued=tuple(self._pending.requests),
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
                    self._errors.append(f"{event.path}: {event.error}")
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

    def _take_job(self, now: float) -> tuple[tuple[str, bool] | None, float | None]:
        """The sync to run now (reason, force) and, if none, how long to sleep."""
        p = self._pending
        due: list[str] = list(p.requests)
        if p.retry_at is not None and p.retry_at <= now:
            due.append(p.retry_reason)
        watch_due = None
        if p.watch_first is not None and p.watch_last is not None:
            watch_due = min(p.watch_last + self.debounce, p.watch_first + self.max_wait)
            if watch_due <= now:
                due.append("watch")
        interval = self.sync_settings.interval_minutes
        if p.next_interval is not None and p.next_interval <= now:
            due.append("interval")
        if not due:
            times = [t for t in (p.retry_at, watch_due, p.next_interval) if t is not None]
            return None, (max(0.0, min(times) - now) if times else None)
        # One sync covers everything pending: it rescans the files after it starts.
        job = (due[0], p.force)
        p.requests.clear()
        p.force = False
        p.retry_at = None
        p.watch_first = p.watch_last = None
        if p.next_interval is not None and p.next_interval <= now:
            p.next_interval = now + interval * 60
        return job, None

    def _index_missing(self) -> bool:
        return not os.path.exists(self.engine.index_path)

    def _scheduler_loop(self) -> None:
        # Changes made before the watcher is armed have no event: wait for it (briefly)
        # so the start-up sync's scan comes after the arming and misses nothing.
        self._armed.wait(max(3.0, 3 * self.poll_interval))
        reason = self._startup_reason()
        with self._cond:
            if reason is not None:
                self._pending.requests = {reason: None, **self._pending.requests}
            self._starting = False
            self._cond.notify_all()
        while True:
            with self._cond:
                while True:
                    if self._stop.is_set():
                        return
                    job, wait = self._take_job(time.monotonic())
                    if job is not None:
                        break
                    # Wake at least every poll interval to notice a deleted index file.
                    tick = self.poll_interval if wait is None else min(wait, self.poll_interval)
                    self._cond.wait(tick)
                    p = self._pending
                    if p.retry_at is None and "missing" not in p.requests and self._index_missing():
                        p.requests["missing"] = None
                reason, force = job
                self._running_reason = reason
                self._running_gen = self._gen
            self._emit()
            self._run(reason, force)

    def _run(self, reason: str, force: bool) -> None:
        done: SyncDone | None = None
        error: str | None = None
        cancelled = False
        try:
            done = self.engine.sync(reason=reason, force=force, cancel=self._cancel)
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
                if error is not None:
                    self._last_error = error
                    self._errors.append(f"sync ({reason}) failed: {error}")
                    if not self._stop.is_set():
                        self._pending.retry_at = time.monotonic() + self._backoff
                        self._pending.retry_reason = reason
                        self._backoff = min(self._backoff * 2, RETRY_MAX_S)
            dirty = self._dirty
            self._cond.notify_all()
        if dirty or cancelled:
            self.engine.mark_dirty()
        self._emit()

    # -- watcher --------------------------------------------------------------------
    def _plan(self) -> WatchPlan:
        ms = self.engine.ms
        return build_watch_plan(
            self.engine.workspace, self.transcripts, media=ms.multimodal.enabled
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

    def _watch_loop(self) -> None:
        first = True
        polling = self.force_polling
        try:
            while not self._stop.is_set():
                try:
                    plan = self._plan()
                except OSError as exc:
                    self._set_watch(False, 0, f"cannot list watched folders: {exc}")
                    self._stop.wait(self.poll_interval)
                    continue
                if not first:
                    # Changes between the old watcher's end and the new one's start have
                    # no event: the sync this schedules (after the debounce, by which
                    # time the new watcher is armed) rescans them.
                    self.notify_change()
                first = False
                if not plan.dirs:
                    self._set_watch(False, 0, None)
                    self._armed.set()  # nothing exists to watch yet; the poll covers it
                    self._wait_for_signature_change(plan)
                    continue
                error: str | None = None
                try:
                    self._set_watch(True, len(plan.dirs), None)
                    self._watch(plan, polling)
                except FileNotFoundError:
                    pass  # a folder vanished between planning and watching: plan again
                except Exception as exc:  # inotify limits, permissions, backend errors
                    error = f"{type(exc).__name__}: {exc}"
                    if not polling:
                        polling = True
                        error += " (falling back to polling)"
                    self._set_watch(False, 0, error)
                    self._stop.wait(self.poll_interval)
        finally:
            self._armed.set()
            self._set_watch(False, 0, self._watch_error)

    def _wait_for_signature_change(self, plan: WatchPlan) -> None:
        while not self._stop.wait(self.poll_interval):
            if plan_signature(self.engine.workspace, self.transcripts) != plan.signature:
                return

    def _watch(self, plan: WatchPlan, polling: bool | None) -> None:
        next_check = time.monotonic() + self.poll_interval
        for changes in watchfiles.watch(
            *sorted(plan.dirs),
            watch_filter=None,
            debounce=_RAW_DEBOUNCE_MS,
            step=_RAW_STEP_MS,
            stop_event=self._stop,
            rust_timeout=_TICK_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            recursive=False,
            force_polling=polling,
            ignore_permission_denied=True,
        ):
            self._armed.set()  # the first yield comes after the OS watches are in place
            relevant, replan = _classify_all(plan, changes)
            if relevant:
                self.notify_change()
            if replan or self._stop.is_set():
                return
            now = time.monotonic()
            if now >= next_check:
                next_check = now + self.poll_interval
                if plan_signature(self.engine.workspace, self.transcripts) != plan.signature:
                    return


def _classify_all(
    plan: WatchPlan, changes: Iterable[tuple[watchfiles.Change, str]]
) -> tuple[bool, bool]:
    relevant = replan = False
    for change, path in changes:
        r, p = plan.classify(change, path)
        relevant = relevant or r
        replan = replan or p
    return relevant, replan
