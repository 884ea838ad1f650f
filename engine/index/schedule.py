"""When a background refresh is due: the one schedule both indexes use.

The builtin index's :class:`~engine.index.sync_service.SyncService` and the qmd
sidecar (:class:`~engine.qmd.backend.QmdBackend`) both turn a stream of
triggers — file changes, explicit requests, a retry after a failure, a fixed
interval — into as few runs as possible. This module is that logic, and only
that: no clock of its own (every method takes ``now``), so each owner runs it
under its own lock and the rules are tested once; :func:`wait_for_job` is the
one waiting loop both owners run on their scheduler thread.

The rules:

* a file change starts a quiet period: the run is due ``debounce`` seconds after
  the *last* change, but never later than ``max_wait`` after the *first* one, so
  a steady stream of writes still gets indexed;
* a request (``"manual"``, ``"search"``, ``"boot"``…) is due at once; requests
  that arrive while a run is going are merged into one follow-up run;
* a failed run may be retried at a given time;
* with an interval, a run is due every ``interval`` seconds;
* one run covers everything pending, since it rescans the files after it starts.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Job:
    """A run to start now: why (the first due reason) and whether it must be full."""

    reason: str
    force: bool
    #: due only because watched files changed (no request, retry or interval
    #: merged in): the files the watcher reported are then all that changed
    only_changes: bool = False


@dataclass
class RefreshSchedule:
    """Pending triggers and the rules above. Not thread-safe: the owner locks it."""

    debounce: float
    max_wait: float = math.inf
    interval: float | None = None  # seconds; None or <= 0: no interval runs
    change_reason: str = "watch"  # the reason a file-change run reports
    requests: dict[str, None] = field(default_factory=dict)  # an ordered set of reasons
    force: bool = False
    change_first: float | None = None
    change_last: float | None = None
    retry_at: float | None = None
    retry_reason: str = "retry"
    next_interval: float | None = None

    def __post_init__(self) -> None:
        self.max_wait = max(self.max_wait, self.debounce)

    def start_interval(self, now: float) -> None:
        """Arm the interval clock (the first interval run is one interval from now)."""
        if self.interval is not None and self.interval > 0:
            self.next_interval = now + self.interval

    def request(self, reason: str, *, force: bool = False, first: bool = False) -> None:
        """A run wanted as soon as possible; ``first`` puts its reason ahead of others."""
        if first:
            self.requests = {reason: None, **self.requests}
        else:
            self.requests[reason] = None
        self.force = self.force or force

    def note_change(self, now: float) -> bool:
        """A watched file changed; True when this starts a new quiet period."""
        new = self.change_first is None
        if new:
            self.change_first = now
        self.change_last = now
        return new

    def retry(self, at: float, reason: str) -> None:
        self.retry_at = at
        self.retry_reason = reason

    @property
    def pending(self) -> bool:
        """Anything waiting besides the interval clock (a request, a change, a retry)."""
        return bool(self.requests) or self.change_first is not None or self.retry_at is not None

    def change_due(self) -> float | None:
        if self.change_first is None or self.change_last is None:
            return None
        return min(self.change_last + self.debounce, self.change_first + self.max_wait)

    def take(self, now: float) -> tuple[Job | None, float | None]:
        """The run to start now and, when there is none, how long until one is due
        (``None``: nothing is scheduled). Taking a run clears what it covers."""
        due: list[str] = list(self.requests)
        if self.retry_at is not None and self.retry_at <= now:
            due.append(self.retry_reason)
        change_due = self.change_due()
        if change_due is not None and change_due <= now:
            due.append(self.change_reason)
        interval_due = self.next_interval is not None and self.next_interval <= now
        if interval_due:
            due.append("interval")
        if not due:
            times = [t for t in (self.retry_at, change_due, self.next_interval) if t is not None]
            return None, (max(0.0, min(times) - now) if times else None)
        job = Job(due[0], self.force, only_changes=due == [self.change_reason])
        self.requests.clear()
        self.force = False
        self.retry_at = None
        self.change_first = self.change_last = None
        if interval_due:
            self.start_interval(now)
        return job, None


def wait_for_job(
    schedule: RefreshSchedule,
    cond: threading.Condition,
    stop: threading.Event,
    *,
    tick: float | None = None,
    on_tick: Callable[[], None] | None = None,
) -> Job | None:
    """Block until ``schedule`` has a run due and take it; ``None`` once ``stop`` is set.

    The caller holds ``cond`` (whoever changes the schedule notifies it). With
    ``tick`` the wait never lasts longer, and ``on_tick`` runs (still holding
    ``cond``) after each wait, for conditions no trigger reports, such as an
    index file deleted behind the owner's back.
    """
    while not stop.is_set():
        job, wait = schedule.take(time.monotonic())
        if job is not None:
            return job
        if tick is not None:
            wait = tick if wait is None else min(wait, tick)
        cond.wait(wait)
        if on_tick is not None:
            on_tick()
    return None
