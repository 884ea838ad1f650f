"""Fixtures for driving ``MemdeckApp`` with Pilot: real engines on temp workspaces.

Most tests use an FTS-only engine or the hand-checkable ``ConceptEmbedder``
(real store, real sqlite-vec, real pipeline; only the model is tiny). The clock
is frozen, paths are shown relative to the test's temp dir and cursors do not
blink, so the same app gives the same screen on every run.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from engine.cli.demo import create_demo_workspace
from engine.core import Engine
from tests.engine.concept_embedder import ConceptEmbedder
from tui.app import MemdeckApp
from tui.settings import UISettings

TODAY = dt.date(2026, 3, 15)
NOW = dt.datetime(2026, 3, 15, 9, 30, tzinfo=dt.UTC)
SIZE = (120, 36)


def frozen_clock() -> dt.datetime:
    return NOW


@pytest.fixture
def demo_dir(workspace_dir: Path) -> Path:
    create_demo_workspace(workspace_dir, today=TODAY)
    return workspace_dir


@pytest.fixture
def engine_factory(
    make_engine: Callable[..., Engine], demo_dir: Path, state_dir: Path
) -> Callable[..., Engine]:
    """An engine on the demo workspace, synced; ``provider`` None (FTS-only) by default."""

    def make(provider: Any = None, *, sync: bool = True, **ms: Any) -> Engine:
        ms.setdefault("store.path", state_dir / "memory" / "main.memdeck.sqlite")
        engine = make_engine(provider=provider, **ms)
        if sync:
            engine.sync(reason="start")
        return engine

    return make


@pytest.fixture
def fts_engine(engine_factory: Callable[..., Engine]) -> Engine:
    return engine_factory(None)


@pytest.fixture
def hybrid_engine(engine_factory: Callable[..., Engine]) -> Engine:
    return engine_factory(ConceptEmbedder())


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., MemdeckApp]:
    def make(engine: Engine, **kwargs: Any) -> MemdeckApp:
        kwargs.setdefault("ui_settings", UISettings())
        kwargs.setdefault("clock", frozen_clock)
        kwargs.setdefault("display_home", tmp_path)
        kwargs.setdefault("blink", False)
        kwargs.setdefault("env", {"HOME": str(tmp_path), "MEMDECK_HOME": str(tmp_path / "mdh")})
        return MemdeckApp(engine, **kwargs)

    return make


def drive(app: MemdeckApp, scenario: Callable[[Any], Awaitable[None]]) -> None:
    """Run ``app`` headless at the fixed size, wait until it is ready, play ``scenario``."""

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await scenario(pilot)
            await leave(pilot)

    asyncio.run(main())


async def leave(pilot: Any, timeout: float = 10.0) -> None:
    """Quit the way a user does (``app.exit``: background work stopped first) and let
    the app's message loop end before the harness tears the screen down. Leaving
    ``run_test`` with the loop still running would tear the screen down under
    messages the app is still handling, which a real run never does."""
    app = pilot.app
    if app.is_running and not app.leaving:
        app.exit(0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while app.is_running:
        if loop.time() > deadline:
            raise AssertionError("the app did not finish exiting")
        await asyncio.sleep(0.01)


async def settle(pilot: Any, groups: tuple[str, ...] = ("sync", "status", "tree")) -> None:
    """Wait until the app's background loads are done: each finished sync starts a
    status and a tree load, so wait again until none of ``groups`` is pending."""
    app = pilot.app
    while busy := [w for w in app.workers if w.group in groups and not w.is_finished]:
        await asyncio.gather(*(w.wait() for w in busy), return_exceptions=True)
        await pilot.pause()


async def wait_for(pilot: Any, predicate: Callable[[], object], timeout: float = 10.0) -> None:
    """Let the app run until ``predicate()`` is true (workers live in threads)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {predicate}")
        await pilot.pause(0.02)


async def ready(pilot: Any) -> None:
    """Status and tree loaded: what every screen shows once started."""
    app = pilot.app
    await wait_for(pilot, lambda: app.status is not None and bool(app.memory_tree.states))
    await pilot.pause()


async def search(pilot: Any, query: str) -> None:
    """Type ``query`` into the search box (focusing it with /) and wait for its results."""
    app = pilot.app
    pane = app.search_pane
    if app.focused is not pane.query_one("#search-input"):
        await pilot.press("slash")
    await pilot.press(*query)
    await wait_for(pilot, lambda: pane.outcome is not None and pane.outcome.query == query)
    await pilot.pause()
