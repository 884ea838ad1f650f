"""An unreadable file or folder is named in the sync's errors, each one.

Tests run as root, which reads everything, so the refusal is the kernel's answer
written into the one system call memdeck makes for that path (``os.open`` of
the file, ``os.scandir`` of the folder); everything around it is real.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.engine_fixtures import write


def test_every_unreadable_item_is_named(make_engine, workspace_dir: Path, monkeypatch) -> None:
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- fine\n")
    write(workspace_dir, "memory/2026-01-01.md", "- readable\n")
    locked_file = write(workspace_dir, "memory/2026-01-02.md", "- locked\n")
    locked_dir = workspace_dir / "memory" / "private"
    write(workspace_dir, "memory/private/n.md", "- hidden\n")
    real_open, real_scandir = os.open, os.scandir

    def guarded_open(path, *args, **kwargs):
        if str(path).endswith("2026-01-02.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    def guarded_scandir(path="."):
        if str(path) == str(locked_dir):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(os, "scandir", guarded_scandir)
    engine = make_engine(provider=None)
    done = engine.sync()
    assert "memory/2026-01-02.md: cannot read (Permission denied)" in done.errors
    assert "memory/private/: cannot list the folder (Permission denied)" in done.errors
    assert locked_file.exists() and done.files_indexed == 2


@pytest.mark.parametrize("n", [2])
def test_two_unreadable_files_are_two_errors(make_engine, workspace_dir: Path, monkeypatch, n):
    for i in range(n):
        write(workspace_dir, f"memory/locked-{i}.md", "- locked\n")
    real_open = os.open

    def guarded_open(path, *args, **kwargs):
        if "locked-" in str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    done = make_engine(provider=None).sync()
    assert sorted(done.errors) == [
        f"memory/locked-{i}.md: cannot read (Permission denied)" for i in range(n)
    ]


@pytest.fixture
def read_only_folder(tmp_path: Path):
    """A real read-only file system: a read-only bind mount (skipped where the
    machine does not allow mounting)."""
    import subprocess

    src, mnt = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    mnt.mkdir()
    if subprocess.run(["mount", "--bind", str(src), str(mnt)], capture_output=True).returncode:
        pytest.skip("mount --bind is not allowed here")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mnt)], check=True)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.subprocess
def test_a_read_only_state_folder_names_the_remedy(read_only_folder: Path, workspace_dir: Path):
    from tests.cli_process import cli_env, run_cli

    write(workspace_dir, "MEMORY.md", "# Memory\n")
    env = {
        **cli_env(read_only_folder / "state"),
        "OPENCLAW_STATE_DIR": str(read_only_folder / "state"),
    }
    out = run_cli("index", "-w", str(workspace_dir), env=env)
    assert out.returncode != 0
    assert "Read-only file system" in out.stderr and "OPENCLAW_STATE_DIR" in out.stderr
    assert "Errno" not in out.stderr
    # reading needs no state folder at all
    assert run_cli("status", "-w", str(workspace_dir), env=env).returncode == 0
