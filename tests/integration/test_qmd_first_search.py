"""The first ``memdeck search --backend qmd`` on a fresh qmd home says what it waits for.

A fresh home means collections to add, every file to read (``qmd update``) and,
with a model, everything to embed: the search waits for that boot refresh, and
each slow step is announced on stderr as it starts and when it ends, instead of
a minute of silence. Real qmd, real process.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from engine.cli.qmd_progress import QmdProgressPrinter
from engine.config.loader import load_settings
from engine.qmd.backend import QmdProgress
from tests.cli_process import cli_env, run_cli
from tests.integration.test_qmd_backend import FILES, QMD_BIN, requires_qmd, write_tree


@requires_qmd
def test_first_qmd_search_shows_progress_then_answers(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    write_tree(ws, FILES)
    state.mkdir()
    cfg = state / "openclaw.json"
    cfg.write_text(json.dumps({"memory": {"backend": "qmd", "qmd": {"command": str(QMD_BIN)}}}))
    # every step is announced at once (no delay), so the test does not depend on speed
    env = cli_env(state, {"MEMDECK_PROGRESS_DELAY_S": "0"})
    assert run_cli("index", "-w", str(ws), "--config", str(cfg), env=env).returncode == 0
    # ws is not the agent's workspace: it gets a qmd home of its own, named with the
    # hash its index file is named with, and the agent's own home is left alone
    homes = sorted((state / "agents" / "main").glob("qmd*"))
    tag = load_settings(workspace=ws, config_path=cfg, env=env).folder_tag
    assert tag is not None and homes == [state / "agents" / "main" / f"qmd-{tag}"], homes
    qmd_home = homes[0]
    assert qmd_home.is_dir(), "`index` refreshed qmd too"
    shutil.rmtree(qmd_home)  # the search starts from a fresh qmd home
    r = run_cli(
        "search", "Zebra tables", "--backend", "qmd", "-w", str(ws), "--config", str(cfg), env=env
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].endswith("backend qmd"), r.stdout
    assert "memory/projects/zebra.md" in r.stdout
    lines = [x for x in r.stderr.splitlines() if x.startswith("memdeck: ")]
    started = [x for x in lines if x.endswith("…")]
    ended = [x for x in lines if " finished after " in x]
    assert "memdeck: setting up qmd's collections for this workspace (first use)…" in started
    assert any(x.startswith("memdeck: qmd collections finished after ") for x in ended)
    assert lines.index(started[0]) < lines.index(ended[0])


def _event(step: str, state: str, seconds: float = 0.0) -> QmdProgress:
    return QmdProgress(step, state, "boot", seconds)  # type: ignore[arg-type]


def test_progress_printer_announces_slow_steps_only() -> None:
    out = io.StringIO()
    quiet = QmdProgressPrinter(out, delay_s=3600)  # nothing is that slow: all quiet
    quiet(_event("update", "started"))
    quiet(_event("update", "finished", 0.2))
    assert out.getvalue() == ""
    loud = QmdProgressPrinter(out, delay_s=0)
    loud(_event("embed", "started"))
    loud(_event("embed", "failed", 12.34))
    assert out.getvalue().splitlines() == [
        "memdeck: qmd embed: embedding new text (a first run embeds everything; "
        "can take minutes) (boot)…",
        "memdeck: qmd embed failed after 12.3 s",
    ]


@requires_qmd
def test_backend_qmd_is_forced_where_the_config_says_builtin(tmp_path: Path) -> None:
    """``--backend qmd`` (either option order) makes qmd answer although
    ``memory.backend`` is the builtin index: no silent builtin answer."""
    ws, state = tmp_path / "ws", tmp_path / "state"
    write_tree(ws, FILES)
    state.mkdir()
    cfg = state / "openclaw.json"
    cfg.write_text(json.dumps({"memory": {"qmd": {"command": str(QMD_BIN)}}}))
    env = cli_env(state)
    assert run_cli("index", "-w", str(ws), "--config", str(cfg), env=env).returncode == 0
    for argv in (
        ("search", "Zebra tables", "--backend", "qmd", "--json", "-w", str(ws)),
        ("--json", "-w", str(ws), "search", "--backend=qmd", "Zebra tables"),
    ):
        r = run_cli(*argv, "--config", str(cfg), env=env)
        assert r.returncode == 0, r.stderr
        answer = json.loads(r.stdout)
        assert answer["backend"] == "qmd" and answer.get("backendFallback") is None, answer
        assert "memory/projects/zebra.md" in [hit["path"] for hit in answer["results"]]
    builtin = json.loads(
        run_cli(
            "search", "Zebra tables", "--json", "-w", str(ws), "--config", str(cfg), env=env
        ).stdout
    )
    assert builtin["backend"] == "builtin"
