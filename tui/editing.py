"""Editing memory files from the app: open, save, reload, unlock, append an entry.

Each flow asks before it loses anything the user typed (unsaved edits, a file
changed on disk, an entry closed before it was appended) and, after a write,
marks the index dirty and asks for a sync. The app's actions and the palette's
commands call these; the flows reach the app only through :class:`DeckHost`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from engine.workspace.files import ExternalChangeError
from tui.actions import DeckHost
from tui.keymap import display_keys
from tui.screens.dialogs import AppendEntryScreen, ConfirmScreen, EntryDraft, ExternalChangeScreen
from tui.widgets.editor import OpenError

__all__ = ["EditorFlows"]


class EditorFlows:
    """The editor's flows on ``host`` (the app)."""

    def __init__(self, host: DeckHost) -> None:
        self.host = host
        #: An entry closed with Esc before it was appended; the next ctrl+n reopens it.
        self.entry_draft = ""
        #: the last ``write`` met a file changed on disk and asks the user what to do
        self.asking = False

    # -- opening ------------------------------------------------------------------------
    def open_location(self, path: str, line: int = 1) -> None:
        host = self.host
        editor = host.editor_pane
        try:
            rel = host.engine.workspace.rel(host.engine.workspace.resolve(path))
        except ValueError as exc:
            host.notify(str(exc), title="Cannot open", severity="error")
            return
        if editor.rel == rel:
            if editor.modified:
                editor.goto_line(line)
                host.action_focus_pane("editor")
                return
        elif editor.modified:

            def decided(discard: bool | None) -> None:
                if discard:
                    self.open(rel, line)

            host.push_screen(
                ConfirmScreen(
                    "Unsaved changes",
                    f"{editor.rel} has unsaved changes. Discard them and open {rel}?",
                    yes="Discard and open",
                ),
                decided,
            )
            return
        self.open(rel, line)

    def open(self, rel: str, line: int) -> None:
        """Open ``rel`` at ``line`` in the editor, whatever it holds now."""
        host = self.host
        try:
            host.editor_pane.open(rel, line)
        except OpenError as exc:
            host.notify(str(exc), title="Cannot open", severity="error")
            return
        host.memory_tree.select_rel(rel)
        host.action_focus_pane("editor")

    # -- saving -------------------------------------------------------------------------
    def save(self) -> None:
        """ctrl+s: save the open file, unless it is a locked daily log or unchanged."""
        host = self.host
        editor = host.editor_pane
        if editor.rel is None:
            host.notify("No file is open.", severity="warning")
            return
        if editor.is_daily and not editor.unlocked:
            host.notify(
                f"{editor.rel} is a daily log (append-only): ctrl+n appends an entry; "
                "'Editor: allow editing' in the palette unlocks it.",
                severity="warning",
            )
            return
        if not editor.modified and not editor.external_change:
            host.notify(f"{editor.rel}: nothing to save.", timeout=2)
            return
        self.write(force=False)

    def write(self, *, force: bool, then: Callable[[], None] | None = None) -> bool:
        """Save the editor; True when the file on disk now holds the buffer.

        When the file changed on disk, the user is asked (reload, overwrite, cancel)
        and False is returned at once, with ``asking`` set; ``then`` runs once an
        overwrite has saved (a "save and quit" then quits)."""
        host = self.host
        editor = host.editor_pane
        self.asking = False
        try:
            rel = editor.save(force=force)
        except ExternalChangeError:
            self.asking = True
            host.push_screen(
                ExternalChangeScreen(str(editor.rel)), partial(self._external_choice, then=then)
            )
            return False
        except (OpenError, OSError) as exc:
            host.notify(
                f"Not saved: {exc}. Your text is still in the editor.",
                title="Save failed",
                severity="error",
            )
            return False
        host.notify(f"Saved {rel}; re-indexing.", timeout=3)
        self.after_write(rel, "save")
        return True

    def _external_choice(self, choice: str | None, then: Callable[[], None] | None = None) -> None:
        host = self.host
        editor = host.editor_pane
        if choice == "reload":
            editor.reload()
            host.notify(f"Reloaded {editor.rel} from disk.", timeout=3)
        elif choice == "overwrite":
            if self.write(force=True) and then is not None:
                then()
        else:
            host.notify("Not saved. The file on disk and your buffer are unchanged.", timeout=4)

    def after_write(self, rel: str, reason: str) -> None:
        """A memory file was written: the index is dirty, a sync is asked for."""
        host = self.host
        host.engine.mark_dirty()
        host.request_sync(reason)
        host.refresh_tree()

    # -- reloading and unlocking ----------------------------------------------------------
    def reload(self) -> None:
        host = self.host
        editor = host.editor_pane
        if editor.rel is None:
            return
        if not editor.modified:
            editor.reload()
            return

        def decided(discard: bool | None) -> None:
            if discard:
                editor.reload()

        host.push_screen(
            ConfirmScreen(
                "Reload from disk", f"Discard your edits to {editor.rel}?", yes="Discard and reload"
            ),
            decided,
        )

    def unlock(self) -> None:
        host = self.host
        editor = host.editor_pane
        if editor.rel is None:
            return

        def decided(ok: bool | None) -> None:
            if ok:
                editor.unlock()
                editor.area.focus()

        host.push_screen(
            ConfirmScreen(
                "Edit a daily log",
                f"{editor.rel} is append-only by convention: agents read earlier entries as "
                "a record. Allow editing it anyway?",
                yes="Allow editing",
            ),
            decided,
        )

    # -- appending an entry -----------------------------------------------------------------
    def append_entry(self, initial: str = "") -> None:
        """ctrl+n: a timestamped entry for today's daily log, typed in a dialog."""
        host = self.host
        now = host.clock()
        ws = host.engine.workspace
        rel = ws.rel(ws.daily_path(now.date()))
        editor = host.editor_pane
        if editor.rel == rel and editor.modified:
            host.notify(f"Save or reload {rel} before appending to it.", severity="warning")
            return
        screen = AppendEntryScreen(
            rel, now.strftime("%H:%M"), blink=host.blink, initial=initial or self.entry_draft
        )
        host.push_screen(screen, self._append)

    def _append(self, result: EntryDraft | None) -> None:
        if result is None:
            return
        host = self.host
        text = result.text
        if not result.append:  # Esc or Cancel: nothing typed is thrown away
            self.entry_draft = text if text.strip() else ""
            if self.entry_draft:
                keys = display_keys(host.effective_keys("editor.append", "ctrl+n"))
                host.notify(f"Entry kept as a draft: {keys} brings it back.", timeout=4)
            return
        ws = host.engine.workspace
        try:
            path, line = ws.append_entry(text, now=host.clock())
        except (ValueError, OSError) as exc:
            host.notify(f"Not appended: {exc}", title="Append failed", severity="error")
            self.append_entry(initial=text)  # keep the text
            return
        self.entry_draft = ""
        rel = ws.rel(path)
        host.notify(f"Appended to {rel}; re-indexing.", timeout=3)
        editor = host.editor_pane
        if editor.rel is None or editor.rel == rel or not editor.modified:
            self.open(rel, line)
        self.after_write(rel, "append")
