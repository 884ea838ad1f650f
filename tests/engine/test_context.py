"""What the agent is given every turn: the bootstrap budget in the memory files' terms.

The injection itself is proven equal to OpenClaw 2026.9.6's in
tests/openclaw/test_bootstrap_parity.py; here: the line ranges, the report, the
limits read from openclaw.json, ``memdeck context`` and the live re-measure.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.config.loader import load_settings
from engine.memory.context import (
    bootstrap_files,
    context_report,
    line_view,
    measure,
    with_memory_text,
)

WORDS = [
    "deploy",
    "staging",
    "token",
    "rotate",
    "backup",
    "nightly",
    "owner",
    "coffee",
    "atlas",
    "rollback",
]


def big_memory(chars: int = 36_000, seed: int = 36) -> str:
    rng = random.Random(seed)
    lines = ["# Memory", ""]
    while sum(len(x) + 1 for x in lines) < chars:
        lines.append("- " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))))
    return "\n".join(lines) + "\n"


def test_a_36k_memory_file_is_cut_in_the_middle(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(big_memory(), encoding="utf-8")
    (tmp_path / "AGENTS.md").write_text("# Agents\n\nBe brief.\n", encoding="utf-8")
    report = measure(tmp_path, bootstrap_files(tmp_path), max_chars=20_000, total_max_chars=60_000)
    memory = report.memory
    assert memory is not None and memory.truncated and memory.causes == ("per-file-limit",)
    assert 19_900 < memory.injected_chars <= 20_000
    assert memory.tokens == -(-memory.injected_chars // 4)
    (hidden,) = memory.hidden
    # the head (15,000 of 36,000 chars) is shown from line 1, the tail (5,000) to the end
    assert 0.38 * memory.lines < hidden.start_line < 0.45 * memory.lines
    assert 0.83 * memory.lines < hidden.end_line < 0.9 * memory.lines
    assert set(memory.cut_lines) <= {hidden.start_line - 1, hidden.end_line + 1}
    # SOUL.md and IDENTITY.md are missing: each is injected as a [MISSING] line
    assert [f.path for f in report.files] == ["AGENTS.md", "SOUL.md", "IDENTITY.md", "MEMORY.md"]
    assert report.total_chars == sum(f.injected_chars for f in report.files)


def test_line_view_counts_utf16_and_ignores_trailing_space() -> None:
    text = "a😀b\nsecond\nthird\n\n  \n"
    # a😀b is 4 units: showing units 0-4 shows line 1 and its newline only
    hidden, cut, lines = line_view(text, [(0, 5)])
    assert lines == 5 and [(r.start_line, r.end_line) for r in hidden] == [(2, 3)]
    assert cut == ()
    hidden, cut, _ = line_view(text, [(0, 2), (14, 17)])
    assert cut == (1, 3) and [(r.start_line, r.end_line) for r in hidden] == [(2, 2)]
    assert line_view("", [])[2] == 0
    crlf = "one\r\ntwo\r\nthree"
    assert line_view(crlf, [(0, 5)])[0][0].start_line == 2


def test_limits_come_from_both_config_layouts(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("x" * 5_000 + "\n", encoding="utf-8")
    config = tmp_path / "openclaw.json"
    config.write_text(json.dumps({"agents": {"defaults": {"bootstrapMaxChars": 1_000}}}))
    report = context_report(load_settings(config_path=config, workspace=ws, env={}))
    assert report.max_chars == 1_000 and report.memory is not None
    assert report.memory.injected_chars <= 1_000 and report.memory.truncated
    # 2026.9's agents.entries: the agent's own value wins over the defaults
    config.write_text(
        json.dumps(
            {
                "agents": {
                    "defaults": {"bootstrapMaxChars": 1_000, "bootstrapTotalMaxChars": 3_000},
                    "entries": {"main": {"bootstrapMaxChars": 2_500}},
                }
            }
        )
    )
    report = context_report(load_settings(config_path=config, workspace=ws, env={}))
    assert (report.max_chars, report.total_max_chars) == (2_500, 3_000)
    assert report.memory is not None and report.memory.injected_chars <= 2_500


def test_the_total_limit_cuts_the_last_file_and_says_why(tmp_path: Path) -> None:
    for name in ("AGENTS.md", "SOUL.md", "IDENTITY.md"):
        (tmp_path / name).write_text("y" * 900 + "\n", encoding="utf-8")
    (tmp_path / "MEMORY.md").write_text("m" * 900 + "\n", encoding="utf-8")
    report = measure(tmp_path, bootstrap_files(tmp_path), max_chars=1_000, total_max_chars=3_000)
    memory = report.memory
    assert memory is not None and memory.causes == ("total-limit",)
    assert memory.injected_chars == 300 and report.total_chars == 3_000
    # under 64 characters left: the file is dropped, every line unseen
    report = measure(tmp_path, bootstrap_files(tmp_path), max_chars=1_000, total_max_chars=2_750)
    assert report.memory is not None and report.memory.injected_chars == 0
    assert [(r.start_line, r.end_line) for r in report.memory.hidden] == [(1, 1)]


def test_a_missing_memory_file_is_left_out_and_bootstrap_counts_while_it_exists(
    tmp_path: Path,
) -> None:
    (tmp_path / "memory.md").write_text("lower case is not MEMORY.md\n", encoding="utf-8")
    names = [f.name for f in bootstrap_files(tmp_path)]
    assert names == ["AGENTS.md", "SOUL.md", "IDENTITY.md"]  # each as [MISSING]
    (tmp_path / "BOOTSTRAP.md").write_text("first run\n", encoding="utf-8")
    assert "BOOTSTRAP.md" in [f.name for f in bootstrap_files(tmp_path)]


def test_a_fifo_or_a_folder_is_unreadable_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "SOUL.md")
    (tmp_path / "IDENTITY.md").mkdir()
    (tmp_path / "MEMORY.md").write_text("ok\n", encoding="utf-8")
    files = {f.name: f.content for f in bootstrap_files(tmp_path)}
    assert files["SOUL.md"] == files["IDENTITY.md"] == "[UNREADABLE: not a regular file]"
    assert files["MEMORY.md"] == "ok\n"


def test_the_report_follows_an_unsaved_buffer(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("short\n", encoding="utf-8")
    report = measure(tmp_path, bootstrap_files(tmp_path), max_chars=20_000, total_max_chars=60_000)
    assert report.memory is not None and not report.memory.truncated
    live = with_memory_text(report, big_memory(), tmp_path)
    assert live.memory is not None and live.memory.truncated and live.memory.hidden
    assert [f.path for f in live.files] == [f.path for f in report.files]


def test_memdeck_context_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text(big_memory(), encoding="utf-8")
    assert main(["context", "-w", str(ws), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totalMaxChars"] == 60_000
    memory = next(f for f in data["files"] if f["path"] == "MEMORY.md")
    assert 19_900 < memory["injectedChars"] <= 20_000 and memory["truncated"]
    assert memory["hidden"][0]["startLine"] > 2
    assert set(memory) >= {"path", "rawChars", "injectedChars", "truncated", "tokens", "hidden"}
    assert main(["context", "-w", str(ws)]) == 0
    text = capsys.readouterr().out
    assert "MEMORY.md" in text and "never reach the agent" in text
