"""Snapshot tests: every screen at 120×36, in the dark and the light theme.

The clock is frozen, paths are shown relative to the test's temp dir, cursors do
not blink, the progress bar shows no ETA and the monitor's numbers come from
events replayed through the real bus, so the pictures are stable. They pin the
layout; the behaviour is pinned by the Pilot tests. Update with
``pytest tests/tui/test_snapshots.py --snapshot-update`` and refresh the README
pictures with ``python tests/tui/screenshots.py``.
"""

from __future__ import annotations

import threading

import pytest

from engine.events import SearchTimed, SyncDone, SyncProgress, SyncStarted
from tests.engine.concept_embedder import ConceptEmbedder
from tests.tui.conftest import NOW, SIZE, ready, search, wait_for
from tui.screens.dialogs import ExternalChangeScreen
from tui.screens.help import HelpScreen
from tui.settings import UISettings

THEMES = ("memdeck-dark", "memdeck-light")
T0 = NOW.timestamp()


async def _search(pilot) -> None:
    await ready(pilot)
    await search(pilot, "cat medication")


async def _whynot(pilot) -> None:
    await _search(pilot)
    await pilot.press("f8")
    await pilot.pause()


async def _editor(pilot) -> None:
    await _search(pilot)
    await pilot.press("enter")
    await wait_for(pilot, lambda: pilot.app.editor_pane.rel == "MEMORY.md")
    await pilot.press("down", "down", "down")


async def _monitor(pilot) -> None:
    app = pilot.app
    await ready(pilot)
    bus = app.engine.bus
    published = threading.Event()

    def replay() -> None:
        for i, seconds in enumerate((0.8, 0.35, 2.4, 0.3, 0.42, 0.31, 1.1)):
            bus.publish(SyncDone("watch", False, 2, 0, 3, 9, seconds, at=T0 - 600 + 60 * i))
        for ms in (14.0, 9.5, 11.2, 30.1, 8.7, 9.9, 12.4, 10.3, 9.1, 16.0, 8.8, 10.1):
            bus.publish(SearchTimed("q", "hybrid", ms))
        bus.publish(SyncStarted(reason="reindex", full=True))
        bus.publish(
            SyncProgress("embed", 41, 120, 312, 600, cache_hits=85, rate=96.0, eta_seconds=3.0)
        )
        published.set()

    threading.Thread(target=replay).start()
    await wait_for(pilot, published.is_set)
    monitor = app.monitor
    await wait_for(pilot, lambda: monitor.progress is not None and len(monitor.search_ms) == 12)
    await pilot.press("escape", "4")
    await pilot.pause()


async def _help(pilot) -> None:
    await ready(pilot)
    await pilot.press("escape", "f1")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))


async def _external_change(pilot) -> None:
    app = pilot.app
    await ready(pilot)
    app.open_location("memory/gtd/NEXT.md", 3)
    await pilot.pause()
    await pilot.press(*"Call the plumber ")
    path = app.engine.workspace.root / "memory" / "gtd" / "NEXT.md"
    path.write_text("# Next actions\n\n- [ ] written by the agent meanwhile\n", encoding="utf-8")
    app.editor_pane.check_external_change()
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: isinstance(app.screen, ExternalChangeScreen))


SCREENS = {
    "search": _search,
    "whynot": _whynot,
    "editor": _editor,
    "monitor": _monitor,
    "help": _help,
    "external-change": _external_change,
}


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen(screen, theme, engine_factory, make_app, snap_compare) -> None:
    # The fusion is pinned so that a change of the engine's default fusion does not
    # redraw every picture; the pictures pin the layout, not the ranking defaults.
    engine = engine_factory(ConceptEmbedder(), **{"query.hybrid.fusion": "normalized"})
    app = make_app(engine, ui_settings=UISettings(theme=theme))
    assert snap_compare(app, terminal_size=SIZE, run_before=SCREENS[screen])
