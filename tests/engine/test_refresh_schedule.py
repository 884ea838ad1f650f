"""RefreshSchedule: the timing rules the sync service and the qmd sidecar share.

Pure: every call takes ``now``, so these tests step a clock by hand.
"""

from __future__ import annotations

import math

from engine.index.schedule import Job, RefreshSchedule


def test_a_change_is_due_after_a_quiet_debounce() -> None:
    s = RefreshSchedule(debounce=1.5)
    assert s.note_change(10.0) is True  # starts a quiet period
    assert s.take(10.0) == (None, 1.5)
    assert s.note_change(11.0) is False  # same period, the clock restarts
    assert s.take(12.0) == (None, 0.5)
    assert s.take(12.5) == (Job("watch", False, only_changes=True), None)
    assert not s.pending
    assert s.take(13.0) == (None, None)  # nothing scheduled at all


def test_a_stream_of_changes_is_capped_by_max_wait() -> None:
    s = RefreshSchedule(debounce=1.5, max_wait=10.0)
    for t in range(11):  # a change every second never leaves 1.5 s of quiet
        s.note_change(float(t))
    job, _ = s.take(10.0)
    assert job == Job("watch", False, only_changes=True)  # due 10 s after the first change


def test_max_wait_never_shortens_the_debounce() -> None:
    s = RefreshSchedule(debounce=15.0, max_wait=10.0)
    assert s.max_wait == 15.0
    assert RefreshSchedule(debounce=15.0).max_wait == math.inf


def test_requests_merge_and_keep_order_and_force() -> None:
    s = RefreshSchedule(debounce=1.5)
    s.request("search")
    s.request("manual", force=True)
    s.request("search")
    s.request("missing", first=True)
    s.note_change(0.0)
    assert s.take(0.0) == (Job("missing", True), None)  # one run covers all of them
    assert s.requests == {} and s.change_first is None and not s.force


def test_retry_and_interval() -> None:
    s = RefreshSchedule(debounce=1.5, interval=60.0, change_reason="change")
    s.start_interval(100.0)
    s.retry(130.0, "watch")
    assert s.take(120.0) == (None, 10.0)
    assert s.take(130.0) == (Job("watch", False), None)  # a retry, not a change
    assert s.take(131.0) == (None, 29.0)  # the interval clock was not reset by the retry
    assert s.take(160.0) == (Job("interval", False), None)
    assert s.next_interval == 220.0
    s.note_change(161.0)  # reported under the owner's name
    assert s.take(162.5) == (Job("change", False, only_changes=True), None)


def test_no_interval_when_off() -> None:
    for interval in (None, 0.0, -1.0):
        s = RefreshSchedule(debounce=1.0, interval=interval)
        s.start_interval(0.0)
        assert s.next_interval is None
        assert s.take(1e9) == (None, None)


def test_wait_for_job_returns_the_due_run_or_none_once_stopped() -> None:
    import threading

    from engine.index.schedule import wait_for_job

    cond, stop = threading.Condition(), threading.Event()
    s = RefreshSchedule(debounce=1.0)
    s.request("manual")
    with cond:
        assert wait_for_job(s, cond, stop) == Job("manual", False)
    ticks: list[int] = []

    def on_tick() -> None:  # what the sync service uses to notice a deleted index
        ticks.append(1)
        if len(ticks) == 3:
            s.request("missing")

    with cond:
        assert wait_for_job(s, cond, stop, tick=0.01, on_tick=on_tick) == Job("missing", False)
    assert len(ticks) == 3
    stop.set()
    s.request("manual")
    with cond:
        assert wait_for_job(s, cond, stop) is None  # stopping wins over pending work
