"""memdeck's ranking beside OpenClaw 2026.9.6's for the query in the search pane.

A user debugging "why did my agent's memory_search return X?" needs both lists
side by side: the right column is what the agent got (the ``openclaw`` profile,
:meth:`engine.core.Engine.search_openclaw`), the left is memdeck's own ranking
as the search pane shows it. Each OpenClaw row is marked with how it moved
relative to memdeck's rank of the same lines (``▲2`` two places higher, ``▼1``
one lower, ``=`` same place, ``new`` not in memdeck's list; ``≈`` when only an
overlapping chunk of the same file is there, since the two profiles chunk some
files differently). The panel below explains the highlighted row of either side
with its breakdown formula.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from engine.core import Engine


@dataclass(frozen=True)
class Row:
    """One ranked chunk of either side."""

    path: str
    start: int
    end: int
    score: float
    formula: str


def rank_move(row: Row, position: int, other: Sequence[Row]) -> str:
    """How *row* (at 1-based *position*) moved relative to the other list."""
    for index, candidate in enumerate(other, 1):
        if (candidate.path, candidate.start, candidate.end) == (row.path, row.start, row.end):
            delta = index - position
            return "=" if delta == 0 else (f"▲{delta}" if delta > 0 else f"▼{-delta}")
    for index, candidate in enumerate(other, 1):
        if candidate.path == row.path and candidate.start <= row.end and row.start <= candidate.end:
            return f"≈{index}"
    return "new"


MOVE_STYLES = {"=": "dim", "new": "bold magenta"}


def _style(move: str) -> str:
    if move in MOVE_STYLES:
        return MOVE_STYLES[move]
    return {"▲": "green", "▼": "red", "≈": "yellow"}.get(move[:1], "")


class OpenClawCompareScreen(Screen[None]):
    """Two rankings of one query: memdeck's and OpenClaw 2026.9.6's."""

    DEFAULT_CSS = """
    OpenClawCompareScreen { layout: vertical; }
    OpenClawCompareScreen #compare-title { height: 1; padding: 0 1; background: $boost; }
    OpenClawCompareScreen #compare-sides { height: 1fr; }
    OpenClawCompareScreen .compare-side { width: 1fr; }
    OpenClawCompareScreen .compare-head { height: 1; padding: 0 1; text-style: bold; }
    OpenClawCompareScreen DataTable { height: 1fr; }
    OpenClawCompareScreen #compare-detail {
        height: auto; max-height: 8; padding: 0 1; border-top: solid $primary;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="compare.close", tooltip="Close the comparison"),
    ]

    def __init__(self, engine: Engine, query: str, memdeck_rows: Sequence[Row]) -> None:
        super().__init__()
        self.engine = engine
        self.query_text = query
        self.memdeck_rows = list(memdeck_rows)
        self.openclaw_rows: list[Row] = []
        self.note = ""

    def compose(self) -> ComposeResult:
        yield Static(
            f"“{self.query_text}” — memdeck (left) vs OpenClaw 2026.9.6 memory_search (right)",
            id="compare-title",
        )
        with Horizontal(id="compare-sides"):
            with Vertical(classes="compare-side"):
                yield Static("memdeck", classes="compare-head")
                yield DataTable(id="memdeck-table", cursor_type="row", zebra_stripes=True)
            with Vertical(classes="compare-side"):
                yield Static("OpenClaw 2026.9.6 (--profile openclaw)", classes="compare-head")
                yield DataTable(id="openclaw-table", cursor_type="row", zebra_stripes=True)
        yield Static("ranking…", id="compare-detail")
        yield Footer()

    def on_mount(self) -> None:
        for table_id in ("#memdeck-table", "#openclaw-table"):
            table = self.query_one(table_id, DataTable)
            table.add_columns("#", "move", "score", "where")
        self._fill("#memdeck-table", self.memdeck_rows, None)
        self._rank()

    @work(thread=True, exclusive=True)
    def _rank(self) -> None:
        try:
            outcome = self.engine.openclaw_searcher().outcome(self.query_text)
        except Exception as exc:  # shown, never raised into the app
            self.app.call_from_thread(self._show_error, f"{type(exc).__name__}: {exc}")
            return
        rows = [
            Row(c.path, c.start_line, c.end_line, c.score, c.formula()) for c in outcome.results
        ]
        note = (
            "nothing passed minScore, so OpenClaw dropped the floor to 0"
            if outcome.floor_dropped
            else ""
        )
        if outcome.keyword_terms:
            note = (note + "; " if note else "") + "keywords " + ", ".join(outcome.keyword_terms)
        self.app.call_from_thread(self._show, rows, note)

    def _show(self, rows: list[Row], note: str) -> None:
        self.openclaw_rows = rows
        self.note = note
        self._fill("#openclaw-table", rows, self.memdeck_rows)
        self._fill("#memdeck-table", self.memdeck_rows, rows)
        moved = sum(1 for i, r in enumerate(rows, 1) if rank_move(r, i, self.memdeck_rows) != "=")
        self.query_one("#compare-detail", Static).update(
            f"{len(rows)} OpenClaw results, {moved} placed differently from memdeck"
            + (f" — {note}" if note else "")
        )

    def _show_error(self, message: str) -> None:
        self.query_one("#compare-detail", Static).update(f"OpenClaw ranking failed: {message}")

    def _fill(self, table_id: str, rows: Sequence[Row], other: Sequence[Row] | None) -> None:
        """Rows with their move against *other* (None: not ranked yet, no marks)."""
        table = self.query_one(table_id, DataTable)
        table.clear()
        for position, row in enumerate(rows, 1):
            move = rank_move(row, position, other) if other is not None else ""
            table.add_row(
                str(position),
                Text(move, style=_style(move)) if move else "",
                f"{row.score:.4f}",
                f"{row.path}:{row.start}-{row.end}",
            )

    @on(DataTable.RowHighlighted)
    def _explain(self, event: DataTable.RowHighlighted) -> None:
        rows = self.memdeck_rows if event.data_table.id == "memdeck-table" else self.openclaw_rows
        if 0 <= event.cursor_row < len(rows):
            row = rows[event.cursor_row]
            side = "memdeck" if event.data_table.id == "memdeck-table" else "OpenClaw"
            self.query_one("#compare-detail", Static).update(
                f"{side} · {row.path}:{row.start}-{row.end}\n{row.formula}"
            )

    def action_close(self) -> None:
        self.dismiss(None)
