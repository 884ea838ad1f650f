"""Views that fit and tell the truth: at 80×24 and 60×20 nothing needed is cut
off; refused files are listed once and leave with the file; a missing workspace
says so and offers to create it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, RichLog, Static

from engine.config.loader import load_settings
from engine.core import Engine
from tests.tui.conftest import ready, search, wait_for
from tui.format import location
from tui.screens.dialogs import ConfirmScreen


def drive_at(app: Any, size: tuple[int, int], scenario: Callable[[Pilot], Awaitable[None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await ready(pilot)
            await scenario(pilot)

    asyncio.run(main())


def plain(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_every_why_not_row_is_reachable_at_80x24(hybrid_engine, make_app) -> None:
    app = make_app(hybrid_engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "cat medication")
        pane = app.search_pane
        dropped = pane.outcome.dropped
        assert len(dropped) >= 5
        await pilot.press("f8")
        await pilot.pause()
        whynot = pane.query_one("#whynot", DataTable)
        assert whynot.row_count == len(dropped)
        visible_rows = whynot.scrollable_content_region.height - 1  # minus the header
        assert visible_rows >= 3
        for row in range(len(dropped)):
            assert whynot.cursor_row == row
            top = round(whynot.scroll_offset.y)
            assert top <= row < top + visible_rows, (row, top, visible_rows)
            detail = plain(pane.query_one("#whynot-detail", Static).content)
            c = dropped[row]
            assert location(c.path, c.start_line, c.end_line) in detail
            await pilot.press("down")  # from the search box: the why-not list moves
            await pilot.pause()
        assert whynot.cursor_row == len(dropped) - 1

    drive_at(app, (80, 24), go)


def test_narrow_screens_hide_the_tree_and_keep_locations(hybrid_engine, make_app) -> None:
    app = make_app(hybrid_engine)

    async def go(pilot: Pilot) -> None:
        assert not app.memory_tree.display  # below 100 columns
        await search(pilot, "cat medication")
        results = app.search_pane.query_one("#results", DataTable)
        keys = [str(c.key.value) for c in results.ordered_columns]
        # at 80 columns the factors the fusion used stay; decay and MMR go first
        assert keys == ["rank", "score", "vector", "text", "location"]
        location_col = results.ordered_columns[-1]
        for c in app.search_pane.outcome.results:
            assert len(location(c.path, c.start_line, c.end_line)) <= location_col.content_width
        right = results.region.right
        assert sum(col.get_render_width(results) for col in results.ordered_columns) <= right
        await pilot.press("ctrl+b")
        assert app.memory_tree.display
        await pilot.press("ctrl+b")
        assert not app.memory_tree.display
        await pilot.press("escape")
        await pilot.press("1")  # going to the tree shows it
        assert app.memory_tree.display and app.focused is app.memory_tree

    drive_at(app, (80, 24), go)


def test_monitor_at_60_columns_shows_values(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("escape")
        await pilot.press("4")
        await pilot.pause()
        st = fts_engine.status()
        facts = plain(app.monitor.query_one("#monitor-facts", Static).content, width=56)
        assert f"files      {st.files} indexed / {st.files_on_disk} on disk" in facts
        assert "provider   none  (FTS-only)" in facts
        assert f"chunks     {st.chunks}" in facts
        assert "…" not in facts

    drive_at(app, (60, 20), go)


def test_refused_file_listed_once_not_counted_and_gone_when_deleted(
    engine_factory, make_app, demo_dir
) -> None:
    bad = demo_dir / "memory" / "blob.md"
    bad.write_bytes(b"# x\n\x00\x01binary")
    engine = engine_factory(None)
    app = make_app(engine)

    async def go(pilot: Pilot) -> None:
        st = engine.status()
        assert set(st.file_errors) == {"memory/blob.md"}
        assert st.files == st.files_on_disk - 1  # refused: on disk, not indexed
        monitor = app.monitor
        await pilot.press("escape")
        await pilot.press("4")  # the log renders once it is on screen
        await wait_for(pilot, lambda: monitor.file_errors)
        await pilot.pause()
        log = monitor.query_one("#monitor-errors", RichLog)
        lines = [strip.text for strip in log.lines]
        assert [line for line in lines if "blob.md" in line] == [
            "✗ memory/blob.md: looks binary (NUL bytes), not indexed"
        ]
        # a re-sync publishes the same FileError again: still one line
        await asyncio.to_thread(engine.sync, reason="manual", force=True)
        app.refresh_status()
        await pilot.pause(0.3)
        lines = [strip.text for strip in log.lines]
        assert sum("blob.md" in line for line in lines) == 1
        bad.unlink()
        await asyncio.to_thread(engine.sync, reason="manual")
        app.refresh_status()
        await wait_for(pilot, lambda: not monitor.file_errors)
        assert not any("blob.md" in strip.text for strip in log.lines)
        assert engine.status().files == engine.status().files_on_disk

    drive_at(app, (120, 36), go)


def test_missing_workspace_says_so_and_offers_to_create_it(
    tmp_path: Path, state_dir: Path, make_app
) -> None:
    root = tmp_path / "not-yet"
    settings = load_settings(
        workspace=root, env={"OPENCLAW_STATE_DIR": str(state_dir), "HOME": str(state_dir)}
    )
    engine = Engine(settings)
    app = make_app(engine)

    async def go(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        top = plain(app.query_one("#topbar", Static).content)
        assert "✗ workspace missing" in top and "up to date" not in top
        await pilot.click("#no")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        assert not root.exists()
        from tui.commands import palette_commands

        create = [c for c in palette_commands(app) if c.title.startswith("Workspace: create")]
        assert len(create) == 1
        create[0].callback()
        await wait_for(pilot, lambda: "up to date" in plain(app.query_one("#topbar").content))
        assert (root / "memory").is_dir()

    try:

        async def main() -> None:
            async with app.run_test(size=(120, 36)) as pilot:
                await wait_for(pilot, lambda: app.status is not None)
                await go(pilot)

        asyncio.run(main())
    finally:
        engine.close()


def test_shrinking_to_80x24_lays_out_as_a_fresh_start_there(hybrid_engine, make_app) -> None:
    """Resized from 160×45 to 80×24 (tmux resize-window): the tree goes, the results
    lose the decay and MMR columns, and the status line is redrawn for its new width
    (compact, minScore in view), as at a start at 80×24."""
    app = make_app(hybrid_engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "cat medication")
        status = app.search_pane.query_one("#search-status", Static)
        assert "candidates" in plain(status.content)  # the full wording at 160 columns
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert not app.memory_tree.display
        text = plain(status.content).strip()
        assert "minScore" in text and "candidates" not in text, text
        assert len(text) <= status.size.width, (text, status.size.width)
        results = app.search_pane.query_one("#results", DataTable)
        keys = [str(c.key.value) for c in results.ordered_columns]
        assert keys == ["rank", "score", "vector", "text", "location"]
        # the toggle bar with MMR and decay on keeps every key, why-not's last
        bar = app.search_pane.query_one("#search-toggles", Static)
        await pilot.press("f4", "f5")
        await pilot.pause()
        toggles = plain(bar.content).rstrip()
        assert toggles.endswith("F8 why-not") and len(toggles) <= bar.size.width, toggles
        assert "decay 30d" in toggles and "MMR λ0.70" in toggles
        await pilot.resize_terminal(160, 45)  # and back: the full wording again
        await pilot.pause()
        await pilot.pause()
        assert app.memory_tree.display
        assert "candidates" in plain(status.content)
        assert "decay on 30 d" in plain(bar.content) and "MMR on λ=0.70" in plain(bar.content)

    drive_at(app, (160, 45), go)


def test_top_bar_gives_way_by_whole_fields(hybrid_engine, make_app) -> None:
    """The top bar at 160, 80 and 50 columns: the counts give way first, then the
    provider; a field is shown whole or not at all, and the bar fits its width."""
    from rich.cells import cell_len

    from tui.topbar import COUNTS, PROVIDER

    app = make_app(hybrid_engine)

    async def bar_at(pilot: Pilot, width: int, height: int) -> tuple[str, list[str]]:
        await pilot.resize_terminal(width, height)
        await pilot.pause()
        await pilot.pause()
        shown = plain(app.query_one("#topbar", Static).content).rstrip("\n")
        fields = app._topbar_fields()
        assert cell_len(shown) <= width, (shown, width)
        # whole fields, in their order: the bar is the concatenation of some of them
        kept = [f for f in fields if f.text in shown]
        assert shown == "".join(f.text for f in kept), (shown, fields)
        ranks = {f.text: f.give_way for f in fields}
        return shown, [t for t, r in ranks.items() if r in (COUNTS, PROVIDER) and t in shown]

    async def go(pilot: Pilot) -> None:
        wide, optional = await bar_at(pilot, 160, 45)
        assert len(optional) == 2 and "chunks" in wide and "· hybrid" in wide, wide
        narrow, optional = await bar_at(pilot, 80, 24)
        assert "chunks" not in narrow and len(optional) == 1, narrow  # counts gone
        assert "hybrid" in optional[0] and "up to date" in narrow
        tiny, optional = await bar_at(pilot, 50, 20)
        assert optional == [] and "memdeck" in tiny and "up to date" in tiny, tiny

    drive_at(app, (160, 45), go)


def test_fit_fields_drops_the_highest_rank_rightmost_first() -> None:
    from tui.topbar import BarField, fit_fields, render_bar

    fields = [
        BarField("[name]"),
        BarField("[a:1]", give_way=1),
        BarField("[b:2]", give_way=2),
        BarField("[c:1]", give_way=1),
        BarField("[界面]"),  # two cells a character
    ]
    texts = lambda width: "".join(f.text for f in fit_fields(fields, width))  # noqa: E731
    assert texts(100) == "[name][a:1][b:2][c:1][界面]"
    assert texts(26) == "[name][a:1][c:1][界面]"  # 27 cells: the rank-2 field goes
    assert texts(20) == "[name][a:1][界面]"  # then the rightmost of rank 1
    assert texts(12) == "[name][界面]"
    bar = render_bar(fields, 8)  # the fields that never give way, cut only here
    assert bar.cell_len <= 8 and bar.plain.endswith("…")


def test_the_new_entry_dialog_fits_80x24(fts_engine, make_app) -> None:
    """ctrl+n at 80×24: the dialog (90 columns wide where there is room) stays inside
    the screen, its Append and Cancel buttons in view."""
    from textual.widgets import Button

    from tui.screens.dialogs import AppendEntryScreen

    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, AppendEntryScreen))
        await pilot.pause()
        box = app.screen.query_one(".dialog")
        assert box.region.right <= 80 and box.region.x >= 0, box.region
        for button in app.screen.query(Button):
            region = button.region
            assert region.width > 0 and region.right <= 80 and region.bottom <= 24, region

    drive_at(app, (80, 24), go)
