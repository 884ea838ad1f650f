"""Agent activity driven by Pilot: agents' searches appear live, newest first, and
Enter replays one in the search pane with the ranking the agent got."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from engine.config.loader import load_settings
from engine.core import Engine
from engine.memory.recall import load_searches
from engine.tools import memory_search
from tests.cli_process import cli_env, run_cli
from tests.integration.test_qmd_backend import QMD_BIN, requires_qmd
from tests.mcp_process import stdio_client, structured
from tests.tui.conftest import drive, wait_for
from tui.screens.agent_activity import AgentActivityScreen, activity_title, returned_summary


@pytest.fixture
def shared_config(state_dir: Path, demo_dir: Path) -> dict[str, str]:
    """openclaw.json naming the demo workspace, so another process (``memdeck mcp``)
    opens the very index file the app has open; FTS-only on both sides."""
    config = {
        "agents": {"defaults": {"workspace": str(demo_dir), "memorySearch": {"provider": "none"}}}
    }
    (state_dir / "openclaw.json").write_text(json.dumps(config))
    return cli_env(state_dir)


@pytest.fixture
def shared_engine(shared_config, engine_factory):
    return engine_factory(None)


def rows(screen: AgentActivityScreen) -> list[list[str]]:
    table = screen.query_one("#activity-table", DataTable)
    return [
        [str(getattr(c, "plain", c)) for c in table.get_row_at(i)] for i in range(table.row_count)
    ]


def test_lists_searches_newest_first_with_client_and_scores(shared_engine, make_app) -> None:
    memory_search(shared_engine, "cat medication", client="claude-code")
    memory_search(shared_engine, "zebra xylophone quartz", client="codex")
    app = make_app(shared_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("f11")
        screen = app.screen
        assert isinstance(screen, AgentActivityScreen)
        await wait_for(pilot, lambda: len(screen.searches) == 2)
        await pilot.pause()
        table = rows(screen)
        assert [r[1:3] for r in table] == [
            ["codex", "zebra xylophone quartz"],
            ["claude-code", "cat medication"],
        ]
        assert table[0][3] == "no results"
        first_hit = screen.searches[1].results[0]
        assert table[1][3].startswith(f"{first_hit.path} {first_hit.score:.2f}")
        title = str(screen.query_one("#activity-title", Static).render())
        assert "2 searches by claude-code, codex" in title
        detail = str(screen.query_one("#activity-detail", Static).render())
        assert "codex at " in detail and "nothing scored above minScore" in detail
        await pilot.press("down")
        detail = str(screen.query_one("#activity-detail", Static).render())
        assert f"{first_hit.path}:{first_hit.start_line}-{first_hit.end_line}" in detail
        await pilot.press("escape")
        assert not isinstance(app.screen, AgentActivityScreen)

    drive(app, go)


def test_searches_from_an_mcp_server_process_appear_and_replay_the_same_ranking(
    shared_engine, make_app, shared_config, demo_dir
) -> None:
    app = make_app(shared_engine)
    got: dict = {}

    async def go(pilot: Pilot) -> None:
        await pilot.press("f11")
        screen = app.screen
        assert isinstance(screen, AgentActivityScreen)
        await wait_for(pilot, lambda: screen.last_load is not None and screen.last_load.is_finished)
        assert screen.searches == []
        assert "No agent searches yet" in str(screen.query_one("#activity-detail").render())
        # a real agent: the SDK client talking to `memdeck mcp` in another process
        async with stdio_client(env=shared_config, name="pilot-agent") as client:
            got["mcp"] = structured(
                await client.call_tool(
                    "memory_search", {"query": "staging database", "maxResults": 2, "minScore": 0}
                )
            )
        await wait_for(pilot, lambda: len(screen.searches) == 1, timeout=30)
        await pilot.pause()
        assert rows(screen)[0][1:3] == ["pilot-agent", "staging database"]
        await pilot.press("enter")
        pane = app.search_pane
        await wait_for(pilot, lambda: pane.replay_verdict is not None, timeout=20)
        assert pane.replay_verdict == "same"
        assert pane.query_one("#search-input").value == "staging database"
        got["pane"] = [
            (c.path, c.start_line, c.end_line, round(c.score, 6)) for c in pane.outcome.results
        ]
        got["dropped"] = len(pane.outcome.dropped)
        got["breakdown"] = str(pane.query_one("#breakdown").render())

    drive(app, go)
    agent = [(r["path"], r["startLine"], r["endLine"], r["score"]) for r in got["mcp"]["results"]]
    assert agent and got["pane"] == agent  # the same ranking, score for score
    assert len(agent) == 2 and got["dropped"] == 1  # maxResults 2 replayed: the rest is why-not
    [recorded] = load_searches(shared_engine.store)
    assert (recorded.client, recorded.max_results, recorded.min_score) == ("pilot-agent", 2, 0.0)


def test_a_replay_after_the_files_changed_says_so(shared_engine, make_app, demo_dir) -> None:
    memory_search(shared_engine, "cat medication", client="claude-code")
    (demo_dir / "memory" / "2026-03-14.md").write_text(
        "# 2026-03-14\n\n- The cat medication is now given twice a day, cat medication dose\n"
    )
    shared_engine.sync(reason="test")
    app = make_app(shared_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("f11")
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.searches) == 1)
        await pilot.press("enter")
        pane = app.search_pane
        await wait_for(pilot, lambda: pane.replay_verdict is not None, timeout=20)
        assert pane.replay_verdict == "differs"

    drive(app, go)


def test_the_header_fits_80_columns(shared_engine, make_app) -> None:
    """At 80×24 the header line keeps the count, the clients and the Enter hint."""
    memory_search(shared_engine, "cat medication", client="claude-code")
    memory_search(shared_engine, "zebra xylophone quartz", client="codex")
    app = make_app(shared_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.resize_terminal(80, 24)
        await pilot.press("f11")
        screen = app.screen
        assert isinstance(screen, AgentActivityScreen)
        await wait_for(pilot, lambda: len(screen.searches) == 2)
        await pilot.pause()
        title = screen.query_one("#activity-title", Static)
        text = str(title.render())
        assert text == "Agent activity — 2 searches by claude-code, codex · Enter replays"
        assert len(text) <= title.content_size.width == 78
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        assert str(title.render()).endswith("· Enter replays in the search pane")

    drive(app, go)


def test_a_long_client_name_is_shown_whole(shared_engine, make_app) -> None:
    """The client column widens to the longest name (up to a quarter of the width)."""
    memory_search(shared_engine, "cat medication", client="visual-studio-code-agent")
    app = make_app(shared_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.resize_terminal(160, 45)
        await pilot.press("f11")
        screen = app.screen
        assert isinstance(screen, AgentActivityScreen)
        await wait_for(pilot, lambda: len(screen.searches) == 1)
        await pilot.pause()
        table = screen.query_one("#activity-table", DataTable)
        assert table.columns[ColumnKey("client")].width >= len("visual-studio-code-agent")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert table.columns[ColumnKey("client")].width == 20  # a quarter of 80

    drive(app, go)


def test_activity_title_gives_way_in_order() -> None:
    clients = ["claude-code", "codex", "openclaw-main"]
    full = activity_title(12, clients, 200)
    assert full == (
        "Agent activity — 12 searches by claude-code, codex, openclaw-main"
        " · newest first · Enter replays in the search pane"
    )
    assert activity_title(12, clients, 78) == (
        "Agent activity — 12 searches by claude-code, codex, openclaw-main"
    )
    assert (
        activity_title(12, clients, 60)
        == "Agent activity — 12 searches by 3 clients · Enter replays"
    )
    assert activity_title(1, ["codex"], 20) == "Agent activity — 1 search"
    assert activity_title(0, [], 78) == (
        "Agent activity — 0 searches · newest first · Enter replays in the search pane"
    )


def test_returned_summary_is_cut_to_width(shared_engine) -> None:
    memory_search(shared_engine, "cat medication", client="x")
    [s] = load_searches(shared_engine.store)
    assert returned_summary(s, width=200) == f"MEMORY.md {s.results[0].score:.2f}"
    assert returned_summary(s, width=8) == f"…md {s.results[0].score:.2f}"  # the score stays


def test_returned_summary_counts_what_does_not_fit() -> None:
    from engine.memory.recall import RecallSearch, ReturnedHit

    hits = (
        ReturnedHit("memory/projects/atlas.md", 3, 9, 0.6912),
        ReturnedHit("memory/2026-03-14.md", 1, 4, 0.5),
        ReturnedHit("MEMORY.md", 1, 2, 0.41),
    )
    s = RecallSearch(1, 0.0, "codex", "q", "hybrid", 6, 0.35, hits)
    full = "memory/projects/atlas.md 0.69 · memory/2026-03-14.md 0.50 · MEMORY.md 0.41"
    assert returned_summary(s, width=200) == full
    assert returned_summary(s, width=62) == (
        "memory/projects/atlas.md 0.69 · memory/2026-03-14.md 0.50 · +1"
    )
    assert returned_summary(s, width=34) == "memory/projects/atlas.md 0.69 · +2"
    narrow = returned_summary(s, width=25)
    assert len(narrow) <= 25 and narrow.endswith("atlas.md 0.69 +2") and narrow[0] == "…"


def test_the_apps_settings_reader_accepts_the_mcp_section() -> None:
    from tui.settings import parse_settings

    parsed = parse_settings({"mcp": {"allowAppend": True}, "zz": 1})
    assert parsed.problems == (
        "settings.json: zz: unknown key (known: theme, keymap, layout, profile, mcp, store)",
    )


@requires_qmd
def test_qmd_searches_from_an_mcp_process_appear_and_replay_beside_the_builtin_ranking(
    state_dir, demo_dir, make_app, engines
) -> None:
    """Under ``memory.backend = "qmd"`` the agent's answer came from the real qmd: the row
    names qmd, and Enter runs the same query on memdeck's builtin index beside it."""
    config = state_dir / "openclaw.json"
    config.write_text(
        json.dumps(
            {
                "agents": {"defaults": {"workspace": str(demo_dir)}},
                "memory": {
                    "backend": "qmd",
                    "qmd": {"command": str(QMD_BIN)},
                    "search": {"provider": "none"},
                },
            }
        )
    )
    env = cli_env(state_dir)
    indexed = run_cli("index", env=env)  # the builtin index and qmd's collections
    assert indexed.returncode == 0, indexed.stderr
    engine = Engine(load_settings(config_path=config, env=env), provider=None, env=env)
    engines.append(engine)
    assert engine.qmd is not None
    app = make_app(engine)
    got: dict = {}

    async def go(pilot: Pilot) -> None:
        await pilot.press("f11")
        screen = app.screen
        assert isinstance(screen, AgentActivityScreen)
        await wait_for(pilot, lambda: screen.last_load is not None and screen.last_load.is_finished)
        async with stdio_client(env=env, name="qmd-agent") as client:
            got["mcp"] = structured(
                await client.call_tool("memory_search", {"query": "staging rehearsal"})
            )
        await wait_for(pilot, lambda: len(screen.searches) == 1, timeout=30)
        await pilot.pause()
        assert rows(screen)[0][1:3] == ["qmd-agent", "staging rehearsal"]
        detail = str(screen.query_one("#activity-detail", Static).render())
        got["detail"] = detail
        await pilot.press("enter")
        pane = app.search_pane
        await wait_for(pilot, lambda: pane.replay_verdict is not None, timeout=20)
        got["verdict"] = pane.replay_verdict
        got["pane"] = [c.path for c in pane.outcome.results]
        got["options"] = (pane.options.max_results, pane.options.min_score)
        got["notes"] = [n.message for n in app._notifications]

    drive(app, go)
    assert got["mcp"]["backend"] == "qmd" and got["mcp"]["results"]
    first = got["mcp"]["results"][0]
    assert f"qmd ({got['mcp']['mode']})" in got["detail"]
    assert f"{first['path']}:{first['startLine']}-{first['endLine']}" in got["detail"]
    assert "qmd answered this search" in got["detail"]
    assert got["verdict"] == "qmd"
    [recorded] = load_searches(engine.store)
    assert recorded.backend == "qmd" and recorded.min_score == 0.0
    assert got["options"] == (recorded.max_results, 0.0)  # replayed with qmd's options
    qmd_files = {r["path"] for r in got["mcp"]["results"]}
    shared = len(qmd_files & set(got["pane"]))
    assert got["pane"] and (
        f"shown is memdeck's own ranking of the same query ({shared} of the "
        f"{len(qmd_files)} files it returned are in it)"
    ) in " ".join(got["notes"])
