"""The editor: MEMORY.md curation and daily logs, never overwriting silently.

A file is opened as a ``Document`` (text + sha256 of the bytes read). Saving
goes through ``Workspace.save``, which refuses when the file on disk no longer
has that hash, so a change made by an agent (or another editor) while the file
was open is never lost: the pane asks what to do. A periodic check notices
external changes early: an unmodified buffer simply reloads; a modified one is
marked and the save asks. Daily logs are append-only: they open read-only and
grow through "append entry"; editing an earlier entry needs an explicit unlock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TextArea

from engine.workspace.files import Document, PathRefused, UnreadableFile, Workspace

#: Beyond this the editor refuses to open a file (a TextArea on 100 MB is unusable).
MAX_EDIT_BYTES = 2 * 1024 * 1024
CHECK_INTERVAL_S = 1.0


@dataclass(frozen=True)
class DiskStamp:
    size: int
    mtime_ns: int


def disk_stamp(path: Path) -> DiskStamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return DiskStamp(st.st_size, st.st_mtime_ns)


class OpenError(ValueError):
    """The file cannot be opened in the editor; the message says why."""


class EditorPane(Vertical):
    """Header line + a markdown ``TextArea``."""

    def __init__(self, workspace: Workspace, *, blink: bool = True, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.workspace = workspace
        self._blink = blink
        self.doc: Document | None = None
        self.rel: str | None = None
        self.kind: str | None = None
        self.saved_text = ""
        self.stamp: DiskStamp | None = None
        self.external_change = False
        self.unlocked = False
        self._loading = False

    def compose(self) -> ComposeResult:
        yield Static(id="editor-header")
        area = TextArea.code_editor(
            "",
            language="markdown",
            soft_wrap=True,
            read_only=True,
            id="editor-area",
        )
        area.theme = "css"
        yield area

    def on_mount(self) -> None:
        area = self.area
        if not self._blink:
            area.cursor_blink = False
        self.set_interval(CHECK_INTERVAL_S, self.check_external_change, name="external-check")
        self._show_header()

    @property
    def area(self) -> TextArea:
        return self.query_one("#editor-area", TextArea)

    # -- state --------------------------------------------------------------------
    @property
    def modified(self) -> bool:
        return self.doc is not None and self.area.text != self.saved_text

    @property
    def is_daily(self) -> bool:
        return self.kind == "daily"

    @property
    def line_count(self) -> int:
        """The text's lines as ``wc -l`` and memory_get count them: a final newline
        ends the last line (the text area shows an empty line after it)."""
        document = self.area.document
        count = document.line_count
        if count and document.get_line(count - 1) == "":
            count -= 1
        return count

    def _show_header(self) -> None:
        header = Text()
        if self.rel is None:
            header.append("no file open", style="dim")
            header.append(" — pick one in the tree (Enter) or open a search hit", style="dim")
        else:
            header.append(self.rel, style="bold")
            if self.modified:
                header.append("  ● modified", style="bold")
            else:
                header.append("  saved", style="dim")
            if self.external_change:
                header.append("  ⚠ changed on disk", style="bold red")
            if self.is_daily and not self.unlocked:
                header.append("  daily log · append-only (ctrl+n)", style="italic")
            elif self.area.read_only:
                header.append("  read-only", style="italic")
            count = self.line_count
            header.append(f"  {count} line{'' if count == 1 else 's'}", style="dim")
        self.query_one("#editor-header", Static).update(header, layout=False)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if not self._loading:
            self._show_header()

    # -- open / reload ------------------------------------------------------------
    def open(self, rel: str, line: int = 1) -> None:
        """Load ``rel`` (workspace-relative or absolute memory path); raises OpenError."""
        try:
            path = self.workspace.resolve(rel)
        except PathRefused as exc:
            raise OpenError(str(exc)) from None
        stamp = disk_stamp(path)
        if stamp is not None and stamp.size > MAX_EDIT_BYTES:
            raise OpenError(
                f"{rel}: {stamp.size / 1e6:.1f} MB is too large to edit here "
                f"(limit {MAX_EDIT_BYTES // 2**20} MiB)"
            )
        try:
            doc = self.workspace.read(path, limit=MAX_EDIT_BYTES)
        except (UnreadableFile, PathRefused) as exc:
            raise OpenError(str(exc)) from None
        except OSError as exc:
            raise OpenError(f"{rel}: cannot read ({exc.strerror or exc})") from None
        self.doc = doc
        self.rel = self.workspace.rel(path)
        self.kind = self.workspace.classify(self.rel)
        self.stamp = stamp
        self.external_change = False
        self.unlocked = False
        self._load_text(doc.text)
        self.area.read_only = (self.is_daily and not self.unlocked) or doc.decode_error is not None
        if doc.decode_error:
            self.app.notify(
                f"{doc.decode_error}. Opened read-only so the bad bytes are not replaced.",
                title="Not valid UTF-8",
                severity="warning",
            )
        self.goto_line(line)
        self._show_header()

    def _load_text(self, text: str) -> None:
        self._loading = True
        try:
            self.area.load_text(text)  # also resets the undo history
        finally:
            self._loading = False
        self.saved_text = text

    def goto_line(self, line: int) -> None:
        area = self.area
        row = max(0, min(line - 1, area.document.line_count - 1))
        area.move_cursor((row, 0))
        area.scroll_to(y=max(0, row - 2), animate=False)

    def reload(self) -> None:
        """Replace the buffer with the file on disk (the caller confirmed if needed)."""
        if self.rel is None:
            return
        row = self.area.cursor_location[0]
        self.open(self.rel, row + 1)

    def unlock(self) -> None:
        self.unlocked = True
        if self.doc is not None and self.doc.decode_error is None:
            self.area.read_only = False
        self._show_header()

    # -- save ---------------------------------------------------------------------
    def save(self, *, force: bool = False) -> str:
        """Write the buffer (with a final newline); raises ``ExternalChangeError`` if
        the file changed on disk.

        ``force`` re-reads the file first and writes over it: only after the user
        chose "overwrite" in the external-change dialog.
        """
        if self.doc is None or self.rel is None:
            raise OpenError("no file open")
        if self.doc.decode_error is not None:
            raise OpenError(f"{self.rel}: opened read-only (not valid UTF-8); not saved")
        base = self.workspace.read(self.doc.path) if force else self.doc
        text = self.area.text
        if text and not text.endswith("\n"):
            # A text file ends with a newline; without it the next `echo >>` (or an
            # agent's append) glues its text onto the last line.
            text += "\n"
        self.doc = self.workspace.save(base, text)
        if text != self.area.text:
            self.area.insert("\n", self.area.document.end)  # the buffer matches the file
        self.saved_text = text
        self.stamp = disk_stamp(self.doc.path)
        self.external_change = False
        self._show_header()
        return self.rel

    # -- external changes ---------------------------------------------------------
    def check_external_change(self) -> bool:
        """True when the file on disk differs from what the buffer was loaded from."""
        if self.doc is None:
            return False
        stamp = disk_stamp(self.doc.path)
        if stamp == self.stamp:
            return self.external_change
        self.stamp = stamp
        try:
            current = self.workspace.read(self.doc.path, limit=MAX_EDIT_BYTES)
        except (UnreadableFile, PathRefused, OSError):
            current = None
        if current is not None and current.sha256 == self.doc.sha256:
            return self.external_change  # touched, same bytes
        if not self.modified and current is not None:
            self.reload()
            self.app.notify(f"{self.rel} changed on disk; reloaded.", title="Reloaded")
            return False
        if not self.external_change:
            self.external_change = True
            self._show_header()
            self.app.notify(
                f"{self.rel} changed on disk while you were editing. Saving will ask first.",
                title="External change",
                severity="warning",
            )
        return True
