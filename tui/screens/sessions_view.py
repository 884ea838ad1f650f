"""Sessions view: how close each session is to compaction, and its memory-flush state.

One row per session of the agent (``sessions.json`` entries plus stray
transcripts): the token estimate against the flush threshold
(``contextWindow − reserveTokensFloor − softThresholdTokens``), the compaction
cycle and the flush state. The panel below shows why, and the two prompts of
the flush turn. ``f`` records a flush for a session that is due (what an agent
runner does after the turn); ``r`` re-reads the transcripts.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker

from engine.core import Engine
from engine.memory.flush import FlushDecision, FlushPolicy, SessionStoreError

STATE_STYLES = {
    "due": "bold yellow",
    "flushed": "green",
    "below-threshold": "",
    "read-only": "magenta",
    "disabled": "dim",
    "no-transcript": "red",
}
BAR_WIDTH = 20


def usage_bar(tokens: int, threshold: int, width: int = BAR_WIDTH) -> str:
    """``███████░░░ 70%``: tokens as a share of the flush threshold (capped at full)."""
    if threshold <= 0:
        return "-"
    share = tokens / threshold
    filled = min(width, round(share * width))
    return "█" * filled + "░" * (width - filled) + f" {share:4.0%}"


class SessionsViewScreen(Screen[None]):
    """Token estimate vs threshold and the flush state of every session."""

    DEFAULT_CSS = """
    SessionsViewScreen { layout: vertical; }
    SessionsViewScreen #sessions-title { height: 1; padding: 0 1; background: $boost; }
    SessionsViewScreen #sessions-table { height: 1fr; }
    SessionsViewScreen #sessions-detail {
        height: auto; max-height: 12; padding: 0 1; border-top: solid $primary;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "r",
            "refresh",
            "Refresh",
            id="sessions.refresh",
            tooltip="Re-read sessions.json and the transcripts",
        ),
        Binding(
            "f",
            "mark_flushed",
            "Mark flushed",
            id="sessions.mark_flushed",
            tooltip="Record that the flush turn ran for this session's current cycle",
        ),
        Binding("escape", "close", "Back", id="sessions.close", tooltip="Close the sessions view"),
    ]

    def __init__(self, engine: Engine, *, day: dt.date | None = None) -> None:
        super().__init__()
        self.engine = engine
        self._day = day
        self.policy: FlushPolicy | None = None
        self.decisions: list[FlushDecision] = []
        self.error: str | None = None
        self.last_load: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        yield Static("Sessions — loading…", id="sessions-title")
        yield DataTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="sessions-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#sessions-table", DataTable)
        table.add_columns("session", "tokens", "threshold", "of threshold", "cycle", "flush")
        self.last_load = self._load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="sessions")
    def _load(self) -> None:
        try:
            policy = FlushPolicy(self.engine.settings)
            decisions = policy.decisions()
        except (SessionStoreError, ValueError, OSError) as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        self.app.call_from_thread(self._show, policy, decisions)

    def _show_error(self, message: str) -> None:
        self.error = message
        self.query_one("#sessions-title", Static).update(f"Sessions — {message}")

    def _show(self, policy: FlushPolicy, decisions: list[FlushDecision]) -> None:
        self.policy = policy
        self.decisions = decisions
        self.error = None
        table = self.query_one("#sessions-table", DataTable)
        table.clear()
        for d in decisions:
            state = d.state if d.state != "flushed" else f"flushed (cycle {d.compaction_count})"
            table.add_row(
                d.key,
                f"{d.tokens:,}",
                f"{d.threshold:,}",
                usage_bar(d.tokens, d.threshold),
                str(d.compaction_count),
                Text(state, style=STATE_STYLES.get(d.state, "")),
                key=d.key,
            )
        f = policy.flush
        due = sum(1 for d in decisions if d.needs_flush)
        self.query_one("#sessions-title", Static).update(
            f"Sessions — {len(decisions)} · {due} need a flush · flush "
            f"{'on' if f.enabled else 'off'} · reserve {f.reserve_tokens_floor:,} · "
            f"soft {f.soft_threshold_tokens:,}"
        )
        self._detail(0 if decisions else None)

    @on(DataTable.RowHighlighted, "#sessions-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.cursor_row)

    @property
    def current(self) -> FlushDecision | None:
        table = self.query_one("#sessions-table", DataTable)
        row = table.cursor_row
        return self.decisions[row] if 0 <= row < len(self.decisions) else None

    def _detail(self, row: int | None) -> None:
        detail = self.query_one("#sessions-detail", Static)
        if self.policy is None:
            return
        prompts = self.policy.prompts(self._day)
        text = Text()
        if row is not None and 0 <= row < len(self.decisions):
            d = self.decisions[row]
            text.append(f"{d.key}: ", style="bold")
            text.append(f"{d.state} — {d.reason}\n", style=STATE_STYLES.get(d.state, ""))
            text.append(
                f"threshold = {d.context_window:,} − {d.reserve_tokens_floor:,} − "
                f"{d.soft_threshold_tokens:,} = {d.threshold:,}; "
                f"{d.messages} messages in context, {d.total_tokens:,} tokens written in all\n"
            )
        else:
            text.append("No sessions found.\n", style="italic")
        text.append("system prompt: ", style="bold")
        text.append(prompts["systemPrompt"] + "\n")
        text.append("prompt: ", style="bold")
        text.append(prompts["prompt"])
        detail.update(text)

    def action_mark_flushed(self) -> None:
        d = self.current
        if d is None or self.policy is None:
            self.notify("No session selected", severity="warning")
            return
        try:
            self.policy.mark_flushed(d.key)
        except (ValueError, SessionStoreError, OSError) as exc:
            self.notify(str(exc), title="Not recorded", severity="warning")
            return
        self.notify(f"Flush recorded for {d.key} (cycle {d.compaction_count})")
        self.last_load = self._load()

    def action_refresh(self) -> None:
        self.last_load = self._load()

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = ["SessionsViewScreen", "usage_bar"]
