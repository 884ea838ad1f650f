"""Giving freed heap memory back to the operating system after a large build.

A cold index or postings rebuild allocates millions of small Python objects
(token lists, per-page postings segments); once freed, glibc keeps most of
those pages in the process (100k chunks: 207 MB of a 267 MB resident set after
the cold index). Large numpy arrays allocated later (the vector matrix, decoded
postings) are mapped afresh instead of reusing that heap, so a process that
indexes and then searches would hold both. ``malloc_trim`` returns the free
pages; elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from functools import cache
from typing import Any


@cache
def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def give_back_free_memory() -> bool:
    """Collect garbage and return the allocator's free pages to the OS; True if
    the allocator could be asked (glibc)."""
    gc.collect()
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
