"""The ``memdeck`` CLI as a real process, the way a user's shell runs it.

Integration tests start ``python -m engine.cli.main`` in a child process so exit
codes, stdout/stderr and config discovery are the real ones. The child gets
homes under the test's state folder and none of the developer's provider API
keys, so a key in the developer's shell can never pick a provider for a test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cli_env(state_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with OpenClaw's and memdeck's homes in ``state_dir``
    and every ``*_API_KEY`` removed; ``extra`` is added last."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        OPENCLAW_STATE_DIR=str(state_dir),
        HOME=str(state_dir),
        MEMDECK_HOME=str(state_dir / "memdeck"),
    )
    env.update(extra or {})
    return env


def run_cli(
    *args: str, env: Mapping[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m engine.cli.main ARGS`` from the repository root; text output captured."""
    return subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *args],
        capture_output=True,
        text=True,
        env=dict(env),
        input=stdin,
        cwd=REPO,
        timeout=120,
    )
