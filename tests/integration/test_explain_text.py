"""``memdeck search --explain``'s text output lists the dropped candidates, and says
how many it left out (``--json`` lists every one), in either option order."""

from __future__ import annotations

import json
from pathlib import Path

from engine.cli.search_command import DROPPED_SHOWN
from tests.cli_process import cli_env, run_cli


def test_the_dropped_list_says_how_many_it_leaves_out(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    (ws / "memory").mkdir(parents=True)
    for day in range(1, 41):  # 40 notes: 8 results × 4 candidates, 24 dropped
        (ws / "memory" / f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}.md").write_text(
            f"# a day\n\n- Watered the ferns, day {day}\n"
        )
    env = cli_env(state)
    built = run_cli("index", "-w", str(ws), "--json", env=env)
    assert built.returncode == 0, built.stderr
    spellings = (
        ("search", "ferns", "--explain", "--max-results", "8", "--mode", "fts", "-w", str(ws)),
        ("--workspace", str(ws), "search", "--max-results=8", "--mode=fts", "ferns", "--explain"),
    )
    as_json = run_cli(*spellings[0], "--json", env=env)
    dropped = json.loads(as_json.stdout)["explain"]["dropped"]
    assert len(dropped) > DROPPED_SHOWN  # 32 candidates, 8 kept
    for argv in spellings:
        out = run_cli(*argv, env=env)
        assert out.returncode == 0, out.stderr
        assert f"\n{len(dropped)} dropped candidates\n" in out.stdout
        listed = [line for line in out.stdout.splitlines() if line.startswith("   memory/")]
        assert len(listed) == DROPPED_SHOWN
        assert listed[0].split()[0] == (
            f"{dropped[0]['path']}:{dropped[0]['start_line']}-{dropped[0]['end_line']}"
        )
        assert out.stdout.rstrip().endswith(
            f"… {len(dropped) - DROPPED_SHOWN} more (--json lists every one)"
        )
