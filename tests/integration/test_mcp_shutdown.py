"""``memdeck mcp`` (``--http`` and stdio) stopped by a signal shuts down cleanly.

uvicorn answers SIGTERM/SIGINT with a graceful shutdown and then raises the
signal again; left to the default handler, that second SIGTERM killed the
server before its cleanup ran (engine closed, background sync stopped). What
the cleanup leaves behind is checked here on a real server process: the
``memdeck mcp: stopped`` line it prints last, the index's write-ahead log
checkpointed and removed (SQLite does that when the last connection closes; a
killed process leaves it behind), the searches it answered recorded, and the
exit status a shell expects (128 + the signal's number). On stdio the SDK reads
stdin in a thread no cancellation reaches, and a signal used to kill the server
outright; it now stops it the same way, and a client that closes stdin stops it
with status 0.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.core import Engine
from engine.memory.recall import load_searches
from tests.cli_process import REPO, cli_env
from tests.engine_fixtures import write
from tests.mcp_process import HttpServer, structured


@pytest.fixture
def env(state_dir: Path, workspace_dir: Path) -> dict[str, str]:
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- The staging database is Postgres on 5433\n")
    write(workspace_dir, "memory/2026-03-01.md", "# 2026-03-01\n\n- Atlas rollback plan\n")
    return cli_env(state_dir)


def index_file(state_dir: Path) -> Path:
    found = [p for p in state_dir.rglob("*.sqlite") if "memory" in p.parts]
    assert len(found) == 1, found
    return found[0]


def wal_of(index: Path) -> Path:
    return index.with_name(index.name + "-wal")


def assert_cleaned_up(log: str, index: Path, make_settings: Any, client: str) -> None:
    """The cleanup ran to its end: no traceback, the stopped line last, the WAL
    checkpointed (the engine was closed), and the one search recorded."""
    assert "Traceback" not in log, log
    assert log.rstrip().endswith("memdeck mcp: stopped"), log
    assert not wal_of(index).exists(), "the index's WAL was not checkpointed: engine not closed"
    engine = Engine(make_settings(), provider=None)
    try:
        searches = load_searches(engine.store)
    finally:
        engine.close()
    assert [(s.client, s.query) for s in searches] == [(client, "rollback")]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_http_server_stopped_by_a_signal_cleans_up(
    sig: signal.Signals, env, state_dir: Path, workspace_dir: Path, make_settings
) -> None:
    with HttpServer("--workspace", str(workspace_dir), env=env) as server:

        async def go():
            async with server.client("signal-test") as c:
                return structured(await c.call_tool("memory_search", {"query": "rollback"}))

        out = anyio.run(go)
        assert out["results"][0]["path"] == "memory/2026-03-01.md"
        index = index_file(state_dir)
        assert wal_of(index).exists()  # the server holds the index open in WAL mode
        server.proc.send_signal(sig)
        code = server.proc.wait(timeout=30)
    log = "".join(server.stderr_lines)
    assert code == 128 + sig, (code, log)  # 143 for SIGTERM, 130 for SIGINT
    assert_cleaned_up(log, index, make_settings, "signal-test")


def _rpc(proc: subprocess.Popen[str], message: dict[str, Any]) -> dict[str, Any] | None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    assert answer.get("id") == message["id"], answer
    return answer


def _stdio_search(
    ws: Path, env: dict[str, str], client: str, query: str, *extra: str
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """``memdeck mcp`` on stdio, driven by hand as a client would: initialize, then one
    ``memory_search``; the running server and the search's answer."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli.main", "mcp", "--workspace", str(ws), *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, cwd=str(REPO),
    )  # fmt: skip
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client, "version": "1"}}})  # fmt: skip
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        answer = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_search", "arguments": {"query": query}}})  # fmt: skip
    except BaseException:
        proc.kill()
        raise
    assert answer is not None
    return proc, answer


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin closed"])
def test_stdio_server_stopped_by_a_signal_or_eof_cleans_up(
    how: str, env, state_dir: Path, workspace_dir: Path, make_settings
) -> None:
    """The JSON-RPC a client sends over stdio, by hand: initialize, one search, then
    the client stops the server (a signal) or goes away (closes stdin)."""
    proc, answer = _stdio_search(workspace_dir, env, "stdio-stop-test", "rollback")
    try:
        found = answer["result"]["structuredContent"]["results"]
        assert found and found[0]["path"] == "memory/2026-03-01.md", answer
        index = index_file(state_dir)
        assert wal_of(index).exists()
        if how == "stdin closed":
            assert proc.stdin is not None
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, how))
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None and proc.stdout is not None
    log = proc.stderr.read()
    want = 0 if how == "stdin closed" else 128 + getattr(signal, how)
    assert code == want, (code, log)
    assert proc.stdout.read() == ""  # nothing but the protocol's answers on stdout
    assert_cleaned_up(log, index, make_settings, "stdio-stop-test")


def test_stdio_answers_what_was_asked_before_stdin_closed(
    env, state_dir: Path, workspace_dir: Path, make_settings
) -> None:
    """A client that writes its requests and closes stdin at once (a shell's
    ``printf … | memdeck mcp``) gets every answer: the SDK used to end the session
    at stdin's end and answer the search still running with "Connection closed"."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "stdio-pipe-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_search", "arguments": {"query": "rollback"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "memory_get", "arguments": {"path": "MEMORY.md", "lines": 1}}},
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "mcp", "--workspace", str(workspace_dir)],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True, text=True, env=env, cwd=str(REPO), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3], proc.stdout
    assert "error" not in answers[2], answers[2]
    found = answers[2]["result"]["structuredContent"]["results"]
    assert found and found[0]["path"] == "memory/2026-03-01.md"
    assert answers[3]["result"]["structuredContent"]["text"].startswith("# Memory\n")
    assert_cleaned_up(proc.stderr, index_file(state_dir), make_settings, "stdio-pipe-test")


def test_a_request_the_client_cancelled_is_not_waited_for() -> None:
    """The protocol sends no answer to a cancelled request: stdin's end must not wait
    for one (it would hold the server for ``EOF_ANSWER_S``)."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    from engine.mcp.answer_before_eof import Unanswered

    def msg(raw: dict[str, Any]) -> SessionMessage:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(raw))

    waiting = Unanswered()
    waiting.read(msg({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}))
    waiting.read(msg({"jsonrpc": "2.0", "id": "a", "method": "tools/list"}))
    waiting.read(ValueError("a line that is not JSON-RPC"))
    assert waiting.ids == {7, "a"}
    waiting.read(msg({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 7}}))  # fmt: skip
    waiting.sent(msg({"jsonrpc": "2.0", "id": "a", "result": {}}))
    assert waiting.ids == set()
    anyio.run(waiting.answered, 0.0)  # nothing left: returns at once


def test_stdin_closed_during_the_first_index_stops_at_once(tmp_path: Path) -> None:
    """A never-indexed workspace whose first index takes many slow provider requests:
    a client that searches (answered keyword-only meanwhile) and then closes stdin
    stops the server within a request or two, not after the index (an SDK client
    kills a server that takes 2 s, and the next start then finds a dead writer);
    the unfinished rebuild leaves no file behind. Which thread runs that first
    index (the service's or the search's) is a race here;
    ``tests/engine/test_first_search.py`` stops the search's deterministically."""
    import time

    from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer

    ws, state = tmp_path / "ws", tmp_path / "state"
    for day in range(1, 41):  # some 40 requests of embedding: far longer than a stop
        write(ws, f"memory/2026-02-{1 + day % 28:02d}-{day}.md", f"- note {day} " * 120 + "\n")
    state.mkdir()

    def slow(_: int, __: Any) -> None:
        time.sleep(0.4)  # every embedding request takes this long
        return None

    with ProviderServer(api_key=TEST_KEY) as provider:
        provider.faults = slow
        config = state / "openclaw.json"
        config.write_text(json.dumps({"memory": {"search": {
            "provider": "openai", "remote": {"baseUrl": provider.url + "/v1", "apiKey": TEST_KEY},
        }}}))  # fmt: skip
        env = {**cli_env(state), **FAST_ENV}
        proc, answer = _stdio_search(
            ws, env, "first-index-stop", "note 7", "--config", str(config)
        )
        try:
            assert "result" in answer, answer
            asked = len(provider.embed_requests())
            assert proc.stdin is not None
            t0 = time.monotonic()
            proc.stdin.close()
            code = proc.wait(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.stderr is not None
        log = proc.stderr.read()
    assert code == 0 and log.rstrip().endswith("memdeck mcp: stopped"), log
    # one request in flight at most, then the stop: far from the ~40 of the index
    assert took < 5.0, (took, log)
    assert len(provider.embed_requests()) < asked + 5
    left = sorted(p.name for p in (state / "memory").iterdir())
    assert not [n for n in left if ".tmp" in n or n.endswith(("-wal", "-shm"))], left
