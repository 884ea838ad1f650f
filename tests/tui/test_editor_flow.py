"""Editor and tree, driven by Pilot: open, edit, save → re-indexed and found;
external changes never overwritten silently; daily logs grow by appended entries."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import Button, TabbedContent

from engine.index.sync_service import SyncService
from tests.tui.conftest import NOW, drive, search, wait_for
from tui.screens.dialogs import AppendEntryScreen, ExternalChangeScreen


def test_tree_edit_save_reindex_and_find(engine_factory, make_app, demo_dir) -> None:
    engine = engine_factory(None, **{"sync.watch": False, "sync.on_session_start": False})
    service = SyncService(engine, debounce=0.1)
    app = make_app(engine, sync_service=service)
    original = (demo_dir / "MEMORY.md").read_text(encoding="utf-8")

    async def go(pilot: Pilot) -> None:
        assert service.started
        tree = app.memory_tree
        assert tree.states["MEMORY.md"].state == "indexed"
        assert tree.states["MEMORY.md"].chunks == 1
        await pilot.press("escape")  # search box → tree
        assert app.focused is tree
        assert tree.cursor_rel == "MEMORY.md"  # the first file, ready for Enter
        await pilot.press("enter")
        editor = app.editor_pane
        assert editor.rel == "MEMORY.md"
        assert app.focused is editor.area and not editor.area.read_only
        await pilot.press(*"Quokka sightings go in the zoo log.", "enter")
        assert editor.modified
        synced = engine.state.last_done
        await pilot.press("ctrl+s")
        await pilot.pause()
        on_disk = (demo_dir / "MEMORY.md").read_text(encoding="utf-8")
        assert on_disk == "Quokka sightings go in the zoo log.\n" + original
        assert not editor.modified
        # the save asked the sync service; wait for the re-index
        await wait_for(pilot, lambda: engine.state.last_done is not synced)
        await wait_for(pilot, lambda: tree.states["MEMORY.md"].state == "indexed")
        await pilot.press("ctrl+f")  # focus search from inside the editor
        await search(pilot, "quokka")
        hits = app.search_pane.outcome.results
        assert [h.path for h in hits] == ["MEMORY.md"]
        assert "Quokka" in hits[0].text

    drive(app, go)
    assert not service.started  # the app stopped the service on exit


def test_external_change_is_never_overwritten_silently(fts_engine, make_app, demo_dir) -> None:
    app = make_app(fts_engine)
    path = demo_dir / "memory" / "gtd" / "NEXT.md"

    async def go(pilot: Pilot) -> None:
        app.open_location("memory/gtd/NEXT.md", 3)
        await pilot.pause()
        editor = app.editor_pane
        assert editor.area.cursor_location == (2, 0)
        await pilot.press(*"MINE ")
        # an agent writes the file meanwhile
        path.write_text("# Next actions\n\n- [ ] written by the agent\n", encoding="utf-8")
        assert editor.check_external_change()
        await pilot.pause()
        assert editor.external_change
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ExternalChangeScreen))
        await pilot.click("#cancel")
        await wait_for(pilot, lambda: not isinstance(app.screen, ExternalChangeScreen))
        assert "written by the agent" in path.read_text(encoding="utf-8")
        assert "MINE " in editor.area.text  # the buffer is kept too
        # now overwrite deliberately
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ExternalChangeScreen))
        await pilot.click("#overwrite")
        await wait_for(pilot, lambda: "MINE " in path.read_text(encoding="utf-8"))
        assert path.read_text(encoding="utf-8") == editor.area.text
        assert not editor.external_change and not editor.modified
        # and the "reload" answer takes the disk version
        await pilot.press(*"second edit ")
        path.write_text("# Next actions\n\n- [ ] agent again\n", encoding="utf-8")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ExternalChangeScreen))
        app.screen.query_one("#reload", Button).press()
        await wait_for(pilot, lambda: "agent again" in editor.area.text)
        assert "second edit" not in editor.area.text
        assert path.read_text(encoding="utf-8") == "# Next actions\n\n- [ ] agent again\n"

    drive(app, go)


def test_unmodified_buffer_follows_the_file_on_disk(fts_engine, make_app, demo_dir) -> None:
    app = make_app(fts_engine)
    path = demo_dir / "memory" / "projects" / "atlas.md"

    async def go(pilot: Pilot) -> None:
        app.open_location("memory/projects/atlas.md")
        await pilot.pause()
        path.write_text("# Atlas\n\nDone. Migrated on Sunday.\n", encoding="utf-8")
        # the periodic check (1 s) reloads an unmodified buffer by itself
        await wait_for(pilot, lambda: "Migrated on Sunday" in app.editor_pane.area.text, 5)
        assert not app.editor_pane.modified and not app.editor_pane.external_change

    drive(app, go)


def test_append_entry_adds_a_timestamped_entry_and_never_rewrites(
    fts_engine, make_app, demo_dir
) -> None:
    app = make_app(fts_engine)
    today = demo_dir / "memory" / f"{NOW.date().isoformat()}.md"
    before = today.read_bytes()

    async def go(pilot: Pilot) -> None:
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, AppendEntryScreen))
        await pilot.press(*"Called the vet about Miso's dose.")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, AppendEntryScreen))
        after = today.read_bytes()
        assert after.startswith(before)  # earlier bytes untouched
        assert after[len(before) :] == b"\n## 09:30\n\nCalled the vet about Miso's dose.\n"
        editor = app.editor_pane
        assert editor.rel == f"memory/{NOW.date().isoformat()}.md"
        line = before.count(b"\n") + 2
        assert editor.area.document.get_line(line - 1) == "## 09:30"
        assert editor.area.cursor_location == (line - 1, 0)
        # daily logs are append-only in the editor: typing does nothing, save refuses
        assert editor.area.read_only
        await pilot.press(*"xyz")
        assert not editor.modified
        await wait_for(pilot, lambda: fts_engine.state.last_done is not None)
        await wait_for(pilot, lambda: app.memory_tree.states[editor.rel].state == "indexed")

    drive(app, go)


def test_unsaved_edits_are_not_discarded_by_opening_another_file(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        app.open_location("MEMORY.md")
        await pilot.pause()
        await pilot.press(*"draft ")
        app.open_location("memory/gtd/NEXT.md")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ConfirmScreen"
        await pilot.press("escape")  # cancel
        await pilot.pause()
        assert app.editor_pane.rel == "MEMORY.md" and "draft " in app.editor_pane.area.text
        assert app.query_one("#panes", TabbedContent).active == "pane-editor"

    drive(app, go)


def test_files_the_editor_refuses(fts_engine, make_app, demo_dir) -> None:
    (demo_dir / "memory" / "blob.md").write_bytes(b"\x00\x01binary")
    (demo_dir / "memory" / "latin.md").write_bytes(b"caf\xe9 au lait\n")
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        app.open_location("../outside.md")
        app.open_location("memory/blob.md")
        await pilot.pause()
        assert app.editor_pane.rel is None
        messages = [n.message for n in app._notifications]
        assert any("'..' is not allowed" in m for m in messages)
        assert any("looks binary" in m for m in messages)
        app.open_location("memory/latin.md")
        await pilot.pause()
        editor = app.editor_pane
        assert editor.rel == "memory/latin.md" and editor.area.read_only
        assert editor.area.text == "caf\ufffd au lait\n"

    drive(app, go)


def test_undo_and_redo_in_the_editor(fts_engine, make_app, demo_dir) -> None:
    app = make_app(fts_engine)
    original = (demo_dir / "MEMORY.md").read_text(encoding="utf-8")

    async def go(pilot: Pilot) -> None:
        app.open_location("MEMORY.md")
        await pilot.pause()
        editor = app.editor_pane
        await pilot.press(*"scratch")
        assert editor.area.text == "scratch" + original and editor.modified
        await pilot.press("ctrl+z")
        assert editor.area.text == original and not editor.modified
        await pilot.press("ctrl+y")
        assert editor.area.text == "scratch" + original

    drive(app, go)


def test_header_counts_lines_as_wc_and_memory_get_do(fts_engine, make_app, demo_dir) -> None:
    """The header's line count is the file's (`wc -l` for a file ending in a newline),
    not the text area's extra empty line after the final newline."""
    (demo_dir / "memory" / "four.md").write_text("a\nb\nc\nd\n", encoding="utf-8")
    (demo_dir / "memory" / "one.md").write_text("only\n", encoding="utf-8")
    app = make_app(fts_engine)

    def header() -> str:
        return str(app.query_one("#editor-header").content)

    async def go(pilot: Pilot) -> None:
        for rel in ("memory/four.md", "memory/one.md", "MEMORY.md"):
            app.open_location(rel, 1)
            await pilot.pause()
            wc = (demo_dir / rel).read_bytes().count(b"\n")
            assert header().endswith(f"  {wc} line{'' if wc == 1 else 's'}"), (rel, header())
        app.open_location("memory/four.md", 1)
        await pilot.pause()
        await pilot.press("end", "enter", *"e")  # a fifth line, not yet followed by "\n"
        assert header().endswith("  5 lines"), header()

    drive(app, go)
