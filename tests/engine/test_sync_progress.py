"""Progress on a terminal: the ``ProgressPrinter`` and ``memdeck index --progress`` in a pty."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from engine.cli.progress_bar import ProgressPrinter
from engine.events import FileError, SyncDone, SyncProgress, SyncStarted
from tests.engine_fixtures import write

REPO = Path(__file__).resolve().parents[2]


def feed(printer: ProgressPrinter) -> None:
    printer(SyncStarted(reason="manual", full=True))
    printer(SyncProgress(phase="scan", files_done=0, files_total=4))
    printer(SyncProgress("embed", 1, 4, chunks_embedded=32, chunks_total=128, rate=64.0,
                         eta_seconds=1.5, cache_hits=10))  # fmt: skip
    printer(FileError(path="memory/bad.md", error="memory/bad.md: looks binary"))
    printer(SyncProgress(phase="write", files_done=4, files_total=4))
    printer(SyncDone("manual", True, 4, 0, 128, 10, 2.25))


def test_terminal_output_redraws_one_line() -> None:
    out = io.StringIO()
    feed(ProgressPrinter(out, width=10, min_interval=0, tty=True))
    text = out.getvalue()
    assert text.startswith("full reindex started (manual)\n")
    assert "\rscan   [----------]   0.0% 0/4 files" in text
    assert "\rembed  [##--------]  25.0% 32/128 chunks 64.0/s, 10 cached eta 2s" in text
    # A message line first overwrites the open progress line, then ends it.
    assert re.search(r"\rwarning: memory/bad\.md: looks binary +\n", text)
    assert "\rwrite  [##########] 100.0% 4/4 files" in text
    assert text.rstrip(" \n").endswith(
        "done in 2.2s: 4 files indexed, 0 removed, 128 chunks embedded, 10 cache hits"
    )


def test_pipe_output_is_one_line_per_update() -> None:
    out = io.StringIO()
    feed(ProgressPrinter(out, width=10, min_interval=0, tty=False))
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 6 and lines[1].startswith("scan   [") and lines[4].startswith("write  [")


def test_updates_are_throttled_but_each_phase_shows() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(out, min_interval=3600, tty=False)
    for i in range(50):
        printer(SyncProgress("embed", 0, 1, chunks_embedded=i, chunks_total=100))
    printer(SyncProgress(phase="write", files_done=1, files_total=1))
    assert [line.split()[0] for line in out.getvalue().splitlines()] == ["embed", "write"]


def test_memdeck_index_progress_draws_a_bar_on_a_terminal(
    workspace_dir: Path, state_dir: Path, tmp_path: Path
) -> None:
    for i in range(30):
        write(workspace_dir, f"memory/2026-01-{i % 28 + 1:02d}-{i}.md", f"entry {i} walrus\n" * 50)
    (workspace_dir / "memory" / "bad.md").write_bytes(b"\x00\x01binary")
    config = tmp_path / "openclaw.json"
    config.write_text(json.dumps({"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}))
    env = {**os.environ, "OPENCLAW_STATE_DIR": str(state_dir), "HOME": str(state_dir)}
    cmd = [sys.executable, "-m", "engine.cli.main", "index", "--progress", "--config", str(config),
           "--workspace", str(workspace_dir)]  # fmt: skip
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    text = b"".join(chunks).decode()
    assert "full reindex started (manual)" in text
    assert re.search(r"\r(scan|write) +\[[#-]{30}\] +\d+\.\d% \d+/31 files", text)
    assert re.search(r"\rwarning: memory/bad\.md: looks binary", text)
    assert re.search(r"\rswap +\[#{30}\] 100\.0% 30/30 files", text)
    # the binary file is recorded with its error, not indexed
    assert re.search(r"\rdone in \d+\.\ds: 30 files indexed, 0 removed", text)
    assert "30 files, 30 chunks (none)" in text  # the refused file is not counted as indexed


def test_memdeck_index_progress_with_json_keeps_stdout_json(
    workspace_dir: Path, state_dir: Path, tmp_path: Path
) -> None:
    """``--progress --json`` (either order): the progress lines on stderr, the JSON
    answer whole on stdout (progress was silently dropped with --json)."""
    for i in range(5):
        write(workspace_dir, f"memory/2026-01-{i + 1:02d}.md", f"entry {i} walrus\n" * 20)
    config = tmp_path / "openclaw.json"
    config.write_text(json.dumps({"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}))
    env = {**os.environ, "OPENCLAW_STATE_DIR": str(state_dir), "HOME": str(state_dir)}
    for flags in (["--progress", "--json"], ["--json", "--progress"]):
        cmd = [sys.executable, "-m", "engine.cli.main", "index", *flags, "--force",
               "--config", str(config), "--workspace", str(workspace_dir)]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["files_indexed"] == 5
        assert "full reindex started (manual)" in done.stderr
        assert re.search(r"done in \d+\.\ds: 5 files indexed", done.stderr), done.stderr
