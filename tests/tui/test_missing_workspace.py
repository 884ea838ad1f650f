"""`memdeck tui DIR` on a folder that does not exist, through the real command line.

The launcher opens the engine the way `memdeck DIR` does (``launch_tui``); only the
terminal check is bypassed and the app runs under Pilot. "Not now" must leave no
trace: no state folder, no index, no lock. "Create it" makes the folder and the
index, and the app ends up in sync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

import engine.cli.main as cli
from tests.tui.conftest import leave, wait_for
from tests.tui.test_views_fit import plain
from tui.screens.dialogs import ConfirmScreen


@pytest.fixture
def launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_app: Callable[..., Any]
) -> Callable[[Path, Callable[[Any, Pilot], Awaitable[None]]], int]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MEMDECK_HOME", str(tmp_path / "memdeck"))
    monkeypatch.setattr(cli, "require_terminal", lambda alternative="": None)

    def run(root: Path, scenario: Callable[[Any, Pilot], Awaitable[None]]) -> int:
        def app_runner(engine: Any) -> int:
            app = make_app(engine)

            async def main() -> None:
                async with app.run_test(size=(120, 36)) as pilot:
                    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                    await scenario(app, pilot)
                    await leave(pilot)

            try:
                asyncio.run(main())
            finally:
                engine.close()
            return 0

        return cli.main(["tui", str(root)], app_runner=app_runner)

    return run


def test_not_now_creates_nothing(tmp_path: Path, launch) -> None:
    root = tmp_path / "not-yet"

    async def decline(app: Any, pilot: Pilot) -> None:
        await pilot.click("#no")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        await wait_for(pilot, lambda: app.status is not None)
        assert "✗ workspace missing" in plain(app.query_one("#topbar").content)

    assert launch(root, decline) == 0
    assert not root.exists()
    state = tmp_path / "state"
    assert not state.exists() or sorted(state.rglob("*")) == [], sorted(state.rglob("*"))


def test_create_it_builds_the_index(tmp_path: Path, launch) -> None:
    root = tmp_path / "not-yet"

    async def accept(app: Any, pilot: Pilot) -> None:
        await pilot.click("#yes")
        await wait_for(pilot, lambda: "up to date" in plain(app.query_one("#topbar").content))
        assert not app.engine.read_only

    assert launch(root, accept) == 0
    assert (root / "memory").is_dir()
    assert list((tmp_path / "state").rglob("*.memdeck.sqlite"))
