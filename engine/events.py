"""Plain dataclass events the engine publishes and any client may consume.

Workers call ``EventBus.publish`` from any thread; subscribers are called on
that thread and must hand the event over to their own loop (the TUI wraps them
in Textual messages; the CLI draws a progress bar).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SyncStarted:
    reason: str  # "start", "watch", "search", "interval", "manual", "reindex"
    full: bool
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class SyncProgress:
    phase: str  # "scan", "chunk", "embed", "write", "swap"
    files_done: int
    files_total: int
    chunks_embedded: int = 0
    chunks_total: int = 0
    cache_hits: int = 0
    rate: float = 0.0  # chunks per second while embedding
    eta_seconds: float | None = None
    requests: int = 0  # embedding HTTP requests sent so far in this sync (remote providers)
    retries: int = 0  # of which retries (429, 5xx, timeouts)
    #: KB of the files written so far over the seconds since the sync started (0 before
    #: the first file is written)
    kb_per_s: float = 0.0


@dataclass(frozen=True)
class SyncDone:
    reason: str
    full: bool
    files_indexed: int
    files_removed: int
    chunks_embedded: int
    cache_hits: int
    duration: float
    errors: tuple[str, ...] = ()
    at: float = field(default_factory=time.time)
    #: False when the sync looked only at the files the watcher reported changed
    #: instead of listing the workspace (``Engine.sync(paths=...)``)
    listed: bool = True
    #: bytes of the files indexed (read, chunked and written) by this sync
    bytes_indexed: int = 0

    @property
    def kb_per_s(self) -> float:
        """KB of the files indexed per second of the sync (0 when nothing was)."""
        return self.bytes_indexed / 1024 / self.duration if self.duration > 0 else 0.0

    @property
    def chunks_per_s(self) -> float:
        """Chunks embedded per second of the sync."""
        return self.chunks_embedded / self.duration if self.duration > 0 else 0.0


@dataclass(frozen=True)
class SyncFailed:
    reason: str
    error: str
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class FileError:
    path: str
    error: str  # the indexer's message, which usually starts with the path

    @property
    def reason(self) -> str:
        """The message without the path it starts with (for a line that shows the path)."""
        return file_error_reason(self.path, self.error)

    @property
    def line(self) -> str:
        """``path: reason``, the path once."""
        return f"{self.path}: {self.reason}"


def file_error_reason(path: str, error: str) -> str:
    """An indexer message about ``path`` without the path it starts with."""
    return error.removeprefix(f"{path}: ")


@dataclass(frozen=True)
class SearchTimed:
    query: str
    mode: str
    duration_ms: float


@dataclass(frozen=True)
class SyncStatus:
    """The background sync service's state, published whenever it changes.

    What a status pane shows between progress events: is a sync running or
    queued, is the index dirty, is the watcher up, when did the last sync end.
    """

    started: bool = False
    running: bool = False
    running_reason: str | None = None
    queued: tuple[str, ...] = ()  # reasons of requests waiting for the next sync
    dirty: bool = True  # files changed since the last successful sync (or never synced)
    watching: bool = False
    watched_dirs: int = 0
    watch_error: str | None = None
    syncs_done: int = 0
    last_done: SyncDone | None = None  # ``last_done.at`` is the last sync time
    last_error: str | None = None
    next_retry_in: float | None = None
    errors: tuple[str, ...] = ()  # recent file and sync errors, newest last
    disabled: str | None = None  # why the service does nothing, if it does nothing


Event = SyncStarted | SyncProgress | SyncDone | SyncFailed | FileError | SearchTimed | SyncStatus
Subscriber = Callable[[Event], None]


class EventBus:
    """Thread-safe fan-out of events to subscribers; a failing subscriber is dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subscribers:
                    self._subscribers.remove(fn)

        return unsubscribe

    def publish(self, event: Event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(event)
            except Exception:
                with self._lock:
                    if fn in self._subscribers:
                        self._subscribers.remove(fn)
