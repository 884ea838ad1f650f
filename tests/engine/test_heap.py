"""``engine.index.heap``: freed heap pages go back to the OS after a large build."""

from __future__ import annotations

import sys

from engine.index import heap


def test_gives_back_free_memory_on_glibc() -> None:
    asked = heap.give_back_free_memory()
    assert asked == (sys.platform.startswith("linux") and heap._libc() is not None)
    if sys.platform.startswith("linux"):
        assert asked  # this machine's glibc has malloc_trim
