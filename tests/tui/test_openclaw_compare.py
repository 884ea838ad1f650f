"""alt+o: the search pane's query ranked by OpenClaw 2026.9.6 beside memdeck's ranking."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from tests.tui.conftest import drive, search, wait_for
from tui.screens.openclaw_compare import OpenClawCompareScreen, Row, rank_move


def test_rank_moves() -> None:
    memdeck = [Row("a.md", 1, 2, 0.9, ""), Row("b.md", 1, 5, 0.8, ""), Row("c.md", 3, 4, 0.7, "")]
    assert rank_move(Row("b.md", 1, 5, 1, ""), 1, memdeck) == "▲1"
    assert rank_move(Row("a.md", 1, 2, 1, ""), 3, memdeck) == "▼2"
    assert rank_move(Row("c.md", 3, 4, 1, ""), 3, memdeck) == "="
    assert rank_move(Row("c.md", 4, 9, 1, ""), 1, memdeck) == "≈3"
    assert rank_move(Row("d.md", 1, 1, 1, ""), 1, memdeck) == "new"


def test_alt_o_shows_both_rankings_with_moves(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "atlas")
        memdeck = app.search_pane.outcome.results
        await pilot.press("alt+o")
        await wait_for(pilot, lambda: isinstance(app.screen, OpenClawCompareScreen))
        screen = app.screen
        await wait_for(pilot, lambda: bool(screen.openclaw_rows) or "failed" in screen.note)
        expected = fts_engine.openclaw_searcher().outcome("atlas")
        assert [(r.path, r.start, r.end) for r in screen.openclaw_rows] == [
            (c.path, c.start_line, c.end_line) for c in expected.results
        ]
        left = screen.query_one("#memdeck-table", DataTable)
        right = screen.query_one("#openclaw-table", DataTable)
        assert left.row_count == len(memdeck)
        assert right.row_count == len(expected.results)
        first = [str(cell) for cell in right.get_row_at(0)]
        assert first[3] == f"{expected.results[0].path}:{expected.results[0].start_line}-" + str(
            expected.results[0].end_line
        )
        assert first[2] == f"{expected.results[0].score:.4f}"
        assert first[1] == rank_move(screen.openclaw_rows[0], 1, screen.memdeck_rows)
        # highlighting a row of either side explains it with that side's breakdown
        assert len(expected.results) >= 2
        right.focus()
        await pilot.press("down")
        detail = screen.query_one("#compare-detail", Static)
        await wait_for(pilot, lambda: str(detail.content).startswith("OpenClaw ·"))
        assert expected.results[1].formula() in str(detail.content)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, OpenClawCompareScreen))

    drive(app, go)


def test_alt_o_without_a_query_says_so(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("alt+o")
        await pilot.pause()
        assert not isinstance(app.screen, OpenClawCompareScreen)

    drive(app, go)
