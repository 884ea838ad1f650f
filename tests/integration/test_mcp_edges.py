"""The MCP server at its edges: resources refused by rule (never a traceback), a
line that is not JSON-RPC answered with a parse error, and the HTTP transport's
Host checks (its own URL on any loopback address; no prefix tricks).

Real ``memdeck mcp`` subprocesses, the SDK's client, raw stdio and raw HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from tests.cli_process import REPO, cli_env
from tests.engine_fixtures import write
from tests.mcp_process import HttpServer, stdio_client


@pytest.fixture
def ws(workspace_dir: Path) -> Path:
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- Deploys go out on Tuesday\n")
    write(workspace_dir, "memory/notes.md", "# Notes\n\n- fine\n")
    os.link(workspace_dir / "memory/notes.md", workspace_dir / "memory/hardlink.md")
    os.mkfifo(workspace_dir / "memory/fifo.md")
    (workspace_dir / "memory/folder.md").mkdir()
    (workspace_dir / "memory/binary.md").write_bytes(b"\x00\x01binary\x00")
    (workspace_dir / "memory/huge.md").write_bytes(b"- line\n" * (11 * 1024 * 1024 // 7))
    return workspace_dir


def test_resources_are_refused_by_rule(ws: Path, state_dir: Path) -> None:
    cases = {
        "memory/hardlink.md": "hard link",
        "memory/fifo.md": "only regular files are read",
        "memory/folder.md": "folder",
        "memory/binary.md": "binary",
        "memory/huge.md": "limit for a resource",
        "../outside.md": "",
    }
    errors: dict[str, str] = {}

    async def go() -> str:
        log = open(os.devnull, "w")  # noqa: SIM115
        async with stdio_client("-w", str(ws), env=cli_env(state_dir), errlog=log) as c:
            for rel in cases:
                try:
                    await c.read_resource(f"memory://{rel}")
                except Exception as exc:
                    errors[rel] = str(exc)
            ok = await c.read_resource("memory://MEMORY.md")
        return ok.contents[0].text  # type: ignore[union-attr]

    text = anyio.run(go)
    assert "Deploys go out on Tuesday" in text
    for rel, rule in cases.items():
        assert rel in errors, f"{rel} was read"
        assert "Internal" not in errors[rel] and "Traceback" not in errors[rel], errors[rel]
        assert rule.lower() in errors[rel].lower(), (rel, errors[rel])


def test_a_line_that_is_not_json_rpc_gets_a_parse_error(ws: Path, state_dir: Path) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    lines = "{not json\n" + json.dumps(init) + "\n"
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "mcp", "-w", str(ws)],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=cli_env(state_dir),
    )
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert answers[0]["id"] is None and answers[0]["error"]["code"] == -32700
    assert answers[0]["error"]["message"].startswith("Parse error")
    assert answers[1]["id"] == 1 and "result" in answers[1]  # the next line is served


def _post(url: str, host: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Host": host, "Accept": "application/json, text/event-stream"}
    return httpx.post(url, json=body, headers=headers, timeout=30).status_code


def test_http_host_checks(ws: Path, state_dir: Path) -> None:
    env = cli_env(state_dir)
    with HttpServer("-w", str(ws), env=env, bind="127.0.0.2:0") as server:
        assert server.url.startswith("http://127.0.0.2:")
        port = server.port
        assert _post(server.url, f"127.0.0.2:{port}") not in (403, 421)  # its own URL
        assert _post(server.url, f"127.0.0.1:{port}") not in (403, 421)
        assert _post(server.url, "127.0.0.1:80.evil.example") == 421
        assert _post(server.url, f"evil.example:{port}") == 421
