"""Keeping the cyclic garbage collector's full collections out of keystrokes.

Once the app's first status and tree are shown, everything alive then (the
index's structures, the tree, Textual's widgets) is frozen out of the collector
(``gc.freeze``). What is made later (search outcomes, renderables, Textual's
caches) still reaches the oldest generation, and a full collection of it took
about 30 ms, inside a keystroke each time it came (a profile of typing: 6 of
207 keystrokes at 120×40, among the slowest 5 %).

``HeapKeeper`` moves those full collections to the moments nobody types: after
``settle`` the automatic ones are off (a generation-2 threshold no count
reaches) and ``tick`` (called by an app timer) runs a full collection when one
is due, as the collector counts it, and no input came for ``idle_s``. A user
who never pauses still gets one at ``overdue`` times the usual count, so
garbage cycles never pile up without bound. Younger generations are collected
as before. ``release`` puts the thresholds back and unfreezes (the app's
shutdown: tests run many apps in one process).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

#: a generation-2 threshold the collector's count of generation-1 collections never reaches
_NEVER = 1 << 30


class HeapKeeper:
    def __init__(
        self,
        *,
        idle_s: float = 1.0,
        overdue: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_s = idle_s
        self.overdue = overdue
        self._clock = clock
        self._last_input = clock()
        self._thresholds: tuple[int, int, int] | None = None
        #: full collections run by ``tick`` (idle and overdue)
        self.collections = 0

    @property
    def settled(self) -> bool:
        return self._thresholds is not None

    def settle(self) -> None:
        """Freeze what is alive now and take full collections off the automatic cadence."""
        if self._thresholds is not None:
            return
        t0, t1, t2 = gc.get_threshold()
        self._thresholds = (t0, t1, t2)
        gc.freeze()
        gc.set_threshold(t0, t1, _NEVER)

    def input_seen(self) -> None:
        """A key or mouse event: the user is busy, a full collection waits."""
        self._last_input = self._clock()

    def due(self) -> bool:
        """As many generation-1 collections since the last full one as the usual
        threshold asks for (the collector's own count)."""
        return self._thresholds is not None and gc.get_count()[2] >= self._thresholds[2]

    def tick(self) -> bool:
        """Run a full collection if one is due and the user is idle (or it is overdue)."""
        if self._thresholds is None or not self.due():
            return False
        idle = self._clock() - self._last_input >= self.idle_s
        if not idle and gc.get_count()[2] < self._thresholds[2] * self.overdue:
            return False
        gc.collect()
        self.collections += 1
        return True

    def release(self) -> None:
        """The collector's usual thresholds back, and what was frozen collectable again."""
        if self._thresholds is None:
            return
        gc.set_threshold(*self._thresholds)
        self._thresholds = None
        gc.unfreeze()
