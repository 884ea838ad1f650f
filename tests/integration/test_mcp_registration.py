"""docs/mcp.md's registration instructions ("Connecting an agent"), run as written.

Claude Code and Codex are not installed here, so the test does what they do with
what the page tells them: it reads the ``claude mcp add … -- COMMAND ARGS``
lines and the Codex ``config.toml`` block from docs/mcp.md, starts each command
exactly as given (``memdeck`` found on PATH, ``~`` being the user's home), and
drives it with the MCP SDK's own client: the server must initialise, list the
tools and answer a search from the right workspace. The HTTP line is checked
the same way against ``memdeck mcp --http PORT``. Global options are also tried
in each documented position (``memdeck -w DIR mcp`` and ``memdeck mcp -w DIR``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.cli_process import REPO, cli_env
from tests.engine_fixtures import write
from tests.mcp_process import structured

MCP_DOC = REPO / "docs" / "mcp.md"
BIN = Path(sys.executable).parent  # the venv's bin: where `memdeck` is installed


def mcp_section() -> str:
    text = MCP_DOC.read_text(encoding="utf-8")
    start = text.index("## Connecting an agent")
    return text[start : text.index("\n## ", start + 5)]


def claude_lines() -> list[list[str]]:
    """Each ``claude mcp add`` line's words (comments dropped)."""
    block = re.search(r"\*\*Claude Code\*\*\s*```bash\n(.*?)```", mcp_section(), re.S)
    assert block, "docs/mcp.md lost its Claude Code block"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("claude mcp add")]


def codex_config() -> dict:
    block = re.search(r"```toml\n(.*?)```", mcp_section(), re.S)
    assert block, "docs/mcp.md lost its Codex config.toml block"
    return tomllib.loads(block.group(1))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user home with a default agent workspace and ``~/notes``, each with one fact."""
    home = tmp_path / "home"
    default_ws = home / ".openclaw" / "workspace"
    write(default_ws, "MEMORY.md", "# Memory\n\n- The default workspace keeps the VPN notes\n")
    write(home / "notes", "MEMORY.md", "# Notes\n\n- The notes folder keeps the quokka facts\n")
    write(
        home / "me-notes",
        "MEMORY.md",
        "# Notes\n\n- The codex folder keeps the ferry timetable\n",
    )
    return home


def env_for(home: Path) -> dict[str, str]:
    env = cli_env(home / ".openclaw")
    env["HOME"] = str(home)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("OPENCLAW_CONFIG_PATH", None)
    return env


def expand(args: list[str], home: Path) -> list[str]:
    """What a shell (Claude Code's `claude mcp add` line) or a user's path does with ``~``;
    the page's ``/home/me/notes`` stands for a folder in this test's home."""
    out = []
    for a in args:
        a = str(home) + a[1:] if a.startswith("~") else a
        out.append(a.replace("/home/me/notes", str(home / "me-notes")))
    return out


async def search_through(command: str, args: list[str], env: dict[str, str], query: str):
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(env["HOME"]))
    info = types.Implementation(name="docs-check", version="1")
    async with Client(stdio_client(params), client_info=info) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        found = structured(await client.call_tool("memory_search", {"query": query}))
    return names, found


def test_the_documented_claude_code_stdio_lines_start_a_working_server(home: Path) -> None:
    stdio = [w for w in claude_lines() if "--transport" not in w]
    assert len(stdio) == 2, stdio
    env = env_for(home)
    cases = {0: ("VPN notes", "VPN"), 1: ("quokka facts", "quokka")}
    for i, words in enumerate(stdio):
        assert words[:4] == ["claude", "mcp", "add", "memdeck"] and words[4] == "--"
        command, *args = expand(words[5:], home)
        assert command == "memdeck" and args[0] == "mcp"
        query, word = cases[i]
        names, found = anyio.run(search_through, command, args, env, query)
        assert names == ["memory_search", "memory_get", "memory_status"]
        assert found["results"] and word in found["results"][0]["snippet"], (words, found)


def test_the_documented_codex_config_starts_a_working_server(home: Path) -> None:
    config = codex_config()
    server = config["mcp_servers"]["memdeck"]
    assert server["command"] == "memdeck" and server["args"] == ["mcp"]
    env = env_for(home)
    names, found = anyio.run(search_through, server["command"], server["args"], env, "VPN notes")
    assert names[0] == "memory_search"
    assert "VPN" in found["results"][0]["snippet"]
    # the commented alternative: ["mcp", "--workspace", "/home/me/notes"]
    alt = re.search(r'args = \["mcp"\]\s*# or (\[.*?\])', mcp_section())
    assert alt, "docs/mcp.md lost the --workspace alternative"
    alt_args = expand(tomllib.loads(f"a = {alt.group(1)}")["a"], home)
    _, found = anyio.run(search_through, "memdeck", alt_args, env, "ferry timetable")
    assert "ferry" in found["results"][0]["snippet"]


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_documented_http_line_matches_memdeck_mcp_http(home: Path) -> None:
    [line] = [w for w in claude_lines() if "--transport" in w]
    assert line[3:6] == ["--transport", "http", "memdeck"]
    url = line[6]
    m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/mcp", url)
    assert m, url
    # the page's `memdeck mcp --http 8765`, on a port free right now
    port = free_port()
    env = env_for(home)
    proc = subprocess.Popen(
        ["memdeck", "mcp", "--http", str(port)],
        env=env,
        cwd=env["HOME"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for line_out in proc.stderr:
            if "listening on" in line_out:
                assert f"http://127.0.0.1:{port}/mcp" in line_out
                break
        else:
            raise AssertionError("memdeck mcp --http did not start")

        async def go():
            http = httpx2.AsyncClient(timeout=60)
            transport = streamable_http_client(url.replace(m.group(1), str(port)), http_client=http)
            info = types.Implementation(name="claude-code", version="1")
            async with Client(transport, client_info=info) as client:
                return structured(await client.call_tool("memory_search", {"query": "VPN notes"}))

        found = anyio.run(go)
        assert "VPN" in found["results"][0]["snippet"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize(
    "argv",
    [
        ["memdeck", "-w", "{ws}", "mcp"],
        ["memdeck", "mcp", "-w", "{ws}"],
        ["memdeck", "--workspace", "{ws}", "mcp", "--no-sync"],
        ["memdeck", "mcp", "--no-sync", "--workspace", "{ws}"],
    ],
    ids=["global-before", "global-after", "long-before-no-sync", "no-sync-then-long"],
)
def test_global_options_work_in_every_documented_position(home: Path, argv: list[str]) -> None:
    ws = home / "notes"
    command, *args = [a.format(ws=ws) for a in argv]
    names, found = anyio.run(search_through, command, args, env_for(home), "quokka facts")
    assert names[0] == "memory_search"
    assert "quokka" in found["results"][0]["snippet"]
