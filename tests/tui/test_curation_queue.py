"""The curation queue beside the editor (alt+m), driven by Pilot: the suggestions and
their evidence, and each action (merge, delete, move) shown as a diff, written,
indexed at once and undone; a file changed meanwhile is reported, never overwritten."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Checkbox, Input

from tests.engine.test_curation import DAILY, MEMORY
from tests.tui.conftest import drive, wait_for
from tui.screens.curation_preview import CurationPreviewScreen
from tui.widgets.curation_queue import CurationQueue


@pytest.fixture
def curate_dir(demo_dir: Path) -> Path:
    (demo_dir / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    (demo_dir / "memory" / "2026-03-01.md").write_text(DAILY, encoding="utf-8")
    return demo_dir


def record_notices(app: Any, notices: list[Any]) -> None:
    """Keep every notification's message in ``notices`` (and still show it)."""
    original_notify = app.notify

    def notify(message: Any, **kw: Any) -> None:
        notices.append(message)
        original_notify(message, **kw)

    app.notify = notify


async def open_queue(pilot: Pilot) -> CurationQueue:
    app = pilot.app
    await pilot.press("alt+m")
    queue = app.query_one("#curation", CurationQueue)
    await wait_for(pilot, lambda: queue.found is not None)
    await pilot.pause()
    return queue


async def select(pilot: Pilot, queue: CurationQueue, kind: str, line: int) -> None:
    row = next(
        i for i, s in enumerate(queue.suggestions) if s.kind == kind and s.entry.start_line == line
    )
    queue.table.move_cursor(row=row)
    await pilot.pause()


async def act(pilot: Pilot, queue: CurationQueue, key: str) -> CurationPreviewScreen:
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, CurationPreviewScreen))
    screen = pilot.app.screen
    assert isinstance(screen, CurationPreviewScreen)
    return screen


async def apply_shown(pilot: Pilot, queue: CurationQueue) -> None:
    before = queue.indexed
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: queue.indexed is not before and not queue.busy)
    await wait_for(pilot, lambda: queue.found is not None and not queue.workers)
    await pilot.pause()


def test_queue_lists_the_suggestions_beside_the_editor(curate_dir, engine_factory, make_app):
    app = make_app(engine_factory(None))

    async def go(pilot: Pilot) -> None:
        queue = await open_queue(pilot)
        assert queue.display and app.editor_pane.rel == "MEMORY.md"
        kinds = {(s.kind, s.entry.start_line) for s in queue.suggestions}
        assert {("duplicate", 7), ("daily-log", 14)} <= kinds
        await select(pilot, queue, "duplicate", 7)
        evidence = str(queue.query_one("#curation-evidence").render())
        assert "near-duplicate of lines 5–5" in evidence
        await pilot.press("enter")  # shows the entry in the editor
        await wait_for(pilot, lambda: app.editor_pane.area.cursor_location == (6, 0))
        await pilot.press("alt+m")
        assert not queue.display

    drive(app, go)


def test_merge_then_undo(curate_dir, engine_factory, make_app) -> None:
    engine = engine_factory(None)
    app = make_app(engine)
    path = curate_dir / "MEMORY.md"

    async def go(pilot: Pilot) -> None:
        queue = await open_queue(pilot)
        await select(pilot, queue, "duplicate", 7)
        screen = await act(pilot, queue, "j")
        assert screen.plan is not None and screen.plan.action == "merge"
        assert "-- Dana likes flat white coffee" in screen.plan.diff
        assert path.read_text(encoding="utf-8") == MEMORY  # nothing written yet
        await apply_shown(pilot, queue)
        text = path.read_text(encoding="utf-8")
        assert "Dana likes" not in text and "morning. She takes oat milk.\n" in text
        assert app.editor_pane.area.text == text  # the editor follows
        hits = engine.search("Dana likes flat white").results
        assert all("Dana likes" not in h.text for h in hits)  # the index followed
        assert not any(s.kind == "duplicate" for s in queue.suggestions)
        screen = await act(pilot, queue, "u")
        assert screen.plan is not None and screen.plan.action == "undo"
        await apply_shown(pilot, queue)
        assert path.read_text(encoding="utf-8") == MEMORY
        assert not queue.undo_stack

    drive(app, go)


def test_delete_then_undo(curate_dir, engine_factory, make_app) -> None:
    app = make_app(engine_factory(None))
    path = curate_dir / "MEMORY.md"

    async def go(pilot: Pilot) -> None:
        queue = await open_queue(pilot)
        await select(pilot, queue, "daily-log", 14)
        await act(pilot, queue, "d")
        await apply_shown(pilot, queue)
        assert "Backups run nightly" not in path.read_text(encoding="utf-8")
        await act(pilot, queue, "u")
        await apply_shown(pilot, queue)
        assert path.read_text(encoding="utf-8") == MEMORY

    drive(app, go)


def test_move_with_a_pointer_then_undo(curate_dir, engine_factory, make_app) -> None:
    engine = engine_factory(None)
    app = make_app(engine)
    path = curate_dir / "MEMORY.md"
    topic = curate_dir / "memory" / "routines.md"

    async def go(pilot: Pilot) -> None:
        queue = await open_queue(pilot)
        await select(pilot, queue, "daily-log", 14)
        screen = await act(pilot, queue, "m")
        topic_input = screen.query_one("#preview-topic", Input)
        assert topic_input.value == "memory/infra.md"  # from the entry's heading
        topic_input.value = "memory/routines.md"
        screen.query_one("#preview-pointer", Checkbox).value = True
        await wait_for(
            pilot, lambda: screen.plan is not None and "routines.md" in screen.plan.title
        )
        assert "+- Moved to memory/routines.md: Backups run nightly at 02:00." in screen.plan.diff
        await apply_shown(pilot, queue)
        assert topic.read_text(encoding="utf-8") == "# Infra\n\n- Backups run nightly at 02:00.\n"
        assert "- Moved to memory/routines.md" in path.read_text(encoding="utf-8")
        hits = engine.search("backups nightly").results
        assert any(h.path == "memory/routines.md" for h in hits)  # still searchable
        await wait_for(pilot, lambda: "memory/routines.md" in app.memory_tree.states)
        await act(pilot, queue, "u")
        await apply_shown(pilot, queue)
        assert path.read_text(encoding="utf-8") == MEMORY and not topic.exists()

    drive(app, go)


def test_a_file_changed_meanwhile_is_reported_not_overwritten(
    curate_dir, engine_factory, make_app
) -> None:
    app = make_app(engine_factory(None))
    path = curate_dir / "MEMORY.md"
    notices: list[Any] = []

    async def go(pilot: Pilot) -> None:
        queue = await open_queue(pilot)
        await select(pilot, queue, "duplicate", 7)
        await act(pilot, queue, "d")
        path.write_text(MEMORY + "- written by the agent meanwhile\n", encoding="utf-8")
        record_notices(app, notices)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("changed on disk" in n for n in notices))
        assert path.read_text(encoding="utf-8").endswith("meanwhile\n")
        assert not queue.undo_stack

    drive(app, go)


def test_unsaved_edits_in_the_editor_block_a_change(curate_dir, engine_factory, make_app) -> None:
    app = make_app(engine_factory(None))

    async def go(pilot: Pilot) -> None:
        queue = await open_queue(pilot)
        app.editor_pane.area.insert("typed, not saved\n", (0, 0))
        await pilot.pause()
        queue.table.focus()
        await select(pilot, queue, "duplicate", 7)
        await pilot.press("d")
        await pilot.pause()
        assert not isinstance(app.screen, CurationPreviewScreen)

    drive(app, go)


def test_unsaved_edits_block_a_move_to_a_topic_file_typed_in_the_preview(
    curate_dir, engine_factory, make_app
) -> None:
    """The preview opens for the default topic file; the user types another one,
    which has unsaved edits in the editor: applying is refused there too, and the
    file on disk is left as it was."""
    app = make_app(engine_factory(None))
    topic = curate_dir / "memory" / "routines.md"
    topic.write_text("# Routines\n", encoding="utf-8")
    notices: list[str] = []

    async def go(pilot: Pilot) -> None:
        app.editor_pane.open("memory/routines.md")
        await wait_for(pilot, lambda: app.editor_pane.rel == "memory/routines.md")
        app.editor_pane.area.insert("typed, not saved\n", (1, 0))
        await pilot.pause()
        assert app.editor_pane.modified
        record_notices(app, notices)
        queue = await open_queue(pilot)
        await select(pilot, queue, "daily-log", 14)
        screen = await act(pilot, queue, "m")
        screen.query_one("#preview-topic", Input).value = "memory/routines.md"
        await wait_for(
            pilot, lambda: screen.plan is not None and "routines.md" in screen.plan.title
        )
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("unsaved edits" in n for n in notices))
        assert "memory/routines.md has unsaved edits in the editor" in notices[-1]
        assert topic.read_text(encoding="utf-8") == "# Routines\n"
        assert (curate_dir / "MEMORY.md").read_text(encoding="utf-8") == MEMORY
        assert app.editor_pane.modified  # the edits are still there, unsaved

    drive(app, go)


def test_an_undo_a_later_change_outdated_is_dropped(curate_dir, engine_factory, make_app) -> None:
    """Delete, then an agent appends to MEMORY.md: the undo cannot restore what it
    recorded. Applying it writes nothing, says so, and drops it (it stayed on top of
    the history for good, hiding every older undo)."""
    app = make_app(engine_factory(None))
    path = curate_dir / "MEMORY.md"
    notices: list[str] = []

    async def go(pilot: Pilot) -> None:
        queue = await open_queue(pilot)
        await select(pilot, queue, "duplicate", 7)
        await act(pilot, queue, "d")
        await apply_shown(pilot, queue)
        assert len(queue.undo_stack) == 1
        grown = path.read_text(encoding="utf-8") + "- appended by the agent\n"
        path.write_text(grown, encoding="utf-8")
        record_notices(app, notices)
        await act(pilot, queue, "u")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("changed on disk" in n for n in notices))
        assert "1 undo of MEMORY.md dropped" in notices[-1]
        assert queue.undo_stack == [] and path.read_text(encoding="utf-8") == grown

    drive(app, go)
