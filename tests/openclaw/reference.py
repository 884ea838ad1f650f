"""The installed OpenClaw package (scripts/install_openclaw.sh), as a test reference.

Differential tests compare memdeck with OpenClaw 2026.9.6 itself: its CLI in
throw-away OPENCLAW_HOME / OPENCLAW_STATE_DIR / OPENCLAW_CONFIG_PATH folders, and
its exported functions called from the small Node scripts in ``node/``. When the
install is missing it is done here (npm is enough); without npm the tests skip
with a loud reason.
"""

from __future__ import annotations

import json
import os
import shutil
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


_cached: Reference | None = None


def reference() -> Reference:
    """The install, installing it first when npm is available; else skip loudly."""
    global _cached
    if _cached is not None:
        return _cached
    ref = Reference(PREFIX)
    stamp = PREFIX / ".stamp"
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
