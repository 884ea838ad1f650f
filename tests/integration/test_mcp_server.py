"""``memdeck mcp`` as an agent meets it: a real subprocess, the MCP SDK's own client.

stdio (the default) and streamable HTTP; tool listing and schemas, answers
identical to the CLI's, refusals, paging, bad arguments, disconnects, an index
rebuilt underneath a running server, Origin/Host/token guards, and
memory_append off by default and on when the user enables it.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import pytest

from engine.memory.recall import load_searches
from tests.cli_process import cli_env, run_cli
from tests.engine_fixtures import write
from tests.mcp_process import (
    TRANSPORTS,
    HttpServer,
    connect,
    error_text,
    stdio_client,
    structured,
    write_memdeck_settings,
)

LONG_LINES = 300


def _write_notes(workspace_dir: Path) -> None:
    write(
        workspace_dir,
        "MEMORY.md",
        "# Memory\n\n- The staging database is Postgres on port 5433\n"
        "- Dana prefers flat white coffee\n",
    )
    write(
        workspace_dir,
        "memory/2026-03-01.md",
        "# 2026-03-01\n\n- Atlas rollback plan drafted with Priya\n- Deploy window is Tuesday\n",
    )
    long = "\n".join(f"line {i} of the long project log" for i in range(1, LONG_LINES + 1))
    write(workspace_dir, "memory/projects/long.md", long + "\n")
    (workspace_dir / "notes.txt").write_text("not memory\n")


@pytest.fixture
def env(state_dir: Path, workspace_dir: Path) -> dict[str, str]:
    _write_notes(workspace_dir)
    return cli_env(state_dir)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs over stdio and over streamable HTTP."""
    return str(request.param)


def ws_args(workspace_dir: Path) -> tuple[str, ...]:
    return ("--workspace", str(workspace_dir))


def run(fn, *args):
    return anyio.run(fn, *args)


# -- the read tools: one server per transport ---------------------------------------------
#: memory_get paths the server must refuse, and the reason each answer gives
LONG_NAME = "memory/" + "b" * 10_000 + ".md"
REFUSALS = {
    "../secret.md": "'..' is not allowed",
    "/etc/passwd": "only .md memory files",
    "notes.txt": "only .md memory files",
    "{outside}": "not a memory file",
    "memory/link.md": "symlinks are not followed",
    "memory/nope.md": "no such memory file",
    # a long argument is never repeated back whole: its first 60 characters and length
    LONG_NAME: "characters)",
    "../" * 3000: "characters)",
}
#: calls with bad arguments, and what each error must say
BAD_CALLS = [
    ("memory_search", {}, "'query' is a required property"),
    ("memory_search", {"query": "x", "maxResults": "many"}, "expected an integer from 1 to 50"),
    ("memory_search", {"query": "x", "minScore": 3}, "expected a number from 0 to 1"),
    ("memory_search", {"query": ""}, "argument 'query' is invalid"),
    ("memory_search", {"query": " \t "}, "expected a non-empty string"),
    ("memory_search", {"query": "x", "limit": 3}, "the arguments it takes are: query"),
    ("memory_get", {"path": "MEMORY.md", "from": 0}, "expected an integer ≥ 1"),
    ("memory_get", {"path": 5}, "expected a non-empty string"),
    ("memory_forget", {}, "unknown tool 'memory_forget'"),
]
LONG = "memory/projects/long.md"
SEARCH = {"query": "rollback plan", "minScore": 0.0, "maxResults": 4}


@dataclass
class ReadSession:
    """What one ``memdeck mcp`` answered to every read-only call of the tests below
    (a server start is ~2 s of CPU: the MCP SDK's import is half of it)."""

    transport: str
    workspace: Path
    env: dict[str, str]
    tools: list = field(default_factory=list)
    server_name: str = ""
    searches: dict[bool, dict] = field(default_factory=dict)
    refusals: dict[str, str] = field(default_factory=dict)
    pages: list[dict] = field(default_factory=list)
    past_end: str = ""
    small_page: dict = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)
    search_after_bad: dict = field(default_factory=dict)
    append: str = ""


@pytest.fixture(scope="module", params=TRANSPORTS)
def read_session(request: pytest.FixtureRequest, tmp_path_factory) -> ReadSession:
    """One server per transport, asked every read-only question in one session, in the
    order a client might: list, search, refused and paged gets, bad arguments (then a
    search that must still work), and memory_append while it is off."""
    root = tmp_path_factory.mktemp(f"mcp-{request.param}")
    workspace = root / "ws"
    (workspace / "memory").mkdir(parents=True)
    _write_notes(workspace)
    outside = root / "secret.md"
    outside.write_text("# secret\n")
    (workspace / "memory" / "link.md").symlink_to(outside)
    (root / "state").mkdir()
    out = ReadSession(str(request.param), workspace, cli_env(root / "state"))
    paths = [p.replace("{outside}", str(outside)) for p in REFUSALS]

    async def go():
        async with connect(
            out.transport, *ws_args(workspace), env=out.env, name="claude-code"
        ) as c:
            out.tools = (await c.list_tools()).tools
            out.server_name = c.server_info.name if c.server_info else ""
            for explain in (False, True):
                args = {**SEARCH, **({"explain": True} if explain else {})}
                out.searches[explain] = structured(await c.call_tool("memory_search", args))
            for path, key in zip(paths, REFUSALS, strict=True):
                out.refusals[key] = error_text(await c.call_tool("memory_get", {"path": path}))
            args: dict = {"path": LONG}
            while True:
                page = structured(await c.call_tool("memory_get", args))
                out.pages.append(page)
                if not page.get("truncated"):
                    break
                args = {"path": LONG, "from": page["nextFrom"]}
            out.past_end = error_text(await c.call_tool("memory_get", {"path": LONG, "from": 999}))
            out.small_page = structured(
                await c.call_tool("memory_get", {"path": LONG, "from": 5, "lines": 3})
            )
            out.bad = [error_text(await c.call_tool(n, a)) for n, a, _ in BAD_CALLS]
            out.search_after_bad = structured(
                await c.call_tool("memory_search", {"query": "coffee"})
            )
            out.append = error_text(await c.call_tool("memory_append", {"text": "remember this"}))

    run(go)
    return out


def test_lists_the_read_tools_with_schemas_written_for_a_model(read_session) -> None:
    tools = read_session.tools
    by_name = {t.name: t for t in tools}
    assert list(by_name) == ["memory_search", "memory_get", "memory_status"]  # no append
    assert read_session.server_name == "memdeck"
    search = by_name["memory_search"].input_schema
    assert search["required"] == ["query"]
    assert set(search["properties"]) == {"query", "maxResults", "minScore", "explain"}
    assert search["properties"]["maxResults"]["type"] == "integer"
    assert search["properties"]["minScore"]["maximum"] == 1
    get = by_name["memory_get"].input_schema
    assert get["required"] == ["path"] and set(get["properties"]) == {"path", "from", "lines"}
    for tool in tools:
        assert len(tool.description or "") > 150  # says what it is for and what comes back
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        for prop in tool.input_schema["properties"].values():
            assert prop["description"]
    assert "nextFrom" in (by_name["memory_get"].description or "")


@pytest.mark.parametrize("explain", [False, True])
def test_search_answers_exactly_what_the_cli_answers(read_session, explain) -> None:
    out = read_session.searches[explain]
    cli = run_cli(
        "search",
        "rollback plan",
        "-w",
        str(read_session.workspace),
        "--json",
        "--min-score",
        "0",
        "--max-results",
        "4",
        *(["--explain"] if explain else []),
        env=read_session.env,
    )
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    assert out["results"][0]["path"] == "memory/2026-03-01.md"
    if explain:
        # timings differ per process; everything that decides the ranking is equal
        out = json.loads(json.dumps(out))
        for side in (out, expected):
            side["explain"].pop("timings_ms")
            for r in side["results"]:
                r["breakdown"].pop("timings_ms", None)
        assert out["results"][0]["breakdown"]["formula"]
    assert out == expected


def test_each_search_is_recorded_with_the_client_name(
    transport, env, workspace_dir, make_settings
) -> None:
    async def go():
        async with connect(transport, *ws_args(workspace_dir), env=env, name="codex-cli") as c:
            structured(await c.call_tool("memory_search", {"query": "flat white"}))
            structured(await c.call_tool("memory_search", {"query": "zebra xylophone"}))

    run(go)
    from engine.core import Engine

    engine = Engine(make_settings(), provider=None)
    try:
        searches = load_searches(engine.store)
    finally:
        engine.close()
    assert [(s.client, s.query) for s in searches] == [
        ("codex-cli", "zebra xylophone"),  # newest first; a search with no hit is kept too
        ("codex-cli", "flat white"),
    ]
    assert searches[0].results == ()
    assert searches[1].results[0].path == "MEMORY.md" and searches[1].results[0].score > 0


# -- get: refusals and paging ----------------------------------------------------------
def test_get_refuses_paths_outside_memory_with_a_reason(read_session) -> None:
    got = read_session.refusals
    for path, reason in REFUSALS.items():
        assert reason in got[path], (path, got[path])
    assert "memory/YYYY-MM-DD.md" in got["memory/nope.md"]  # tells the model what to try
    assert "refused" in got["../secret.md"]
    for path in (LONG_NAME, "../" * 3000):
        assert len(got[path]) < 400 and path not in got[path], got[path][:500]


def test_get_pages_like_the_cli(read_session) -> None:
    pages, small = read_session.pages, read_session.small_page
    assert [(p["from"], p["lines"], p.get("nextFrom")) for p in pages] == [
        (1, 120, 121),
        (121, 120, 241),
        (241, 60, None),
    ]
    assert pages[0]["text"].endswith("\n\n[More of this file follows: continue with from=121.]")
    text = "\n".join(p["text"].split("\n\n[More of this file")[0] for p in pages)
    assert text + "\n" == (read_session.workspace / LONG).read_text()
    assert f"{LONG} has 300 lines; from=999 is past its end" in read_session.past_end
    assert "from=300 for the last line" in read_session.past_end
    cli = run_cli(
        "get", LONG, "-w", str(read_session.workspace), "--from", "5", "--lines", "3", "--json",
        env=read_session.env,
    )  # fmt: skip
    assert json.loads(cli.stdout) == small
    assert (
        small["text"] == "line 5 of the long project log\nline 6 of the long project log\n"
        "line 7 of the long project log\n\n[More of this file follows: continue with from=8.]"
    )


# -- bad arguments ------------------------------------------------------------------------
def test_bad_arguments_are_tool_errors_that_name_the_fix(read_session) -> None:
    for (name, _, expected), got in zip(BAD_CALLS, read_session.bad, strict=True):
        assert expected in got, (name, got)
    # the server is still fine after all of that
    assert read_session.search_after_bad["results"][0]["path"] == "MEMORY.md"


def test_append_is_off_by_default(read_session) -> None:
    msg = read_session.append
    assert "memory_append is turned off" in msg and '"allowAppend": true' in msg
    memory = read_session.workspace / "memory"
    assert not list(memory.glob(f"{dt.date.today().isoformat()}*.md"))


# -- disconnects -----------------------------------------------------------------------
def test_a_client_that_disconnects_mid_call_leaves_a_clean_shutdown(
    env, workspace_dir, tmp_path
) -> None:
    errlog_path = tmp_path / "server-stderr.txt"

    async def go():
        with open(errlog_path, "w") as errlog:
            async with stdio_client(*ws_args(workspace_dir), env=env, errlog=errlog) as c:
                structured(await c.call_tool("memory_status", {}))
                with anyio.move_on_after(0.001):
                    await c.call_tool("memory_search", {"query": "rollback", "explain": True})
            # leaving the block closes stdin while the call may still be running

    run(go)
    log = errlog_path.read_text()
    assert "Traceback" not in log, log
    assert "memdeck mcp: stopped" in log, log  # the server shut down by itself, not killed


def test_banner_and_memory_status_name_the_store(env, workspace_dir, tmp_path) -> None:
    errlog_path = tmp_path / "server-stderr.txt"

    async def go():
        with open(errlog_path, "w") as errlog:
            async with stdio_client(*ws_args(workspace_dir), env=env, errlog=errlog) as c:
                return structured(await c.call_tool("memory_status", {}))

    status = run(go)
    cli = json.loads(run_cli("status", "--json", *ws_args(workspace_dir), env=env).stdout)
    assert cli["index"].endswith(".memdeck.sqlite")
    assert (status["store"], status["index"], status["store_version"]) == (
        "sqlite",
        cli["index"],
        cli["store_version"],
    )
    assert status["store_version"].startswith("SQLite 3.")
    banner = errlog_path.read_text().splitlines()[0]
    assert f" · index {cli['index']} ({cli['store_version']}) · " in banner, banner


def test_http_on_port_0_names_only_the_port_it_listens_on(env, workspace_dir) -> None:
    with HttpServer(*ws_args(workspace_dir), env=env, bind="127.0.0.1:0") as server:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert server.port > 0 and server.url == url
        log = "".join(server.stderr_lines)
    (banner,) = [line for line in log.splitlines() if " · index " in line]
    assert banner.endswith(f" · {url}"), banner
    assert ":0/" not in log, log


def test_http_client_that_vanishes_mid_call_does_not_disturb_the_others(env, workspace_dir) -> None:
    with HttpServer(*ws_args(workspace_dir), env=env) as server:

        async def go():
            async with server.client("quitter") as quitter:
                with anyio.move_on_after(0.001):
                    await quitter.call_tool("memory_search", {"query": "rollback", "explain": True})
            async with server.client("stayer") as stayer:
                return structured(await stayer.call_tool("memory_search", {"query": "rollback"}))

        out = run(go)
        assert out["results"][0]["path"] == "memory/2026-03-01.md"
        assert server.proc.poll() is None
        assert server.stop() == 143  # SIGTERM: cleaned up, then 128 + 15
    assert "Traceback" not in "".join(server.stderr_lines)


# -- the index rebuilt underneath ----------------------------------------------------------
def test_a_full_reindex_by_another_process_is_picked_up(transport, env, workspace_dir) -> None:
    async def go():
        async with connect(transport, *ws_args(workspace_dir), env=env) as c:
            before = structured(await c.call_tool("memory_search", {"query": "Priya"}))
            write(
                workspace_dir, "memory/2026-03-02.md", "# 2026-03-02\n\n- Priya moved to Lisbon\n"
            )
            r = await anyio.to_thread.run_sync(
                lambda: run_cli("index", "--force", "-w", str(workspace_dir), "--json", env=env)
            )
            assert r.returncode == 0, r.stderr
            after = structured(await c.call_tool("memory_search", {"query": "Priya Lisbon"}))
            status = structured(await c.call_tool("memory_status", {}))
        return before, after, status

    before, after, status = run(go)
    assert [r["path"] for r in before["results"]] == ["memory/2026-03-01.md"]
    assert after["results"][0]["path"] == "memory/2026-03-02.md"
    assert status["files"] == 4 and status["sync"]["started"] is True


# -- HTTP guards --------------------------------------------------------------------------
def test_http_serves_the_same_answers_and_refuses_foreign_origins(env, workspace_dir) -> None:
    with HttpServer(*ws_args(workspace_dir), env=env) as server:
        assert server.url.startswith("http://127.0.0.1:")

        async def go():
            async with server.client("http-agent") as c:
                names = [t.name for t in (await c.list_tools()).tools]
                return names, structured(await c.call_tool("memory_search", {"query": "coffee"}))

        names, out = run(go)
        assert names == ["memory_search", "memory_get", "memory_status"]
        assert out["results"][0]["path"] == "MEMORY.md"

        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        evil = httpx2.post(
            server.url, json=body, headers={**headers, "origin": "http://evil.example"}
        )
        assert evil.status_code == 403
        rebound = httpx2.post(
            server.url, json=body, headers={**headers, "host": f"evil.example:{server.port}"}
        )
        assert rebound.status_code == 421
        same = httpx2.post(
            server.url, json=body, headers={**headers, "origin": f"http://localhost:{server.port}"}
        )
        assert same.status_code not in (403, 421)


def test_non_loopback_bind_needs_a_token(env, workspace_dir) -> None:
    r = subprocess.run(
        [*_cmd(), "--http", "0.0.0.0:0", *ws_args(workspace_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=_repo(),
    )
    assert r.returncode == 1
    assert "MEMDECK_MCP_TOKEN" in r.stderr and "bearer token" in r.stderr
    bad = subprocess.run(
        [*_cmd(), "--http", "localhost:99999", *ws_args(workspace_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=_repo(),
    )
    assert bad.returncode == 1 and "port must be 0–65535" in bad.stderr


def test_a_token_is_enforced_when_configured(env, workspace_dir) -> None:
    token = "t0ken-for-the-test-1234"
    with HttpServer(*ws_args(workspace_dir), env={**env, "MEMDECK_MCP_TOKEN": token}) as server:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert httpx2.post(server.url, json=body, headers=headers).status_code == 401
        wrong = {**headers, "authorization": "Bearer nope"}
        assert httpx2.post(server.url, json=body, headers=wrong).status_code == 401

        async def go():
            async with server.client(headers={"authorization": f"Bearer {token}"}) as c:
                structured(await c.call_tool("memory_search", {"query": "coffee"}))
                return structured(await c.call_tool("memory_status", {}))

        assert run(go)["files"] == 3


def test_a_wildcard_bind_with_a_token_serves_with_the_token(env, workspace_dir) -> None:
    token = "another-t0ken-for-the-test"
    extra = {"MEMDECK_MCP_TOKEN": token}
    with HttpServer(*ws_args(workspace_dir), env={**env, **extra}, bind="0.0.0.0:0") as server:
        assert server.url.startswith("http://0.0.0.0:")
        url = f"http://127.0.0.1:{server.port}/mcp"
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert httpx2.post(url, json=body, headers=headers).status_code == 401
        server.url = url

        async def go():
            async with server.client(headers={"authorization": f"Bearer {token}"}) as c:
                return [t.name for t in (await c.list_tools()).tools]

        assert run(go) == ["memory_search", "memory_get", "memory_status"]


# -- memory_append ----------------------------------------------------------------------------
def test_append_when_enabled_adds_an_entry_and_never_rewrites(
    transport, env, workspace_dir, state_dir
) -> None:
    write_memdeck_settings(state_dir, {"allowAppend": True})
    today = workspace_dir / "memory" / f"{dt.date.today().isoformat()}.md"
    today.write_bytes(b"# today\n\nwritten by hand, no final newline")
    before = today.read_bytes()

    async def go():
        async with connect(transport, *ws_args(workspace_dir), env=env) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            first = structured(
                await c.call_tool("memory_append", {"text": "Kai's birthday is 4 May"})
            )
            empty = error_text(await c.call_tool("memory_append", {"text": "\n\n"}))
            nul = error_text(await c.call_tool("memory_append", {"text": "a\u0000b"}))
            # the appended entry becomes searchable through the running server's sync
            deadline = time.monotonic() + 60
            while True:
                found = structured(await c.call_tool("memory_search", {"query": "Kai birthday"}))
                if found["results"] or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.3)
        return names, first, empty, nul, found

    names, first, empty, nul, found = run(go)
    assert "memory_append" in names
    data = today.read_bytes()
    assert data.startswith(before)  # earlier bytes untouched
    added = data[len(before) :].decode()
    assert added.startswith("\n\n## ") and added.endswith("\n\nKai's birthday is 4 May\n")
    assert first == {
        "path": today.relative_to(workspace_dir).as_posix(),
        "line": 5,
        "appended": True,
    }
    assert "memory_append refused: empty entry" in empty
    # a NUL would make the whole day's log look binary: refused, nothing written
    assert "memory_append refused: the text holds a control character (U+0000)" in nul
    assert b"\x00" not in data
    assert found["results"][0]["path"] == first["path"]


def test_a_broken_mcp_settings_section_is_a_usage_error(env, workspace_dir, state_dir) -> None:
    write_memdeck_settings(state_dir, {"allowAppend": "yes"})
    r = subprocess.run(
        [*_cmd(), *ws_args(workspace_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=_repo(),
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 1
    assert "mcp.allowAppend" in r.stderr and "expected true or false" in r.stderr


def _cmd() -> list[str]:
    import sys

    return [sys.executable, "-m", "engine.cli.main", "mcp"]


def _repo() -> Path:
    from tests.cli_process import REPO

    return REPO


def test_two_servers_on_one_index(env, workspace_dir) -> None:
    """Both serve while both run a sync service on the same index (single-writer lock)."""

    async def go():
        async with (
            stdio_client(*ws_args(workspace_dir), env=env, name="one") as a,
            stdio_client(*ws_args(workspace_dir), env=env, name="two") as b,
        ):
            write(workspace_dir, "memory/2026-03-05.md", "# 2026-03-05\n\n- Zebra crossing fixed\n")
            results = []
            for _ in range(20):
                ra = structured(await a.call_tool("memory_search", {"query": "zebra crossing"}))
                rb = structured(await b.call_tool("memory_search", {"query": "zebra crossing"}))
                results.append((ra["results"], rb["results"]))
                if ra["results"] and rb["results"]:
                    break
                await anyio.sleep(0.5)
            return results

    results = run(go)
    last_a, last_b = results[-1]
    assert last_a and last_a == last_b
    assert last_a[0]["path"] == "memory/2026-03-05.md"


def test_http_serves_many_concurrent_clients_without_errors(
    env, workspace_dir, make_settings
) -> None:
    """30 clients, each its own session, 4 searches each, all at once: no error, no
    "database is locked", every search recorded under its client's name."""
    with HttpServer(*ws_args(workspace_dir), env=env) as server:

        async def one(i: int, out: list) -> None:
            async with server.client(f"agent-{i}") as c:
                for q in ("coffee", "rollback plan", "staging database", "deploy window"):
                    out.append(structured(await c.call_tool("memory_search", {"query": q})))

        async def go():
            out: list = []
            async with anyio.create_task_group() as tg:
                for i in range(30):
                    tg.start_soon(one, i, out)
            return out

        answers = run(go)
        assert len(answers) == 120 and all(a["results"] for a in answers)
        server.stop()
    log = "".join(server.stderr_lines)
    assert "database is locked" not in log and "Traceback" not in log
    from engine.core import Engine

    engine = Engine(make_settings(), provider=None)
    try:
        searches = load_searches(engine.store, limit=1000)
    finally:
        engine.close()
    assert len(searches) == 120
    assert {s.client for s in searches} == {f"agent-{i}" for i in range(30)}
