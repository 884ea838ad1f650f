"""What the agent is given every turn: each bootstrap file against OpenClaw's budget.

One row per file OpenClaw 2026.9.6 injects into a main-session turn, in its order:
raw and injected characters, the token estimate and whether (and why) it is cut.
The panel below shows the highlighted file's unseen lines and the whole budget.
Enter on a file with unseen lines opens it in the editor at the first of them
(the screen is dismissed with ``(path, line)``); ``r`` measures again.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from engine.config.settings import Settings
from engine.memory.context import ContextFile, ContextReport, context_report

BAR_WIDTH = 24


def share_bar(part: int, whole: int, width: int = BAR_WIDTH) -> str:
    """``██████░░░░ 33%``: ``part`` as a share of ``whole`` (capped at full)."""
    if whole <= 0:
        return "-"
    share = part / whole
    filled = min(width, round(share * width))
    return "█" * filled + "░" * (width - filled) + f" {share:4.0%}"


def file_state(f: ContextFile) -> str:
    if f.missing:
        return "[MISSING] line"
    if f.injected_chars == 0 and f.raw_chars:
        return "dropped (max/total)"
    if not f.truncated:
        return "whole"
    return f"✂ {f.hidden_lines:,} lines unseen"


def causes(f: ContextFile) -> str:
    return ", ".join("max/file" if c == "per-file-limit" else "max/total" for c in f.causes)


class ContextViewScreen(Screen[tuple[str, int] | None]):
    """The bootstrap files, their sizes and the lines the agent never sees."""

    DEFAULT_CSS = """
    ContextViewScreen { layout: vertical; }
    ContextViewScreen #context-title { height: 1; padding: 0 1; background: $boost; }
    ContextViewScreen #context-table { height: auto; max-height: 1fr; }
    ContextViewScreen #context-space { height: 1fr; }
    ContextViewScreen #context-detail {
        height: auto; max-height: 14; padding: 0 1; border-top: solid $primary;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "open",
            "Open at the unseen lines",
            id="context.open",
            tooltip="Open the highlighted file in the editor at its first unseen line",
        ),
        Binding("r", "refresh", "Refresh", id="context.refresh", tooltip="Measure the files again"),
        Binding("escape", "close", "Back", id="context.close", tooltip="Close the context view"),
    ]

    def __init__(self, settings: Settings, report: ContextReport | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.report = report

    def compose(self) -> ComposeResult:
        yield Static(id="context-title")
        yield DataTable(id="context-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="context-detail")
        yield Static(id="context-space")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#context-table", DataTable)
        table.add_columns("file", "raw chars", "injected", "~tokens", "of the budget", "state")
        self.show(self.report or context_report(self.settings))
        table.focus()

    def show(self, report: ContextReport) -> None:
        self.report = report
        table = self.query_one("#context-table", DataTable)
        table.clear()
        for f in report.files:
            table.add_row(
                f.path,
                "missing" if f.missing else f"{f.raw_chars:,}",
                f"{f.injected_chars:,}",
                f"{f.tokens:,}",
                share_bar(f.injected_chars, report.total_max_chars, 8),
                Text(file_state(f), style="bold red" if f.truncated else ""),
                key=f.path,
            )
        memory = report.memory
        lead = (
            f"{memory.path}: {memory.injected_chars:,} of {memory.raw_chars:,} chars injected"
            if memory is not None
            else "no MEMORY.md"
        )
        self.query_one("#context-title", Static).update(
            f"What the agent is given every turn — {lead} · Enter opens a file at its unseen "
            "lines · r refresh"
        )
        start = next((i for i, f in enumerate(report.files) if f.path == "MEMORY.md"), 0)
        if report.files:
            table.move_cursor(row=start)
        self._detail(start)

    @on(DataTable.RowHighlighted, "#context-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.cursor_row)

    @on(DataTable.RowSelected, "#context-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()  # the table takes Enter itself

    def _detail(self, row: int) -> None:
        report = self.report
        text = Text()
        if report is None:
            return
        if 0 <= row < len(report.files):
            f = report.files[row]
            text.append(f"{f.path}", style="bold")
            text.append(f"  limit {f.limit:,} chars")
            if f.causes:
                text.append(f"  cut by {causes(f)}")
            if f.hidden:
                text.append("\nnever reaches the agent: ", style="bold red")
                text.append(", ".join(f"{r} ({r.lines:,})" for r in f.hidden))
            if f.cut_lines:
                lines = ", ".join(str(n) for n in f.cut_lines)
                text.append(f"\nseen in part: line{'s' if len(f.cut_lines) > 1 else ''} {lines}")
            if f.missing:
                text.append("\nmissing: OpenClaw injects a line saying where it expected it")
            text.append("\n")
        text.append("all files ", style="bold")
        text.append(share_bar(report.total_chars, report.total_max_chars))
        text.append(
            f"  {report.total_chars:,} of {report.total_max_chars:,} chars · "
            f"~{report.tokens:,} tokens a turn · {report.max_chars:,} chars a file"
        )
        for note in report.notes:
            text.append(f"\nnote: {note}", style="italic")
        self.query_one("#context-detail", Static).update(text)

    def action_open(self) -> None:
        report = self.report
        row = self.query_one("#context-table", DataTable).cursor_row
        if report is None or not 0 <= row < len(report.files):
            return
        f = report.files[row]
        if f.path != "MEMORY.md":
            self.notify(f"{f.path} is not a memory file: memdeck only measures it", timeout=4)
            return
        self.dismiss((f.path, f.hidden[0].start_line if f.hidden else 1))

    def action_refresh(self) -> None:
        self.show(context_report(self.settings))

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = ["ContextViewScreen", "causes", "file_state", "share_bar"]
