"""Leaving the app never loses an edit; global keys never type into the editor;
a keymap that would take a key from the editor or another binding is refused."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Input, Static, TextArea

from engine.embeddings.base import ProgressCallback
from tests.engine.concept_embedder import ConceptEmbedder
from tests.tui.conftest import drive, wait_for
from tui.actions import GLOBAL_BINDINGS, key_sections
from tui.keymap import validate_keymap
from tui.screens.dialogs import ExternalChangeScreen, QuitScreen
from tui.screens.help import HelpScreen
from tui.settings import UISettings

EDIT = "Quokka notes: unsaved. "


async def _edit_memory(pilot: Pilot) -> TextArea:
    app = pilot.app
    app.open_location("MEMORY.md", 1)
    await pilot.pause()
    area = app.editor_pane.area
    assert app.focused is area
    await pilot.press(*EDIT)
    assert app.editor_pane.modified
    return area


def test_ctrl_q_with_unsaved_edits_asks_cancel_then_save(fts_engine, make_app, demo_dir) -> None:
    app = make_app(fts_engine)
    path = demo_dir / "MEMORY.md"
    original = path.read_text(encoding="utf-8")

    async def go(pilot: Pilot) -> None:
        area = await _edit_memory(pilot)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        assert app.screen.query_one("#cancel", Button).has_focus  # a stray Enter stays
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, QuitScreen))
        assert app.is_running and area.text.startswith(EDIT)
        assert path.read_text(encoding="utf-8") == original
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.click("#save")
        await wait_for(pilot, lambda: not app.is_running)

    drive(app, go)
    assert app.return_code == 0
    assert path.read_text(encoding="utf-8") == EDIT + original


class HeldEmbedder(ConceptEmbedder):
    """The concept embedder; once ``hold`` is an event, each document batch waits for
    it (at most a minute), so a sync lasts as long as the test needs instead of a
    fixed number of seconds that a loaded machine can outrun."""

    def __init__(self) -> None:
        super().__init__()
        self.hold: threading.Event | None = None

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        if self.hold is not None:
            self.hold.wait(60)
        return super().embed_documents(texts, progress)


def test_quitting_stops_the_apps_own_sync_between_files(
    engine_factory, make_app, demo_dir, monkeypatch
) -> None:
    """Without a sync service a sync is the app's own thread, which cancelling its
    worker does not stop, and the app's process waits for it (``asyncio.run`` joins
    the thread) after the screen is gone: quitting during a long sync hung until the
    last file. Quitting asks it to stop between files; the index stays consistent
    and the rest is indexed at the next start."""
    provider = HeldEmbedder()
    engine = engine_factory(provider)
    app = make_app(engine)
    assert app.sync_service is None
    bulk = demo_dir / "memory" / "bulk"
    bulk.mkdir()
    for i in range(30):
        (bulk / f"note-{i:02d}.md").write_text(f"# Note {i}\n\nThe quokka count was {i}.\n")
    sync = engine.sync

    def held_sync(*args: Any, **kwargs: Any) -> Any:
        # 30 new files; the first waits until the app asks this sync to stop (its cancel)
        provider.hold = kwargs.get("cancel")
        return sync(*args, **kwargs)

    monkeypatch.setattr(engine, "sync", held_sync)

    async def go(pilot: Pilot) -> None:
        await pilot.press("f9")
        await wait_for(pilot, lambda: engine.state.running)
        await pilot.press("ctrl+q")  # nothing unsaved: quits at once
        await wait_for(pilot, lambda: not app.is_running)

    drive(app, go)  # returns once the app's thread has ended too
    assert not engine.state.running
    indexed = [p for p in engine.store.files() if p.startswith("memory/bulk/")]
    assert len(indexed) < 30  # stopped between files, not run to the end


def test_ctrl_c_outside_text_fields_asks_and_discard_quits(fts_engine, make_app, demo_dir) -> None:
    app = make_app(fts_engine)
    path = demo_dir / "MEMORY.md"
    original = path.read_text(encoding="utf-8")

    async def go(pilot: Pilot) -> None:
        area = await _edit_memory(pilot)
        await pilot.press("ctrl+c")  # inside the editor: copy, never quit
        await pilot.pause()
        assert app.screen is app.default_screen and area.text.startswith(EDIT)
        await pilot.press("escape")
        await pilot.press("1")  # leave the editor, to the tree
        assert app.focused is app.memory_tree
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.click("#cancel")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        assert app.is_running and area.text.startswith(EDIT)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.click("#discard")
        await wait_for(pilot, lambda: not app.is_running)

    drive(app, go)
    assert path.read_text(encoding="utf-8") == original  # discarded on request


def test_palette_quit_asks_too(fts_engine, make_app, demo_dir) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        area = await _edit_memory(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"quit")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        assert app.is_running and area.text.startswith(EDIT)

    drive(app, go)


def test_quit_without_edits_quits_at_once(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        app.open_location("MEMORY.md", 1)
        await pilot.pause()
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: not app.is_running)

    drive(app, go)


def test_global_keys_never_type_into_the_editor(fts_engine, make_app) -> None:
    app = make_app(fts_engine)
    global_keys = [k for b in GLOBAL_BINDINGS for k in b.key.split(",") if k != "ctrl+q"]
    assert {"ctrl+f", "ctrl+g", "f1", "ctrl+s", "ctrl+b"} <= set(global_keys)

    async def go(pilot: Pilot) -> None:
        await _edit_memory(pilot)
        editor = app.editor_pane
        before = editor.area.text
        for key in global_keys:
            app.action_focus_pane("editor")
            await pilot.pause()
            assert app.focused is editor.area
            await pilot.press(key)
            await pilot.pause()
            while app.screen is not app.default_screen:
                await pilot.press("escape")
                await pilot.pause()
            assert editor.area.text == before, key
        # the keys acted: ctrl+b (pressed once in the loop) hid the tree
        assert not app.memory_tree.display
        app.action_focus_pane("editor")
        await pilot.press("ctrl+b")
        assert app.memory_tree.display and app.focused is editor.area
        await pilot.press("ctrl+f")
        assert app.focused is app.search_pane.query_one("#search-input", Input)
        await pilot.press("ctrl+g")  # search → monitor → tree → editor
        assert app.focused is app.monitor
        await pilot.press("ctrl+g")
        assert app.focused is app.memory_tree
        await pilot.press("ctrl+g")
        assert app.focused is editor.area
        # keys typed faster than the focus moves still chain (as in one terminal read)
        app.action_focus_pane("search")
        await pilot.pause()
        for _ in range(3):
            app.action_next_pane()  # search → monitor → tree → editor
        await pilot.pause()
        assert app.focused is editor.area
        # the short keys type, as help says: they work outside text fields only
        await pilot.press("4", "slash")
        assert app.focused is editor.area and editor.area.text == "4/" + before
        await pilot.press("escape")  # leave the editor, then the short keys act
        await pilot.press("1")
        assert app.focused is app.memory_tree

    drive(app, go)


def test_colliding_keymap_is_refused_with_one_notice(fts_engine, make_app) -> None:
    ui = UISettings(
        keymap={
            "search.fusion": "f2",
            "search.focus": "ctrl+k",
            "app.theme": "t",
            "pane.next": "alt+2",
            "app.tree": "f12",
        }
    )
    app = make_app(fts_engine, ui_settings=ui)

    async def go(pilot: Pilot) -> None:
        assert app.startup_notice == "\n".join(
            [
                "keymap.search.fusion: f2 is already the key of search.mode (Mode); "
                "search.fusion keeps f3",
                "keymap.search.focus: ctrl+k is the editor's 'delete to line end' key; "
                "search.focus keeps ctrl+f",
                "keymap.app.theme: t would type into the editor and the search box, where "
                "app.theme must work; app.theme keeps ctrl+t",
                "keymap.pane.next: alt+2 reaches the app as Esc then a character (alt+1 "
                "arrives as '¡'), so it would type; pane.next keeps ctrl+g",
            ]
        )
        notices = [n for n in app._notifications if n.title == "memdeck settings"]
        assert len(notices) == 1
        assert app.keymap == {"app.tree": "f12"}
        # the defaults still work, the refused keys do what they did
        pane = app.search_pane
        await pilot.press("f3")
        assert pane.options.fusion != app.engine.default_options().fusion
        mode = pane.options.mode
        await pilot.press("f2")
        assert pane.options.mode != mode
        await pilot.press("f12")
        assert not app.memory_tree.display
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one("#help-table", DataTable)
        by_id = {str(table.get_row_at(i)[3]): table.get_row_at(i) for i in range(table.row_count)}
        assert str(by_id["search.fusion"][1]) == "f3"
        assert str(by_id["app.tree"][1]) == "f12"

    drive(app, go)


def test_keymap_swaps_are_fine() -> None:
    clean, problems = validate_keymap({"search.mode": "f3", "search.fusion": "f2"}, key_sections())
    assert problems == []
    assert clean == {"search.mode": "f3", "search.fusion": "f2"}
    # screens that are never live together may share keys
    clean, problems = validate_keymap({"tree.open": "f2"}, key_sections())
    assert problems == [] and clean == {"tree.open": "f2"}
    clean, problems = validate_keymap({"pane.tree": "f9"}, key_sections())
    assert problems == [
        "keymap.pane.tree: f9 is already the key of index.sync (Sync); pane.tree keeps 1"
    ]


def test_save_adds_the_missing_final_newline(fts_engine, make_app, demo_dir) -> None:
    path = demo_dir / "memory" / "notes.md"
    path.write_text("# Notes\n\nlast line without newline", encoding="utf-8")
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        app.open_location("memory/notes.md", 3)
        await pilot.pause()
        await pilot.press("end", *" (edited)")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not app.editor_pane.modified)
        assert app.editor_pane.area.text.endswith("(edited)\n"), repr(app.editor_pane.area.text)

    drive(app, go)
    assert path.read_text(encoding="utf-8") == "# Notes\n\nlast line without newline (edited)\n"


ENTRY = "Miso's new dose starts Monday."


def test_quitting_while_writing_an_entry_asks_and_save_appends_it(
    fts_engine, make_app, demo_dir
) -> None:
    """`memdeck demo`, ctrl+n, type, ctrl+q: the entry was lost (the app quit at once,
    as nothing was modified in the editor). Now it asks; Save appends the entry."""
    from tests.tui.conftest import NOW
    from tui.screens.dialogs import AppendEntryScreen

    app = make_app(fts_engine)
    today = demo_dir / "memory" / f"{NOW.date().isoformat()}.md"
    before = today.read_text(encoding="utf-8")

    async def go(pilot: Pilot) -> None:
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, AppendEntryScreen))
        await pilot.press(*ENTRY)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        assert app.is_running
        await pilot.press("escape")  # cancel: back in the dialog, the text intact
        await wait_for(pilot, lambda: isinstance(app.screen, AppendEntryScreen))
        assert app.screen.text == ENTRY
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.click("#save")
        await wait_for(pilot, lambda: not app.is_running)

    drive(app, go)
    after = today.read_text(encoding="utf-8")
    assert after.startswith(before) and after.endswith(f"## 09:30\n\n{ENTRY}\n")


def test_esc_in_the_entry_dialog_keeps_the_text_as_a_draft(fts_engine, make_app, demo_dir) -> None:
    """Esc closed the dialog and threw the typed entry away. Now the next ctrl+n
    brings it back, and quitting with a draft asks (Discard really discards)."""
    from tests.tui.conftest import NOW
    from tui.screens.dialogs import AppendEntryScreen

    app = make_app(fts_engine)
    today = demo_dir / "memory" / f"{NOW.date().isoformat()}.md"
    before = today.read_text(encoding="utf-8")

    async def go(pilot: Pilot) -> None:
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, AppendEntryScreen))
        await pilot.press(*ENTRY)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, AppendEntryScreen))
        assert app.screen.text == ENTRY
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.click("#discard")
        await wait_for(pilot, lambda: not app.is_running)

    drive(app, go)
    assert today.read_text(encoding="utf-8") == before


def test_a_remapped_search_key_is_the_one_the_app_names(fts_engine, make_app) -> None:
    """search.focus moved to ctrl+l: the search box's hint and the help screen's intro
    name ctrl+l (they said ctrl+f, which no longer does anything)."""
    app = make_app(fts_engine, ui_settings=UISettings(keymap={"search.focus": "ctrl+l"}))

    async def go(pilot: Pilot) -> None:
        assert app.keymap == {"search.focus": "ctrl+l"}
        box = app.search_pane.query_one("#search-input", Input)
        hint = str(box.placeholder)
        assert "(ctrl+l from anywhere" in hint and "ctrl+f" not in hint
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        intro = str(app.screen.query_one("#help-intro", Static).content)
        assert "(ctrl+l search, ctrl+g next pane)" in intro and "ctrl+f" not in intro

    drive(app, go)


def test_save_and_quit_over_a_file_changed_on_disk_quits_after_the_overwrite(
    fts_engine, make_app, demo_dir
) -> None:
    """Save and quit, while MEMORY.md changed on disk: the changed-file dialog asks
    (no "not quit" notice beside it); after Overwrite the buffer is saved and the app
    quits, as asked. After Cancel nothing is written and the app stays."""
    app = make_app(fts_engine)
    path = demo_dir / "MEMORY.md"
    notices: list[str] = []

    async def go(pilot: Pilot) -> None:
        area = await _edit_memory(pilot)
        original_notify = app.notify
        app.notify = lambda message, **kw: (  # type: ignore[method-assign]
            notices.append(message) or original_notify(message, **kw)
        )
        path.write_text(path.read_text(encoding="utf-8") + "- ext\n", encoding="utf-8")
        for button in ("#cancel", "#overwrite"):
            await pilot.press("ctrl+q")
            await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen))
            await pilot.click("#save")
            await wait_for(pilot, lambda: isinstance(app.screen, ExternalChangeScreen))
            assert not any("Not quit" in n for n in notices), notices
            await pilot.click(button)
            if button == "#cancel":
                await wait_for(pilot, lambda: app.screen is app.default_screen)
                assert app.is_running and path.read_text(encoding="utf-8").endswith("- ext\n")
        await wait_for(pilot, lambda: not app.is_running)
        assert path.read_text(encoding="utf-8") == area.text

    drive(app, go)
