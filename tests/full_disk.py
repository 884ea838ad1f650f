"""A really full disk for tests: a small tmpfs mounted for the test, filled to ENOSPC.

Mounting needs the right to mount (root, or a user namespace); where it is not
permitted the test is skipped, saying so.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(mount: Path, size: str = "8m") -> Iterator[Path]:
    """A ``size`` tmpfs mounted on ``mount`` (created) for the block.

    8 MiB: a new index's ~30 tables and indexes take a 16 KB page each (~0.5 MB
    empty), and its first index holds the rebuilt file and the WAL of its copy
    beside it; the tests fill whatever is left to the last byte."""
    mount.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> None:
    """Write until the filesystem says ENOSPC."""
    with open(folder / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError as exc:
            assert exc.errno == 28  # ENOSPC: the disk is really full
