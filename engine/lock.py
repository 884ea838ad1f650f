"""The single-writer lock of an index file.

``flock`` on ``<index>.lock``: the kernel drops it when the holder dies, so a
crashed or killed writer never leaves a stale lock behind. Readers never take
it; WAL lets them read while the writer writes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path


class IndexLocked(RuntimeError):
    """Another process is writing this index."""


@contextlib.contextmanager
def writer_lock(index_path: Path, timeout: float = 30.0, poll: float = 0.05) -> Iterator[None]:
    """Hold the index's writer lock; wait up to ``timeout`` seconds for it."""
    lock_path = Path(str(index_path) + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                    raise IndexLocked(
                        f"{index_path.name} is being written by another memdeck (pid {holder})"
                    ) from None
                time.sleep(poll)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
