"""Sessions view screen, driven by Pilot on a minimal app."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

from textual.app import App
from textual.widgets import DataTable

from tui.screens.sessions_view import SessionsViewScreen, usage_bar


class SessionsApp(App[None]):
    def __init__(self, screen: SessionsViewScreen) -> None:
        super().__init__()
        self._screen = screen

    def on_mount(self) -> None:
        self.push_screen(self._screen)


def _msg(entry_id: str, tokens: int) -> str:
    text = "x" * (tokens * 4 - len("user: "))
    return json.dumps(
        {"type": "message", "id": entry_id, "message": {"role": "user", "content": text}}
    )


def _setup(state_dir):
    (state_dir / "openclaw.json").write_text(
        json.dumps(
            {
                "agents": {
                    "defaults": {
                        "compaction": {
                            "reserveTokensFloor": 1000,
                            "memoryFlush": {"softThresholdTokens": 500},
                        }
                    }
                }
            }
        )
    )
    d = state_dir / "agents" / "main" / "sessions"
    d.mkdir(parents=True)
    (d / "quiet.jsonl").write_text(_msg("a", 100) + "\n")
    (d / "busy.jsonl").write_text(_msg("a", 750) + "\n")
    store = {
        "agent:main:quiet": {"sessionId": "quiet", "contextTokens": 2000},
        "agent:main:busy": {"sessionId": "busy", "contextTokens": 2000},
    }
    (d / "sessions.json").write_text(json.dumps(store))
    return d


def test_usage_bar():
    assert usage_bar(250, 500, width=10) == "█████░░░░░  50%"
    assert usage_bar(900, 500, width=10) == "██████████ 180%"
    assert usage_bar(1, 0) == "-"


async def _loaded(pilot, screen):
    await pilot.pause()
    await screen.last_load.wait()
    await pilot.pause()


def test_sessions_view_shows_threshold_and_marks_flush(make_engine, state_dir):
    asyncio.run(_run(make_engine, state_dir))


async def _run(make_engine, state_dir):
    d = _setup(state_dir)
    engine = make_engine(provider=None)
    screen = SessionsViewScreen(engine, day=dt.date(2026, 3, 15))
    async with SessionsApp(screen).run_test(size=(140, 30)) as pilot:
        await _loaded(pilot, screen)
        table = screen.query_one("#sessions-table", DataTable)
        assert table.row_count == 2
        rows = {str(table.get_row_at(i)[0]): table.get_row_at(i) for i in range(2)}
        # threshold 2000 − 1000 − 500 = 500; busy 750 tokens (150%), quiet 100 (20%)
        busy, quiet = rows["agent:main:busy"], rows["agent:main:quiet"]
        assert busy[1:3] == ["750", "500"] and str(busy[5]) == "due"
        assert quiet[1:3] == ["100", "500"] and str(quiet[5]) == "below-threshold"
        assert busy[3].endswith("150%") and quiet[3].endswith(" 20%")
        title = str(screen.query_one("#sessions-title").render())
        assert "1 need a flush" in title
        detail = str(screen.query_one("#sessions-detail").render())
        assert "threshold = 200,000" not in detail and "2,000 − 1,000 − 500 = 500" in detail
        assert "memory/2026-03-15.md" in detail  # the dated prompt

        busy_row = next(i for i in range(2) if str(table.get_row_at(i)[0]) == "agent:main:busy")
        table.move_cursor(row=busy_row)
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        await screen.last_load.wait()
        await pilot.pause()
        saved = json.loads((d / "sessions.json").read_text())
        assert saved["agent:main:busy"]["memoryFlushCompactionCount"] == 0
        states = {d_.key: d_.state for d_ in screen.decisions}
        assert states == {"agent:main:busy": "flushed", "agent:main:quiet": "below-threshold"}
        # A second flush in the same cycle is refused and changes nothing.
        before = (d / "sessions.json").read_text()
        table.move_cursor(row=[x.key for x in screen.decisions].index("agent:main:busy"))
        await pilot.press("f")
        await pilot.pause()
        assert (d / "sessions.json").read_text() == before
