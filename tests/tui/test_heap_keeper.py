"""HeapKeeper: full garbage collections wait for a pause in the input."""

from __future__ import annotations

import gc

from tui.heap import HeapKeeper


def test_full_collections_wait_for_idle_and_thresholds_come_back() -> None:
    before = gc.get_threshold()
    now = [100.0]
    keeper = HeapKeeper(idle_s=1.0, overdue=1000, clock=lambda: now[0])
    keeper.settle()
    try:
        assert gc.get_threshold()[2] > 10_000  # no automatic full collection
        assert gc.get_freeze_count() > 0
        while not keeper.due():
            gc.collect(1)  # what the collector does as objects are made
        keeper.input_seen()
        now[0] += 0.5
        assert not keeper.tick()  # the user is typing
        now[0] += 1.0
        assert keeper.tick()  # idle: collected, and not due any more
        assert keeper.collections == 1 and not keeper.due()
    finally:
        keeper.release()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert not keeper.settled


def test_an_overdue_collection_runs_while_typing() -> None:
    keeper = HeapKeeper(idle_s=1.0, overdue=2, clock=lambda: 0.0)
    keeper.settle()
    try:
        threshold = gc.get_threshold()
        assert threshold[2] > 10_000
        while gc.get_count()[2] < 20:  # twice the usual threshold of 10
            gc.collect(1)
        keeper.input_seen()
        assert keeper.tick()
    finally:
        keeper.release()
