"""``memdeck mcp`` under ``memory.backend = "qmd"``: the real qmd answers, and each
search is still recorded for the app's Agent activity (and for dreaming).

Real ``qmd`` (scripts/install_qmd.sh), a real ``memdeck mcp`` subprocess, the MCP
SDK's own client over stdio and over HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from engine.config.loader import load_settings
from engine.core import Engine
from engine.memory.recall import load_events, load_searches
from tests.cli_process import cli_env, run_cli
from tests.integration.test_qmd_backend import FILES, QMD_BIN, requires_qmd, write_tree
from tests.mcp_process import HttpServer, stdio_client, structured

pytestmark = requires_qmd


def qmd_config(state: Path) -> Path:
    """openclaw.json: qmd answers memory_search; the builtin index is FTS-only."""
    config = state / "openclaw.json"
    config.write_text(
        json.dumps(
            {
                "memory": {
                    "backend": "qmd",
                    "qmd": {"command": str(QMD_BIN)},
                    "search": {"provider": "none"},
                },
            }
        )
    )
    return config


@pytest.fixture
def qmd_world(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(workspace, config, env) with qmd's collections built by ``memdeck index``."""
    ws, state = tmp_path / "ws", tmp_path / "state"
    write_tree(ws, FILES)
    state.mkdir()
    config = qmd_config(state)
    env = cli_env(state)
    r = run_cli("index", "-w", str(ws), env=env)
    assert r.returncode == 0, r.stderr
    return ws, config, env


def recorded(ws: Path, config: Path, env: dict[str, str]) -> Engine:
    settings = load_settings(config_path=config, workspace=ws, env=env)
    return Engine(settings, provider=None, env=env)


def test_qmd_searches_through_mcp_are_agent_activity(qmd_world) -> None:
    ws, config, env = qmd_world

    async def go():
        async with stdio_client("--workspace", str(ws), env=env, name="claude-code") as c:
            zebra = structured(await c.call_tool("memory_search", {"query": "zebra tables"}))
            budget = structured(
                await c.call_tool(
                    "memory_search", {"query": "quarterly budget", "maxResults": 1, "minScore": 0.1}
                )
            )
            none = structured(await c.call_tool("memory_search", {"query": "xylophone quasar"}))
        return zebra, budget, none

    zebra, budget, none = anyio.run(go)
    assert zebra["backend"] == "qmd" and budget["backend"] == "qmd"
    assert zebra["results"][0]["path"] == "memory/projects/zebra.md"
    assert budget["results"][0]["path"] == "memory/2026-03-14.md"
    assert none["results"] == []

    engine = recorded(ws, config, env)
    try:
        searches = load_searches(engine.store)
        events = load_events(engine.store)
    finally:
        engine.close()
    assert [(s.client, s.query, s.backend) for s in searches] == [
        ("claude-code", "xylophone quasar", "qmd"),  # newest first; no hits is kept too
        ("claude-code", "quarterly budget", "qmd"),
        ("claude-code", "zebra tables", "qmd"),
    ]
    assert searches[2].mode == f"qmd:{zebra['mode']}"
    for search, answer in ((searches[2], zebra), (searches[1], budget)):
        assert [(h.path, h.start_line, h.end_line, h.score) for h in search.results] == [
            (r["path"], r["startLine"], r["endLine"], round(r["score"], 6))
            for r in answer["results"]
        ]
    # the options qmd ran with: maxResults capped by qmd's limits, minScore as asked
    assert (searches[1].max_results, searches[1].min_score) == (1, 0.1)
    assert searches[2].min_score == 0.0
    # each hit is also recall evidence for dreaming, like a builtin search's hits
    assert {(e.query, e.path) for e in events} >= {
        ("zebra tables", "memory/projects/zebra.md"),
        ("quarterly budget", "memory/2026-03-14.md"),
    }


def test_qmd_searches_over_http_are_recorded_per_client(qmd_world) -> None:
    ws, config, env = qmd_world
    with HttpServer("--workspace", str(ws), env=env) as server:

        async def one(name: str, query: str) -> dict:
            async with server.client(name) as c:
                return structured(await c.call_tool("memory_search", {"query": query}))

        async def go() -> list[dict]:
            out: list[dict] = []

            async def run_one(name: str, query: str) -> None:
                out.append(await one(name, query))

            async with anyio.create_task_group() as tg:
                tg.start_soon(run_one, "agent-a", "zebra tables")
                tg.start_soon(run_one, "agent-b", "espresso stand-ups")
            return out

        answers = anyio.run(go)
        assert {a["backend"] for a in answers} == {"qmd"}
        server.stop()
    assert "database is locked" not in "".join(server.stderr_lines)
    engine = recorded(ws, config, env)
    try:
        searches = load_searches(engine.store)
    finally:
        engine.close()
    assert sorted((s.client, s.query, s.backend) for s in searches) == [
        ("agent-a", "zebra tables", "qmd"),
        ("agent-b", "espresso stand-ups", "qmd"),
    ]
    by_client = {s.client: s for s in searches}
    assert by_client["agent-a"].results[0].path == "memory/projects/zebra.md"
    assert by_client["agent-b"].results[0].path == "MEMORY.md"


def test_cli_searches_under_qmd_are_recorded_too(qmd_world) -> None:
    ws, config, env = qmd_world
    r = run_cli("search", "zebra tables", "-w", str(ws), "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == "qmd"
    engine = recorded(ws, config, env)
    try:
        [search] = load_searches(engine.store)
    finally:
        engine.close()
    assert (search.client, search.backend) == ("cli", "qmd")
    assert search.results[0].path == "memory/projects/zebra.md"
