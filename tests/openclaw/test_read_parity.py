"""memory_get against OpenClaw 2026.9.6's ``readAgentMemoryFile`` (node/read_file.mjs).

Pages of MEMORY.md and memory/ notes must carry the same lines, range and
continuation (``truncated``/``nextFrom``); the notice's wording is memdeck's own.
Under the ``openclaw`` profile memdeck's memory_get answers as OpenClaw's own
``memory_get`` tool does (``createMemoryGetTool``, node/get_tool.mjs): USER.md
and DREAMS.md are read, memory.md is refused, a memory path with no file is
``{"status": "not_found", "text": "", "path": …}``, a refused path ``status:
"error"`` with ``code: "MEMORY_PATH_NOT_ALLOWED"`` (the message is memdeck's).
memdeck's own profile keeps its documented rules (README, "The openclaw ranking
profile"), checked here too.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio

from engine.config.loader import load_settings
from engine.core import Engine
from engine.tools import memory_get
from tests.cli_process import cli_env, run_cli
from tests.openclaw.corpus import write_workspace

FILES = {
    "MEMORY.md": "# People\n- Alice likes tea\n- Bob plays guitar\n\n## Work\n" + "x\n" * 300,
    "memory/2026-01-01.md": "".join(f"line {i}\n" for i in range(1, 400)),
    "memory/notes/café.md": "crème brûlée\nsecond\n",
}
READS = [
    {"relPath": "MEMORY.md"},
    {"relPath": "MEMORY.md", "from": 3, "lines": 2},
    {"relPath": "memory/2026-01-01.md"},
    {"relPath": "memory/2026-01-01.md", "from": 150, "lines": 10},
    {"relPath": "memory/2026-01-01.md", "from": 395, "lines": 10},
    {"relPath": "memory/notes/café.md", "from": 2},
]


def _body(text: str) -> str:
    """The page's lines without the continuation notice (its wording differs)."""
    return text.split("\n\n[", 1)[0] if text.rstrip().endswith("]") else text


def test_memory_get_pages_like_openclaw(openclaw, tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", FILES)
    request, answer = tmp_path / "reads.json", tmp_path / "out.json"
    request.write_text(json.dumps({"workspace": str(workspace), "reads": READS}))
    proc = subprocess.run(
        [
            str(openclaw.node),
            str(Path(__file__).parent / "node" / "read_file.mjs"),
            str(request),
            str(answer),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "OPENCLAW_STATE_DIR": str(tmp_path / "state"),
            "OPENCLAW_PKG": str(openclaw.package),
        },
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(answer.read_text())
    env = {"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(tmp_path / "memdeck-state")}
    engine = Engine(load_settings(workspace=workspace, env=env), provider=None, read_only=True)
    try:
        for read, their in zip(READS, theirs, strict=True):
            assert their.get("status") == "ok", their
            mine = memory_get(engine, read["relPath"], read.get("from"), read.get("lines"))
            assert _body(mine["text"]) == _body(their["text"]), read
            for key in ("path", "from", "lines", "truncated", "nextFrom"):
                assert mine.get(key) == their.get(key), (read, key, mine, their)
    finally:
        engine.close()


TOOL_FILES = {
    "MEMORY.md": "# Facts\n- Alice likes tea\n",
    "USER.md": "# User\n- prefers short answers\n- lives in Lisbon\n",
    "DREAMS.md": "".join(f"dream {i}\n" for i in range(1, 200)),
    "memory.md": "lowercase root file\n",
    "memory/2026-01-01.md": "one\ntwo\nthree\n",
    "memory/notes/x.txt": "not markdown\n",
}
TOOL_CALLS = [
    {"path": "USER.md"},
    {"path": "USER.md", "from": 2, "lines": 1},
    {"path": "USER.md", "from": 9},  # past the end: an empty page, status ok
    {"path": "DREAMS.md"},  # a continued page
    {"path": "DREAMS.md", "from": 150, "lines": 60},
    {"path": "dreams.md"},  # allowed in any case; no such file here
    {"path": "MEMORY.md"},
    {"path": "./memory/2026-01-01.md", "lines": 2},
    {"path": "memory/2026-02-30.md"},  # missing file
    {"path": "memory/deep/er/none.md"},  # missing folders too
    {"path": "memory.md"},  # OpenClaw reads MEMORY.md only
    {"path": "AGENTS.md"},
    {"path": "../outside.md"},
    {"path": "memory/notes/x.txt"},
]
KEYS = ("status", "path", "from", "lines", "truncated", "nextFrom", "code")


def _engine(workspace: Path, home: Path, profile: str) -> Engine:
    env = {
        "HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home / "memdeck-state"),
        "MEMDECK_PROFILE": profile,
    }
    return Engine(load_settings(workspace=workspace, env=env), provider=None, read_only=True)


def test_memory_get_tool_answers_like_openclaw(openclaw, tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", TOOL_FILES)
    (tmp_path / "outside.md").write_text("outside\n")
    theirs = openclaw.node_json("get_tool.mjs", {"workspace": str(workspace), "calls": TOOL_CALLS})
    statuses = [t["status"] for t in theirs]
    # the package's behaviour this test pins (a change of version shows here first)
    assert statuses == ["ok"] * 5 + ["not_found"] + ["ok"] * 2 + ["not_found"] * 2 + ["error"] * 4
    engine = _engine(workspace, tmp_path, "openclaw")
    try:
        for call, their in zip(TOOL_CALLS, theirs, strict=True):
            mine = memory_get(engine, call["path"], call.get("from"), call.get("lines"))
            for key in KEYS:
                assert mine.get(key) == their.get(key), (call, key, mine, their)
            assert _body(mine["text"]) == _body(their["text"]), call
            if their["status"] == "not_found":
                assert mine == their, call  # exactly {"status", "text": "", "path"}
            if their["status"] == "error":
                assert mine["text"] == "" and mine["error"], call
    finally:
        engine.close()


def test_memory_get_keeps_memdecks_rules_in_its_own_profile(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", TOOL_FILES)
    engine = _engine(workspace, tmp_path, "memdeck")
    try:
        assert memory_get(engine, "memory.md")["text"] == "lowercase root file"
        for path in ("USER.md", "DREAMS.md"):
            answer = memory_get(engine, path)
            assert "not a memory file" in answer["error"] and "status" not in answer, answer
        missing = memory_get(engine, "memory/2026-02-30.md")
        assert missing == {
            "text": "",
            "path": "memory/2026-02-30.md",
            "error": "memory/2026-02-30.md: no such memory file",
        }
    finally:
        engine.close()


def test_memdeck_get_cli_under_each_profile(tmp_path: Path) -> None:
    """`memdeck get` of a missing file exits 1 in both profiles; with --profile
    openclaw --json stdout carries OpenClaw's not_found answer."""
    workspace = write_workspace(tmp_path / "ws", TOOL_FILES)
    env = cli_env(tmp_path / "state")
    mine = run_cli("get", "memory/none.md", "--json", "-w", str(workspace), env=env)
    assert mine.returncode == 1 and mine.stdout == ""
    assert "memory/none.md: no such memory file" in mine.stderr
    theirs = run_cli(
        "--profile", "openclaw", "get", "memory/none.md", "--json", "-w", str(workspace), env=env
    )
    assert theirs.returncode == 1, theirs.stderr
    assert json.loads(theirs.stdout) == {
        "status": "not_found",
        "text": "",
        "path": "memory/none.md",
    }
    assert "not found" in theirs.stderr
    user = run_cli("get", "USER.md", "--profile", "openclaw", "-w", str(workspace), env=env)
    assert user.returncode == 0 and user.stdout.splitlines()[1] == "- prefers short answers"
    refused = run_cli("get", "USER.md", "-w", str(workspace), env=env)
    assert refused.returncode == 1 and "not a memory file" in refused.stderr


EDGE_FILES = {"memory/2026-11-14.md": "one\ntwo\nthree\nfour\n", "MEMORY.md": "# M\n- fact\n"}
#: the edges of a page request, as an agent may send them over MCP
EDGE_CALLS = [
    {"path": "memory/2026-11-14.md", "lines": 0},
    {"path": "memory/2026-11-14.md", "from": 0},
    {"path": "memory/2026-11-14.md", "lines": -3},
    {"path": "memory/2026-11-14.md", "from": -1, "lines": 2},
    {"path": "memory/2026-11-14.md", "from": 4},  # the last line
    {"path": "memory/2026-11-14.md", "from": 3, "lines": 9},  # lines beyond the end
    {"path": "memory/2026-11-14.md", "from": 5},  # one past the end
    {"path": "memory/2026-11-14.md", "from": 9, "lines": 3},
    {"path": "memory/2026-11-14.md", "from": 1, "lines": 5},  # OpenClaw's citation L1-L5
    {"path": "MEMORY.md", "from": 3},
]


async def _mcp_answers(workspace: Path, home: Path, profile: str) -> list[tuple[bool, Any]]:
    from tests.mcp_process import stdio_client

    env = cli_env(home / profile, {"MEMDECK_PROFILE": profile})
    out = []
    async with stdio_client("--workspace", str(workspace), env=env) as client:
        for call in EDGE_CALLS:
            result = await client.call_tool("memory_get", call)
            text = result.content[0].text  # type: ignore[union-attr]
            out.append((result.is_error, text if result.is_error else result.structured_content))
    return out


def test_memory_get_edges_over_mcp_like_openclaw(openclaw, tmp_path: Path) -> None:
    """`from`/`lines` below 1 are refused by OpenClaw 2026.9.6's tool ("must be a
    positive integer") and a `from` past the end is an empty page with status ok: the
    same over `memdeck mcp` under the openclaw profile (an MCP tool error for the
    first, the same answer for the second); memdeck's own profile refuses a `from`
    past the end with the file's line count."""
    workspace = write_workspace(tmp_path / "ws", EDGE_FILES)
    theirs = openclaw.node_json("get_tool.mjs", {"workspace": str(workspace), "calls": EDGE_CALLS})
    thrown = [bool(t.get("thrown")) for t in theirs]
    # the package's behaviour this test pins (a change of version shows here first)
    assert thrown == [True] * 4 + [False] * 6, theirs
    assert [t["message"] for t in theirs[:4]] == [
        "lines must be a positive integer",
        "from must be a positive integer",
        "lines must be a positive integer",
        "from must be a positive integer",
    ]
    assert [(t["from"], t["lines"], t["text"]) for t in theirs[6:8]] == [(5, 0, ""), (9, 0, "")]

    mine = anyio.run(_mcp_answers, workspace, tmp_path, "openclaw")
    for call, their, (is_error, answer) in zip(EDGE_CALLS, theirs, mine, strict=True):
        assert is_error == bool(their.get("thrown")), (call, their, answer)
        if is_error:
            name = "lines" if "lines must" in their["message"] else "from"
            assert f"argument '{name}' is invalid" in answer, (call, answer)
        else:
            assert answer == their, call

    own = anyio.run(_mcp_answers, workspace, tmp_path, "memdeck")
    for call, their, (is_error, answer) in zip(EDGE_CALLS, theirs, own, strict=True):
        past_end = their.get("lines") == 0
        assert is_error == (bool(their.get("thrown")) or past_end), (call, answer)
        if past_end:
            total = EDGE_FILES[call["path"]].count("\n")
            assert f"has {total} lines; from={call['from']} is past its end" in answer
            assert f"from={total} for the last line" in answer
        elif not is_error:
            assert answer == {k: v for k, v in their.items() if k != "status"}, call
