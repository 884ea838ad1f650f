"""Promotion queue screen, driven by Pilot on a minimal app over the synthetic month."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from textual.app import App
from textual.widgets import DataTable

from engine.memory.dreaming.config import DeepSettings, DreamingSettings, RecoverySettings
from engine.memory.dreaming.service import Dreamer
from tests.engine import dreaming_month as m
from tui.screens.promotion_queue import PromotionQueueScreen

UTC_CONFIG = DreamingSettings(timezone="UTC")


class QueueApp(App[None]):
    def __init__(self, screen: PromotionQueueScreen) -> None:
        super().__init__()
        self._screen = screen
        self.promoted: list[str] = []

    def on_mount(self) -> None:
        self.push_screen(self._screen)

    def on_promotion_queue_screen_promoted(self, message: PromotionQueueScreen.Promoted) -> None:
        self.promoted.append(message.key)


@pytest.fixture
def month_engine(make_engine, workspace_dir):
    return m.month_engine(make_engine, workspace_dir)


async def _open(engine, config=UTC_CONFIG):
    screen = PromotionQueueScreen(engine, now=m.NOW, config=config)
    app = QueueApp(screen)
    return app, screen


async def _loaded(pilot, screen):
    await pilot.pause()
    assert screen.last_load is not None
    await screen.last_load.wait()
    await pilot.pause()


def test_queue_lists_candidates_with_parts_and_sources(month_engine):
    asyncio.run(_test_queue_lists_candidates_with_parts_and_sources(month_engine))


async def _test_queue_lists_candidates_with_parts_and_sources(month_engine):
    app, screen = await _open(month_engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await _loaded(pilot, screen)
        # Deep proposes F/A (0.872917) and recovery adds R (0.909762); proposed come first.
        assert [p.candidate.text for p in screen.proposals] == [m.F, m.R]
        table = screen.query_one("#queue-table", DataTable)
        assert table.row_count == 2
        assert table.get_row_at(0)[:3] == ["0.873", "6", "5"]
        parts = str(screen.query_one("#queue-parts").render())
        assert "relevance" in parts and "0.833 × 0.30 = 0.2500" in parts
        assert "total" in parts and "0.8729" in parts
        sources = str(screen.query_one("#queue-sources").render())
        assert "memory/2026-03-27.md#L5" in sources and "memory/2026-03-20.md#L5" in sources
        assert "? staging db port" in sources
        preview = str(screen.query_one("#queue-preview").render())
        assert "+## Promoted 2026-03-31" in preview


def test_accept_writes_exactly_the_preview(month_engine, workspace_dir):
    asyncio.run(_test_accept_writes_exactly_the_preview(month_engine, workspace_dir))


async def _test_accept_writes_exactly_the_preview(month_engine, workspace_dir):
    app, screen = await _open(month_engine)
    memory = workspace_dir / "MEMORY.md"
    before = memory.read_text(encoding="utf-8")
    async with app.run_test(size=(140, 40)) as pilot:
        await _loaded(pilot, screen)
        shown = screen.current_preview
        key = screen.current.key
        assert shown is not None and shown.before == before
        await pilot.press("a")
        await pilot.pause()
        after = memory.read_text(encoding="utf-8")
        # The file is byte-for-byte the preview, and only the shown block was added.
        assert after == shown.after
        assert shown.inserted == (
            "",
            "## Promoted 2026-03-31",
            "",
            f"- {m.F} <!-- memdeck {key} memory/2026-03-27.md#L5 -->",
        )
        lines = after.splitlines()
        start = shown.insert_line - 1
        assert lines[start : start + 4] == list(shown.inserted)
        assert "\n".join(lines[:start] + lines[start + 4 :]) + "\n" == before
        assert app.promoted == [key]
        # The queue moved on to R, whose preview now goes under the same dated section.
        assert [p.candidate.text for p in screen.proposals] == [m.R]
        second = screen.current_preview
        assert second.before == after
        assert second.inserted == (
            f"- {m.R} <!-- memdeck {screen.current.key} memory/2026-03-31.md#L3 -->",
        )
        await pilot.press("a")
        await pilot.pause()
        assert memory.read_text(encoding="utf-8") == second.after
    decisions = Dreamer(month_engine, config=UTC_CONFIG).decisions.verdicts()
    assert sorted(decisions.values()) == ["accepted", "accepted"]


def test_reject_is_remembered_and_nothing_is_written(month_engine, workspace_dir):
    asyncio.run(_test_reject_is_remembered_and_nothing_is_written(month_engine, workspace_dir))


async def _test_reject_is_remembered_and_nothing_is_written(month_engine, workspace_dir):
    memory = workspace_dir / "MEMORY.md"
    before = memory.read_bytes()
    app, screen = await _open(month_engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await _loaded(pilot, screen)
        rejected = screen.current.key
        await pilot.press("x")
        await pilot.pause()
        assert [p.candidate.text for p in screen.proposals] == [m.R]
    assert memory.read_bytes() == before
    # A fresh screen (a new session) does not propose the rejected candidate again.
    app2, screen2 = await _open(month_engine)
    async with app2.run_test(size=(140, 40)) as pilot:
        await _loaded(pilot, screen2)
        assert rejected not in [p.key for p in screen2.proposals]
        assert [p.candidate.text for p in screen2.proposals] == [m.R]


def test_changed_memory_file_blocks_the_accept(month_engine, workspace_dir):
    asyncio.run(_test_changed_memory_file_blocks_the_accept(month_engine, workspace_dir))


async def _test_changed_memory_file_blocks_the_accept(month_engine, workspace_dir):
    app, screen = await _open(month_engine)
    memory = workspace_dir / "MEMORY.md"
    async with app.run_test(size=(140, 40)) as pilot:
        await _loaded(pilot, screen)
        memory.write_text(memory.read_text() + "- edited by hand meanwhile\n", encoding="utf-8")
        edited = memory.read_text()
        await pilot.press("a")
        await pilot.pause()
        assert memory.read_text() == edited  # nothing written over the user's edit
        assert len(screen.proposals) == 2
        # The preview was recomputed against the edited file; a second accept works.
        retry = screen.current_preview
        assert retry.before == edited
        await pilot.press("a")
        await pilot.pause()
        assert memory.read_text() == retry.after
        assert retry.after.startswith(edited)
        assert len(screen.proposals) == 1


def test_empty_queue_without_recall(make_engine, workspace_dir):
    asyncio.run(_test_empty_queue_without_recall(make_engine, workspace_dir))


async def _test_empty_queue_without_recall(make_engine, workspace_dir):
    m.write_month(workspace_dir)
    engine = make_engine(provider=None)
    config = dataclasses.replace(
        UTC_CONFIG, deep=DeepSettings(recovery=RecoverySettings(enabled=False))
    )
    app, screen = await _open(engine, config)
    async with app.run_test(size=(120, 30)) as pilot:
        await _loaded(pilot, screen)
        assert screen.proposals == []
        assert "no candidate" in str(screen.query_one("#queue-parts").render())
        await pilot.press("a")  # nothing to accept: a warning, no write
        await pilot.pause()
    assert (workspace_dir / "MEMORY.md").read_text() == m.MEMORY
