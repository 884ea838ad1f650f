"""What the agent is given every turn, in the app: the context view (alt+c), the budget
line in the editor's header, the unseen lines marked in the editor and the tree, and
all of it following the buffer as you type.

The picture in docs/context.md is this module's snapshot
(``__snapshots__/test_context_view/test_snapshot_budget_in_the_editor.svg``, copied to
docs/screenshots/context-dark.svg).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.tui.conftest import drive, ready, wait_for
from tui.screens.context_view import ContextViewScreen
from tui.settings import UISettings

WORDS = [
    "deploy",
    "staging",
    "token",
    "rotate",
    "backup",
    "nightly",
    "owner",
    "coffee",
    "atlas",
    "rollback",
    "invoice",
    "dentist",
]


def big_memory(chars: int = 36_000, seed: int = 7) -> str:
    rng = random.Random(seed)
    lines = ["# Memory", ""]
    topic = 0
    while sum(len(x) + 1 for x in lines) < chars:
        if len(lines) % 30 == 2:
            topic += 1
            lines += ["", f"## Topic {topic}", ""]
        lines.append("- " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 11))))
    return "\n".join(lines) + "\n"


@pytest.fixture
def big_dir(demo_dir: Path) -> Path:
    (demo_dir / "MEMORY.md").write_text(big_memory(), encoding="utf-8")
    return demo_dir


def test_context_view_lists_the_files_and_opens_the_unseen_lines(
    big_dir, engine_factory, make_app
) -> None:
    app = make_app(engine_factory(None))

    async def go(pilot: Pilot) -> None:
        await pilot.press("alt+c")
        await wait_for(pilot, lambda: isinstance(app.screen, ContextViewScreen))
        screen = app.screen
        assert isinstance(screen, ContextViewScreen) and screen.report is not None
        assert [f.path for f in screen.report.files][-1] == "MEMORY.md"
        memory = screen.report.memory
        assert memory is not None and memory.truncated and memory.injected_chars > 19_900
        first_unseen = memory.hidden[0].start_line
        await pilot.press("enter")  # on MEMORY.md, highlighted first
        await wait_for(pilot, lambda: app.editor_pane.rel == "MEMORY.md")
        assert app.screen is app.default_screen
        assert app.editor_pane.area.cursor_location == (first_unseen - 1, 0)

    drive(app, go)


def test_budget_line_and_marks_follow_the_buffer(big_dir, engine_factory, make_app) -> None:
    app = make_app(engine_factory(None))

    async def go(pilot: Pilot) -> None:
        tree = app.memory_tree
        await wait_for(pilot, lambda: "MEMORY.md" in tree.unseen)
        label = tree._file_nodes["MEMORY.md"].label
        hidden = tree.unseen["MEMORY.md"][0]
        assert f"✂ {hidden.start_line}–{hidden.end_line}" in str(label)
        app.open_location("MEMORY.md", hidden.start_line)
        editor = app.editor_pane
        await wait_for(pilot, lambda: editor.budget is not None)
        budget = editor.budget
        assert budget is not None and budget.truncated
        line = str(editor.query_one("#editor-budget").render())
        assert line.startswith(f"MEMORY.md {budget.raw_chars:,} chars · ")
        assert f"{budget.injected_chars:,} injected · ~{budget.tokens:,} tokens a turn" in line
        assert "unseen" in line
        area = editor.area_marks
        assert hidden.start_line - 1 in area.hidden_rows and 0 not in area.hidden_rows
        before = budget.raw_chars
        await pilot.press(*"more ")
        # measured again after the typing pauses: five more characters
        await wait_for(
            pilot, lambda: editor.budget is not None and editor.budget.raw_chars == before + 5
        )
        # delete half the file, as a selection and a keypress: it all fits now
        doc = editor.area.document
        editor.area.selection = ((2, 0), (doc.line_count // 2, 0))
        await pilot.press("delete")
        await wait_for(pilot, lambda: editor.budget is not None and not editor.budget.truncated)
        assert not area.hidden_rows and not area.cut_rows
        line = str(editor.query_one("#editor-budget").render())
        assert "✂" not in line and f"{editor.budget.injected_chars:,} injected" in line
        # the tree follows the disk, not the buffer: saving clears its mark
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "MEMORY.md" not in tree.unseen)

    drive(app, go)


def test_no_budget_line_for_other_files(engine_factory, make_app) -> None:
    app = make_app(engine_factory(None))

    async def go(pilot: Pilot) -> None:
        app.open_location("memory/gtd/NEXT.md", 1)
        await pilot.pause()
        assert app.editor_pane.budget is None
        assert not app.editor_pane.query_one("#editor-budget").display
        app.open_location("MEMORY.md", 1)
        await wait_for(pilot, lambda: app.editor_pane.budget is not None)
        budget = app.editor_pane.budget
        assert budget is not None and not budget.truncated  # the demo's is short

    drive(app, go)


async def _budget(pilot: Pilot) -> None:
    app = pilot.app
    await ready(pilot)
    tree = app.memory_tree
    await wait_for(pilot, lambda: "MEMORY.md" in tree.unseen)
    hidden = tree.unseen["MEMORY.md"][0]
    app.open_location("MEMORY.md", hidden.start_line - 4)
    await wait_for(pilot, lambda: app.editor_pane.budget is not None)
    await pilot.pause()


def test_snapshot_budget_in_the_editor(big_dir, engine_factory, make_app, snap_compare) -> None:
    """Wider than the other pictures, so the header's budget line is the long one."""
    app = make_app(engine_factory(None), ui_settings=UISettings(theme="memdeck-dark"))
    assert snap_compare(app, terminal_size=(160, 40), run_before=_budget)
