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

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Offset
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Static, TextArea

from engine.memory.context import MEMORY_NAME, ContextFile, ContextReport, with_memory_text
from engine.workspace.files import Document, PathRefused, UnreadableFile, Workspace
from tui.format import style_of
from tui.widgets.key_order import run_own_binding

#: Beyond this the editor refuses to open a file (a TextArea on 100 MB is unusable).
MAX_EDIT_BYTES = 2 * 1024 * 1024
CHECK_INTERVAL_S = 1.0
#: MEMORY.md's budget is measured again this long after the last keystroke
REMEASURE_S = 0.12


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


class BudgetArea(TextArea):
    """The text area, with the lines the agent never sees marked: dimmed, and a bar in
    the gutter (``▍`` for a line it never sees, ``╎`` for one it sees part of)."""

    hidden_rows: frozenset[int] = frozenset()
    cut_rows: frozenset[int] = frozenset()

    async def _on_key(self, event: events.Key) -> None:
        if not await run_own_binding(self, event):  # in the order typed (key_order)
            await super()._on_key(event)

    def mark(self, hidden: frozenset[int], cut: frozenset[int]) -> None:
        if hidden == self.hidden_rows and cut == self.cut_rows:
            return
        self.hidden_rows, self.cut_rows = hidden, cut
        self._line_cache.clear()  # its key knows nothing of the marks
        self.refresh()

    def get_line(self, line_index: int) -> Text:
        line = super().get_line(line_index)
        if line_index in self.hidden_rows:
            line.stylize(Style(dim=True))
        return line

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        if not (self.hidden_rows or self.cut_rows) or not self.show_line_numbers:
            return strip
        row = self.wrapped_document.offset_to_location(Offset(0, y + self.scroll_offset.y))[0]
        hidden = row in self.hidden_rows
        if not hidden and row not in self.cut_rows:
            return strip
        at = self.gutter_width - 1  # the gutter's last column (a margin space)
        variables = self.app.theme_variables
        colour = style_of(variables, "state-error" if hidden else "state-dirty", "red")
        bar = Strip([Segment("▍" if hidden else "╎", Style.parse(colour))], 1)
        return Strip.join([strip.crop(0, at), bar, strip.crop(at + 1, strip.cell_length)])


class EditorPane(Vertical):
    """Header line (and MEMORY.md's budget line) + a markdown ``TextArea``."""

    DEFAULT_CSS = """
    EditorPane #editor-budget { height: 1; padding: 0 1; background: $boost; display: none; }
    """

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
        #: what the agent is given (the last report) and MEMORY.md's share of it now
        self.context: ContextReport | None = None
        self.budget: ContextFile | None = None
        self._remeasure_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="editor-header")
        yield Static(id="editor-budget")
        area = BudgetArea.code_editor(
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
            if self.is_memory:
                if self._remeasure_timer is not None:
                    self._remeasure_timer.stop()
                self._remeasure_timer = self.set_timer(REMEASURE_S, self.remeasure)

    # -- what the agent is given ---------------------------------------------------
    @property
    def area_marks(self) -> BudgetArea:
        return self.query_one("#editor-area", BudgetArea)

    @property
    def is_memory(self) -> bool:
        """MEMORY.md itself: the file OpenClaw injects into every turn."""
        return self.rel == MEMORY_NAME

    def on_resize(self) -> None:
        if self.budget is not None:
            self.remeasure()  # the budget line's wording follows the width

    def set_context(self, report: ContextReport | None) -> None:
        """A new measure of the bootstrap files (each tree load brings one)."""
        self.context = report
        self.remeasure()

    def remeasure(self) -> None:
        """Measure MEMORY.md as the buffer holds it now: the budget line and the marks."""
        self._remeasure_timer = None
        report = self.context
        line = self.query_one("#editor-budget", Static)
        if report is None or not self.is_memory or self.doc is None:
            self.budget = None
            line.display = False
            self.area_marks.mark(frozenset(), frozenset())
            return
        live = with_memory_text(report, self.area.text, self.workspace.root)
        self.budget = budget = live.memory
        if budget is None:
            line.display = False
            return
        hidden = frozenset(
            row - 1 for r in budget.hidden for row in range(r.start_line, r.end_line + 1)
        )
        self.area_marks.mark(hidden, frozenset(n - 1 for n in budget.cut_lines))
        width = max(0, self.size.width - 2)
        line.update(budget_line(budget, self.app.theme_variables, width), layout=False)
        line.display = True

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
        self.remeasure()
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
        # the line two above at the top; soft-wrapped lines take several screen rows
        top = area.wrapped_document.location_to_offset((max(0, row - 2), 0)).y
        area.scroll_to(y=top, animate=False)

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


def budget_line(budget: ContextFile, variables: dict[str, str], width: int = 0) -> Text:
    """``MEMORY.md 31,204 chars · 20,000 injected · ~5,000 tokens a turn`` and what is cut;
    shorter when that does not fit ``width`` (the unseen lines stay)."""
    colour = style_of(variables, "state-error", "red")
    why = ", ".join("max/file" if c == "per-file-limit" else "max/total" for c in budget.causes)
    where = ", ".join(str(r) for r in budget.hidden) or "the end"
    plain = "" if budget.truncated else " · all of it reaches the agent"
    cut = f" · ✂ {where} unseen" if budget.truncated else ""
    forms = [
        (
            budget.path + " ",
            f"{budget.raw_chars:,} chars · {budget.injected_chars:,} injected"
            f" · ~{budget.tokens:,} tokens a turn",
            cut,
            f" ({why})" if cut else plain,
        ),
        (
            budget.path + " ",
            f"{budget.raw_chars:,} chars · {budget.injected_chars:,} injected"
            f" · ~{budget.tokens:,} tokens a turn",
            cut,
            "",
        ),
        (
            "",
            f"{budget.raw_chars:,}→{budget.injected_chars:,} chars · ~{budget.tokens:,} tok",
            cut.replace("lines ", "").replace("line ", ""),
            "",
        ),
    ]
    for name, sizes, unseen, note in forms:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(name, style="bold")
        text.append(sizes)
        text.append(unseen, style=f"bold {colour}")
        text.append(note, style="dim")
        if not width or text.cell_len <= width:
            break
    return text
