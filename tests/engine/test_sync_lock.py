"""The single-writer lock: exclusion, timeouts, cancellation, recovery after kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.index.lock import IndexLocked, LockWaitCancelled, lock_holder, writer_lock
from tests.integration.sync_support import wait_until

HOLD = """
import sys, time
from pathlib import Path
from engine.index.lock import writer_lock
with writer_lock(Path(sys.argv[1]), timeout=5):
    print("locked", flush=True)
    time.sleep(600)
"""


def test_lock_excludes_other_holders_and_names_the_holder(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    with writer_lock(index):
        assert lock_holder(index) == os.getpid()
        locked = pytest.raises(IndexLocked, match=r"i\.sqlite is being written .*pid \d+")
        with locked, writer_lock(index, timeout=0):
            pass
    assert lock_holder(index) is None  # released and cleared
    with writer_lock(index, timeout=0):
        pass


def test_threads_take_turns(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    inside = 0
    overlaps: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside
        for _ in range(20):
            with writer_lock(index, timeout=30, poll=0.001):
                with lock:
                    inside += 1
                    overlaps.append(inside)
                with lock:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(overlaps) == 80 and max(overlaps) == 1


def test_waiting_can_be_cancelled(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    cancel = threading.Event()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            with writer_lock(index, timeout=600, cancel=cancel):
                pass
        except BaseException as exc:
            errors.append(exc)

    with writer_lock(index):
        t = threading.Thread(target=wait)
        t.start()
        cancel.set()
        t.join(30)
        assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], LockWaitCancelled)


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(index)], stdout=subprocess.PIPE, text=True, cwd=repo
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        assert lock_holder(index) == proc.pid
        with pytest.raises(IndexLocked, match=str(proc.pid)), writer_lock(index, timeout=0.2):
            pass
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # The kernel dropped the flock with the process; the pid text is left over
        # in the file but means nothing.
        wait_until(lambda: _try_lock(index), timeout=10, what="lock free after kill -9")
    finally:
        proc.kill()
        proc.wait()


def _try_lock(index: Path) -> bool:
    try:
        with writer_lock(index, timeout=0):
            return True
    except IndexLocked:
        return False
