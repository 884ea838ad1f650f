"""The installed OpenClaw package (scripts/install_openclaw.sh), as a test reference.

Differential tests compare memdeck with OpenClaw 2026.9.6 itself: its CLI in
throw-away OPENCLAW_HOME / OPENCLAW_STATE_DIR / OPENCLAW_CONFIG_PATH folders, and
its exported functions called from the small Node scripts in ``node/``. When the
install is missing it is done here (npm is enough); without npm the tests skip
with a loud reason.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREFIX = Path(os.environ.get("MEMDECK_OPENCLAW_PREFIX") or ROOT / ".cache" / "openclaw")
NODE_DIR = Path(__file__).resolve().parent / "node"
VERSION = "2026.9.6"
SKIP_REASON = (
    "OPENCLAW DIFFERENTIAL TESTS SKIPPED: npm is not installed, so "
    "scripts/install_openclaw.sh cannot install openclaw@2026.9.6"
)


class Reference:
    """Paths of the install plus helpers to run its CLI and Node scripts."""

    def __init__(self, prefix: Path):
        self.prefix = prefix
        self.launcher = prefix / "bin" / "openclaw"
        self.node = prefix / "bin" / "node"
        self.package = prefix / "pkg" / "node_modules" / "openclaw"

    def node_json(self, script: str, payload: Any, *, timeout: float = 600) -> Any:
        """Run ``node/<script>`` on *payload* (a JSON file named by argv[2]); parse stdout."""
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "OPENCLAW_PKG": str(self.package),
            "NO_COLOR": "1",
        }
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(payload, handle)
        try:
            proc = subprocess.run(
                [str(self.node), str(NODE_DIR / script), handle.name],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
            )
        finally:
            os.unlink(handle.name)
        if proc.returncode != 0:
            raise AssertionError(f"{script} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout)

    def cli(
        self, home: Path, workspace: Path, *args: str, search: dict | None = None, timeout=600
    ) -> subprocess.CompletedProcess[str]:
        """Run ``openclaw ARGS`` with its home, state and config inside *home*.

        The config points the default agent at *workspace* with
        ``memory.search.provider = "none"`` (FTS-only), plus *search* keys.
        """
        config = home / "openclaw.json"
        block = {"provider": "none", **(search or {})}
        config.write_text(
            json.dumps(
                {"agents": {"defaults": {"workspace": str(workspace)}}, "memory": {"search": block}}
            )
        )
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "OPENCLAW_HOME": str(home),
            "OPENCLAW_STATE_DIR": str(home / "state"),
            "OPENCLAW_CONFIG_PATH": str(config),
            "NO_COLOR": "1",
            "CI": "1",
        }
        proc = subprocess.run(
            [str(self.launcher), *args], capture_output=True, text=True, timeout=timeout, env=env
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"openclaw {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
            )
        return proc

    @staticmethod
    def agent_db(home: Path) -> Path:
        """OpenClaw's own index for the default agent (read-only use only)."""
        return home / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"

    def indexed_chunks(self, home: Path) -> dict[str, list[tuple[int, int, str]]]:
        """path → [(start, end, hash)] from OpenClaw's index, opened read-only."""
        db = sqlite3.connect(f"file:{self.agent_db(home)}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT path, start_line, end_line, hash FROM memory_index_chunks "
                "WHERE source = 'memory' ORDER BY path, start_line, end_line, hash"
            ).fetchall()
        finally:
            db.close()
        out: dict[str, list[tuple[int, int, str]]] = {}
        for path, start, end, digest in rows:
            out.setdefault(path, []).append((start, end, digest))
        return out


_cached: Reference | None = None


def reference() -> Reference:
    """The install, installing it first when npm is available; else skip loudly."""
    global _cached
    if _cached is not None:
        return _cached
    ref = Reference(PREFIX)
    stamp = PREFIX / ".stamp"
    PREFIX.parent.mkdir(parents=True, exist_ok=True)
    # pytest-xdist workers ask at the same time: one installs, the others wait for it
    with open(PREFIX.parent / ".openclaw-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (ref.launcher.exists() and stamp.exists() and VERSION in stamp.read_text()):
            if shutil.which("npm") is None:
                pytest.skip(SKIP_REASON)
            proc = subprocess.run(
                ["bash", str(ROOT / "scripts" / "install_openclaw.sh"), str(PREFIX)],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if proc.returncode != 0:
                raise AssertionError(f"install_openclaw.sh failed:\n{proc.stderr[-4000:]}")
    _cached = ref
    return ref
