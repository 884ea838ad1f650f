"""What a CLI call imports: only what its mode needs.

A keyword-only search and a ``get`` on a workspace indexed with the local model
must not load llama.cpp (the index's recorded size stands in for the model's), and
nothing without a remote provider imports httpx. A hybrid search does load the
model: the check is not vacuous.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_process import REPO, cli_env, run_cli
from tests.engine_fixtures import write

_PROBE = """
import json, runpy, sys
sys.argv = ["memdeck", *json.loads(sys.argv[1])]
try:
    runpy.run_module("engine.cli.main", run_name="__main__")
except SystemExit:
    pass
print("IMPORTED " + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.fixture
def indexed(minilm_gguf: Path, state_dir: Path, workspace_dir: Path) -> tuple[list[str], dict]:
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- Dana prefers flat white coffee\n")
    cfg = state_dir / "openclaw.json"
    cfg.write_text(
        json.dumps(
            {
                "agents": {
                    "defaults": {
                        "memorySearch": {
                            "provider": "local",
                            "local": {"modelPath": str(minilm_gguf)},
                        }
                    }
                }
            }
        )
    )
    env = cli_env(state_dir)
    args = ["--config", str(cfg), "-w", str(workspace_dir)]
    assert run_cli("index", *args, env=env).returncode == 0
    return args, env


def _imported(argv: list[str], env: dict, *, top: bool = True) -> set[str]:
    """The modules a CLI call imports: top-level packages, or (``top`` False) all."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    line = next(x for x in out.stderr.splitlines() if x.startswith("IMPORTED "))
    names = json.loads(line[len("IMPORTED ") :])
    return {m.split(".")[0] for m in names} if top else set(names)


def test_keyword_only_search_and_get_load_no_model_and_no_http(indexed) -> None:
    args, env = indexed
    for argv in (["search", "flat white", "--mode", "fts", *args], ["get", "MEMORY.md", *args]):
        mods = _imported(argv, env)
        assert "llama_cpp" not in mods and "httpx" not in mods, argv
        assert {"textual", "mcp", "psycopg"}.isdisjoint(mods), argv
        # nor the qmd backend's modules when qmd is not the backend
        assert not any(m.startswith("engine.qmd") for m in _imported(argv, env, top=False)), argv
    hybrid = _imported(["search", "flat white", *args], env)
    assert "llama_cpp" in hybrid and "httpx" not in hybrid
