"""``memdeck mcp`` as a real process, driven by the MCP SDK's own client.

``stdio_client`` starts ``python -m engine.cli.main mcp …`` the way Claude Code
or Codex would; ``HttpServer`` starts ``memdeck mcp --http 127.0.0.1:0`` and
reads the port it reports on stderr.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.cli_process import REPO


def stdio_params(*args: str, env: Mapping[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "engine.cli.main", "mcp", *args],
        env=dict(env),
        cwd=str(REPO),
    )


@contextlib.asynccontextmanager
async def stdio_client(
    *args: str, env: Mapping[str, str], name: str = "pytest-agent", errlog: Any = None
) -> AsyncIterator[Client]:
    """A connected SDK client over stdio to a fresh ``memdeck mcp`` subprocess."""
    from mcp.client.stdio import stdio_client as transport

    params = stdio_params(*args, env=env)
    info = types.Implementation(name=name, version="1.0")
    stream = transport(params, errlog=errlog) if errlog is not None else transport(params)
    async with Client(stream, client_info=info) as client:
        yield client


def structured(result: types.CallToolResult) -> Any:
    """A successful call's JSON answer (asserting it was not an error)."""
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    return result.structured_content


def error_text(result: types.CallToolResult) -> str:
    assert result.is_error, f"expected a tool error, got {result.structured_content}"
    return result.content[0].text  # type: ignore[union-attr]


class HttpServer:
    """``memdeck mcp --http BIND`` in the background; ``url`` once it listens."""

    def __init__(self, *args: str, env: Mapping[str, str], bind: str = "127.0.0.1:0"):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine.cli.main", "mcp", "--http", bind, *args],
            cwd=REPO,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr_lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = self._wait_for_url()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _wait_for_url(self) -> str:
        while True:
            try:
                line = self._lines.get(timeout=120)
            except queue.Empty:
                raise AssertionError("memdeck mcp --http did not report its address") from None
            if line is None:
                raise AssertionError("memdeck mcp --http exited:\n" + "".join(self.stderr_lines))
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                return m.group(1)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def client(self, name: str = "pytest-http", headers: Mapping[str, str] | None = None) -> Client:
        http = httpx2.AsyncClient(headers=dict(headers or {}), timeout=60)
        transport = streamable_http_client(self.url, http_client=http)
        return Client(transport, client_info=types.Implementation(name=name, version="1.0"))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def write_memdeck_settings(state_dir: Path, mcp: Mapping[str, Any]) -> Path:
    """memdeck's own settings.json (``MEMDECK_HOME`` = ``state_dir/memdeck`` in cli_env)."""
    path = state_dir / "memdeck" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcp": dict(mcp)}), encoding="utf-8")
    return path


TRANSPORTS = ("stdio", "http")


@contextlib.asynccontextmanager
async def connect(
    transport: str, *args: str, env: Mapping[str, str], name: str = "pytest-agent"
) -> AsyncIterator[Client]:
    """A connected SDK client to a fresh ``memdeck mcp ARGS`` over ``transport``:
    ``"stdio"`` (the client starts the server) or ``"http"`` (``--http 127.0.0.1:0``
    in the background, stopped when the block ends)."""
    import anyio

    if transport == "stdio":
        async with stdio_client(*args, env=env, name=name) as client:
            yield client
        return
    server = await anyio.to_thread.run_sync(lambda: HttpServer(*args, env=env))
    try:
        async with server.client(name) as client:
            yield client
    finally:
        await anyio.to_thread.run_sync(server.stop)
    log = "".join(server.stderr_lines)
    assert "Traceback" not in log and "database is locked" not in log, log
