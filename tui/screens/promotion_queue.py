"""Promotion queue: review dreaming candidates before they enter MEMORY.md.

Each row is a candidate proposed by the deep phase (or by recovery). The side
panel shows its score parts (component × weight), its sources and recall
questions, and the exact MEMORY.md change an accept makes. ``a`` writes that
previewed change — the very object on screen, refused if MEMORY.md changed in
between — and ``x`` rejects (remembered; the candidate is never proposed
again). Nothing is written any other way.

The deep phase runs in a thread worker; only the message handlers and the
worker's ``call_from_thread`` callbacks touch widgets.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker

from engine.core import Engine
from engine.memory.dreaming.config import DreamingSettings
from engine.memory.dreaming.deep import WEIGHTS, DeepResult, Proposal
from engine.memory.dreaming.promotion import Preview, PromotionError
from engine.memory.dreaming.service import Dreamer


class PromotionQueueScreen(Screen[None]):
    """Accept or reject each dreaming candidate, seeing the MEMORY.md diff first."""

    DEFAULT_CSS = """
    PromotionQueueScreen { layout: vertical; }
    PromotionQueueScreen #queue-title { height: 1; padding: 0 1; background: $boost; }
    PromotionQueueScreen #queue-body { height: 1fr; }
    PromotionQueueScreen #queue-table { width: 1fr; min-width: 40; }
    PromotionQueueScreen #queue-side { width: 1fr; padding: 0 1; border-left: solid $primary; }
    PromotionQueueScreen .queue-label { color: $text-muted; margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a",
            "accept",
            "Accept",
            id="promotion.accept",
            tooltip="Write the previewed line into MEMORY.md",
        ),
        Binding(
            "x",
            "reject",
            "Reject",
            id="promotion.reject",
            tooltip="Reject the candidate; it will not be proposed again",
        ),
        Binding(
            "r", "refresh", "Refresh", id="promotion.refresh", tooltip="Run the deep phase again"
        ),
        Binding(
            "escape", "close", "Back", id="promotion.close", tooltip="Close the promotion queue"
        ),
    ]

    class Promoted(Message):
        """MEMORY.md gained a line (the app may reload the editor and index)."""

        def __init__(self, key: str, path: str) -> None:
            super().__init__()
            self.key = key
            self.path = path

    def __init__(
        self,
        engine: Engine,
        *,
        now: dt.datetime | None = None,
        config: DreamingSettings | None = None,
    ) -> None:
        super().__init__()
        self.engine = engine
        self._now = now
        self._config = config
        self.dreamer: Dreamer | None = None
        self.result: DeepResult | None = None
        self.proposals: list[Proposal] = []
        self.current: Proposal | None = None
        self.current_preview: Preview | None = None
        self.error: str | None = None
        self.last_load: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        yield Static("Promotion queue — loading…", id="queue-title")
        with Horizontal(id="queue-body"):
            yield DataTable(id="queue-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="queue-side"):
                yield Static("Score parts", classes="queue-label")
                yield Static("", id="queue-parts")
                yield Static("Sources and questions", classes="queue-label")
                yield Static("", id="queue-sources")
                yield Static("MEMORY.md change on accept", classes="queue-label")
                yield Static("", id="queue-preview")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#queue-table", DataTable)
        table.add_columns("score", "recalls", "queries", "candidate")
        self.last_load = self._load()

    # -- loading ------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="promotion")
    def _load(self) -> None:
        try:
            dreamer = self.dreamer or Dreamer(self.engine, config=self._config)
            result = dreamer.deep(self._now)
        except Exception as exc:  # shown, never fatal to the app
            self.app.call_from_thread(self._show_error, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._show, dreamer, result)

    def _show_error(self, message: str) -> None:
        self.error = message
        self.query_one("#queue-title", Static).update(f"Promotion queue — {message}")

    def _show(self, dreamer: Dreamer, result: DeepResult) -> None:
        self.dreamer = dreamer
        self.result = result
        self.proposals = list(result.queue)
        self.error = None
        table = self.query_one("#queue-table", DataTable)
        table.clear()
        for p in self.proposals:
            label = ("↺ " if p.recovered else "") + p.candidate.text
            table.add_row(
                f"{p.score:.3f}",
                str(p.parts.recalls),
                str(p.parts.unique_queries),
                label[:80],
                key=p.key,
            )
        recovery = " · recovery ran" if result.recovery_triggered else ""
        self.query_one("#queue-title", Static).update(
            f"Promotion queue — {len(self.proposals)} candidates · memory health "
            f"{result.health:.2f}{recovery} · a accept · x reject · r refresh"
        )
        self._select(0 if self.proposals else None)

    # -- selection and detail -----------------------------------------------------
    @on(DataTable.RowHighlighted, "#queue-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._select(event.cursor_row)

    def _select(self, row: int | None) -> None:
        if row is None or not (0 <= row < len(self.proposals)):
            self.current = None
            self.current_preview = None
            self.query_one("#queue-parts", Static).update("no candidate waiting for review")
            self.query_one("#queue-sources", Static).update("")
            self.query_one("#queue-preview", Static).update("")
            return
        p = self.proposals[row]
        self.current = p
        assert self.dreamer is not None
        try:
            self.current_preview = self.dreamer.preview(p, self._now)
        except PromotionError as exc:
            self.current_preview = None
            self.query_one("#queue-preview", Static).update(Text(str(exc), style="bold red"))
        else:
            self.query_one("#queue-preview", Static).update(render_preview(self.current_preview))
        self.query_one("#queue-parts", Static).update(render_parts(p))
        self.query_one("#queue-sources", Static).update(render_sources(p))

    # -- actions --------------------------------------------------------------------
    def action_accept(self) -> None:
        p, shown = self.current, self.current_preview
        if p is None or shown is None or self.dreamer is None:
            self.notify("Nothing to accept", severity="warning")
            return
        try:
            self.dreamer.accept(p, shown)
        except PromotionError as exc:
            self.notify(str(exc), title="Not written", severity="error")
            self._select(self.proposals.index(p))  # recompute the preview
            return
        self.notify(f"Promoted into {shown.path.name} under {shown.section}")
        self.post_message(self.Promoted(p.key, str(shown.path)))
        self._remove(p)

    def action_reject(self) -> None:
        p = self.current
        if p is None or self.dreamer is None:
            self.notify("Nothing to reject", severity="warning")
            return
        try:
            self.dreamer.reject(p)
        except (PromotionError, OSError) as exc:
            self.notify(str(exc), title="Not recorded", severity="error")
            return
        self.notify("Rejected; it will not be proposed again")
        self._remove(p)

    def _remove(self, p: Proposal) -> None:
        index = self.proposals.index(p)
        self.proposals.pop(index)
        table = self.query_one("#queue-table", DataTable)
        table.remove_row(p.key)
        self._select(min(index, len(self.proposals) - 1) if self.proposals else None)

    def action_refresh(self) -> None:
        self.last_load = self._load()

    def action_close(self) -> None:
        self.dismiss(None)


def render_parts(p: Proposal) -> Text:
    """One line per component: value × weight = contribution, then the total."""
    text = Text()
    for name, weight in WEIGHTS.items():
        value = getattr(p.parts, name)
        text.append(f"{name:<14}", style="bold")
        text.append(f"{value:6.3f} × {weight:.2f} = {value * weight:.4f}\n")
    text.append(f"{'total':<14}", style="bold")
    text.append(f"{p.score:.4f}")
    if p.recovered:
        text.append("  (recovered: low memory health)", style="italic")
    text.append(
        f"\nrecalls {p.parts.recalls} · queries {p.parts.unique_queries} · days {p.parts.days}"
        f" · tags {', '.join(p.candidate.tags) or '-'} · note age {p.age_days} d"
    )
    return text


def render_sources(p: Proposal) -> Text:
    text = Text()
    for ref in p.candidate.sources:
        text.append(f"• {ref}\n")
    for query in p.candidate.queries:
        text.append(f"? {query}\n", style="italic")
    return text


def render_preview(preview: Preview) -> Text:
    """The unified diff, added lines highlighted."""
    text = Text()
    for line in preview.diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            text.append(line + "\n", style="green")
        elif line.startswith("@@"):
            text.append(line + "\n", style="cyan")
        else:
            text.append(line + "\n", style="dim")
    return text


__all__ = ["PromotionQueueScreen", "render_parts", "render_preview", "render_sources"]
