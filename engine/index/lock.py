"""The single-writer lock of an index file.

``flock`` on ``<index>.lock``. The kernel releases it when the holder's file
descriptor goes away, which includes a crash or ``kill -9``: a lock can never
be left stale, so "stale-lock recovery" is simply that the next writer gets it
at once. The holder's pid is written into the file only to name it in the
"locked" error, and a clean release empties the file again: a pid found in
it by the next holder means the previous holder died while writing (a
``kill -9``, a crash, a power cut), which is the moment the index's integrity
is worth checking (``LockGrant.died_holding``). Readers never take this lock;
WAL lets them read while the writer writes.

flock (not ``fcntl`` record locks) because it belongs to the open file
description: two threads of one process that each open the lock file exclude
each other too, and closing an unrelated descriptor of the same file does not
drop the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


class IndexLocked(RuntimeError):
    """Another process (or thread) is writing this index."""


class LockWaitCancelled(RuntimeError):
    """Waiting for the writer lock was cancelled (the caller is shutting down)."""


@dataclass(frozen=True)
class LockGrant:
    """What the new holder found in the lock file."""

    #: the pid a previous holder left behind: it died holding the lock (a clean
    #: release empties the file), so its last write may not have finished
    died_holding: int | None = None


def lock_path(index_path: Path) -> Path:
    return Path(str(index_path) + ".lock")


def lock_holder(index_path: Path) -> int | None:
    """The pid recorded by the current holder, or None (unlocked, or unknown)."""
    try:
        text = lock_path(index_path).read_text(errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@contextlib.contextmanager
def writer_lock(
    index_path: Path,
    timeout: float = 30.0,
    poll: float = 0.05,
    cancel: threading.Event | None = None,
) -> Iterator[LockGrant]:
    """Hold the index's writer lock; wait up to ``timeout`` seconds for it.

    Raises ``IndexLocked`` after ``timeout`` (0 means: only try once) and
    ``LockWaitCancelled`` as soon as ``cancel`` is set while waiting, so a
    shutting-down service never hangs behind another process's long reindex.
    """
    path = lock_path(index_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if cancel is not None and cancel.is_set():
                    raise LockWaitCancelled("cancelled while waiting for the writer lock") from None
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                    raise IndexLocked(
                        f"{index_path.name} is being written by another memdeck (pid {holder})"
                    ) from None
                if cancel is not None:
                    cancel.wait(poll)
                else:
                    time.sleep(poll)
        left = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield LockGrant(died_holding=int(left) if left.isdigit() else None)
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
