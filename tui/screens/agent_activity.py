"""Agent activity: every ``memory_search`` an agent made, newest first, live.

Each search an agent runs through ``memdeck mcp`` (or ``memdeck search``) is a
row of the index's recall log with the client's name, the query and what came
back. This screen polls that log (cheap: one indexed query for rows newer than
the last one shown), so searches made by other processes — an MCP server an
agent started, another terminal — appear within a second. Enter closes the
screen with the chosen search; the app replays it in the search pane with the
options it ran with, so the user sees the full breakdown and why-not list of
the ranking the agent actually got.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.widgets.data_table import ColumnKey
from textual.worker import Worker

from engine.core import Engine
from engine.index.db import DatabaseError
from engine.memory.recall import RecallSearch, load_searches

POLL_S = 1.0
MAX_ROWS = 500


def when(at: float, today: dt.date) -> str:
    """``14:03:07`` today, ``03-14 14:03`` on another day (local time)."""
    moment = dt.datetime.fromtimestamp(at)
    if moment.date() == today:
        return moment.strftime("%H:%M:%S")
    return moment.strftime("%m-%d %H:%M")


def returned_summary(search: RecallSearch, width: int = 60) -> str:
    """``MEMORY.md 0.58 · memory/2026-03-01.md 0.41`` within ``width``; "no results".

    What does not fit is counted (``· +2``) rather than cut mid-way, and when not even
    the first hit fits its path loses characters from the left, never its score:
    ``…ects/atlas.md 0.69 +1`` at 80 columns.
    """
    hits = search.results
    if not hits:
        return "no results"
    items = [f"{h.path} {h.score:.2f}" for h in hits]
    full = " · ".join(items)
    if len(full) <= width:
        return full
    for shown in range(len(items) - 1, 0, -1):
        text = " · ".join(items[:shown]) + f" · +{len(items) - shown}"
        if len(text) <= width:
            return text
    first = hits[0]
    tail = f" {first.score:.2f}" + (f" +{len(hits) - 1}" if len(hits) > 1 else "")
    room = max(2, width - len(tail))
    path = first.path if len(first.path) <= room else "…" + first.path[-(room - 1) :]
    return path + tail


def activity_title(n: int, clients: list[str], width: int) -> str:
    """The header line within ``width`` cells. What gives way first: the words of the
    Enter hint, "newest first" (the time column says it), the hint itself (the
    table's Enter is not in the footer), then the client names become a count; the
    number of searches stays."""
    head = f"Agent activity — {n} search{'es' if n != 1 else ''}"
    by = f" by {', '.join(clients)}" if clients else ""
    count = f" by {len(clients)} clients" if len(clients) > 1 else by
    for text in (
        head + by + " · newest first · Enter replays in the search pane",
        head + by + " · newest first · Enter replays",
        head + by + " · Enter replays",
        head + by,
        head + count + " · Enter replays",
        head + count,
    ):
        if cell_len(text) <= width:  # cells, not characters: a client may name itself in CJK
            return text
    return head


class SearchesLoaded(Message):
    """New rows of the log (or the error reading it), from the loading thread."""

    def __init__(self, searches: list[RecallSearch], error: str | None = None) -> None:
        super().__init__()
        self.searches = searches
        self.error = error


class AgentActivityScreen(Screen[RecallSearch | None]):
    """The agents' searches, newest first; Enter replays one in the search pane."""

    DEFAULT_CSS = """
    AgentActivityScreen { layout: vertical; }
    AgentActivityScreen #activity-title { height: 1; padding: 0 1; background: $boost; }
    AgentActivityScreen #activity-table { height: 1fr; }
    AgentActivityScreen #activity-detail {
        height: auto; max-height: 14; padding: 0 1; border-top: solid $primary;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "replay",
            "Replay",
            id="activity.replay",
            tooltip="Run this query again in the search pane, with its breakdown and why-not",
        ),
        Binding("r", "refresh", "Refresh", id="activity.refresh", tooltip="Read the log again now"),
        Binding("escape", "close", "Back", id="activity.close", tooltip="Close agent activity"),
    ]

    def __init__(
        self,
        engine: Engine,
        *,
        today: Callable[[], dt.date] = dt.date.today,
        poll: float = POLL_S,
    ) -> None:
        super().__init__()
        self.engine = engine
        self._today = today
        self._poll = poll
        self.searches: list[RecallSearch] = []  # newest first, as shown
        self.error: str | None = None
        self.last_load: Worker[None] | None = None
        self._answered = False
        self._returned_width = 60

    def compose(self) -> ComposeResult:
        yield Static("Agent activity — loading…", id="activity-title")
        yield DataTable(id="activity-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="activity-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#activity-table", DataTable)
        table.add_column("time", key="time", width=11)
        table.add_column("client", key="client", width=14)
        table.add_column("query", key="query", width=32)
        table.add_column("returned", key="returned")
        self._fit_columns(self.size.width)
        self.last_load = self._load()
        if self._poll > 0:
            self.set_interval(self._poll, self._tick)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_columns(event.size.width)
        if self.searches:
            self._show_title()

    def _fit_columns(self, width: int) -> None:
        """Client and query columns shrink on narrow terminals so what was returned
        (the point of the view) keeps room at 80 columns."""
        if width <= 0:
            return
        table = self.query_one("#activity-table", DataTable)
        # as wide as the longest client name seen (up to a quarter of the screen)
        longest = max((cell_len(s.client) for s in self.searches), default=0)
        client = max(12 if width < 100 else 14, min(longest + 1, max(12, width // 4)))
        query = max(16, min(40, (width - 11 - client - 8) // 2))
        for key, w in (("client", client), ("query", query)):
            column = table.columns.get(ColumnKey(key))
            if column is not None and column.width != w:
                column.width = w
                column.auto_width = False
        self._returned_width = max(20, width - 11 - client - query - 8)
        if self.searches:
            self._add([])  # redraw the rows with the new summary width

    def _tick(self) -> None:
        if self.last_load is None or self.last_load.is_finished:
            self.last_load = self._load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="activity")
    def _load(self) -> None:
        after = self.searches[0].id if self.searches else None
        try:
            self.engine.refresh_store()  # another process may have rebuilt the index
            with self.engine.pinned_store() as store:
                new = load_searches(store, limit=MAX_ROWS, after_id=after)
        except (DatabaseError, OSError) as exc:
            self.post_message(SearchesLoaded([], str(exc)))  # never blocks on the UI thread
            return
        if new or after is None:
            self.post_message(SearchesLoaded(new))

    def on_searches_loaded(self, message: SearchesLoaded) -> None:
        if message.error is not None:
            self.error = message.error
            self.query_one("#activity-title", Static).update(f"Agent activity — {message.error}")
        else:
            self._add(message.searches)

    def _add(self, new: list[RecallSearch]) -> None:
        self.error = None
        table = self.query_one("#activity-table", DataTable)
        known = {s.id for s in self.searches}
        new = [s for s in new if s.id not in known]
        highlighted = self.current
        self.searches = (new + self.searches)[:MAX_ROWS]
        seen = {o.client for o in self.searches[len(new) :]}
        if new and self.size.width > 0 and any(s.client not in seen for s in new):
            self._fit_columns(self.size.width)  # a new client name: the column may widen
            return
        table.clear()
        today = self._today()
        for s in self.searches:
            table.add_row(
                when(s.at, today),
                Text(s.client, style="bold"),
                s.query,
                Text(
                    returned_summary(s, self._returned_width),
                    style="" if s.results else "dim italic",
                ),
                key=str(s.id),
            )
        if highlighted is not None and highlighted in self.searches:
            table.move_cursor(row=self.searches.index(highlighted))
        self._show_title()
        self._detail()

    def _show_title(self) -> None:
        if self.error is None:
            clients = sorted({s.client for s in self.searches})
            self.query_one("#activity-title", Static).update(
                activity_title(len(self.searches), clients, self.size.width - 2)
            )

    @property
    def current(self) -> RecallSearch | None:
        table = self.query_one("#activity-table", DataTable)
        row = table.cursor_row
        return self.searches[row] if 0 <= row < len(self.searches) else None

    @on(DataTable.RowHighlighted, "#activity-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def _detail(self) -> None:
        detail = self.query_one("#activity-detail", Static)
        s = self.current
        if s is None:
            detail.update(
                Text(
                    "No agent searches yet. Agents reach memdeck through `memdeck mcp` "
                    "(see README: MCP server) or `memdeck search`.",
                    style="italic",
                )
            )
            return
        text = Text()
        moment = dt.datetime.fromtimestamp(s.at).isoformat(sep=" ", timespec="seconds")
        text.append(f"{s.client}", style="bold")
        text.append(f" at {moment}: ")
        text.append(f"{s.query}\n", style="bold")
        answered = {
            "qmd": f"qmd ({s.mode_name})",
            "openclaw": f"OpenClaw's ranking (--profile openclaw, mode {s.mode_name})",
        }.get(s.backend, f"mode {s.mode}")
        text.append(
            f"{answered} · maxResults {s.max_results} · minScore {s.min_score:g} · "
            f"{len(s.results)} returned\n",
            style="dim",
        )
        for i, h in enumerate(s.results, start=1):
            text.append(f"{i:>2}. {h.score:.4f}  ", style="bold")
            text.append(f"{h.path}:{h.start_line}-{h.end_line}\n")
        if not s.results:
            text.append("nothing scored above minScore — Enter shows why in the why-not list\n")
        if s.backend != "builtin":
            who = "qmd" if s.backend == "qmd" else "OpenClaw's ranking"
            text.append(
                f"{who} answered this search; Enter runs it with memdeck's ranking beside it\n",
                style="italic",
            )
        detail.update(text)

    def action_replay(self) -> None:
        s = self.current
        if s is None:
            self.notify("No search selected", severity="warning")
            return
        if not self._answered:
            self._answered = True
            self.dismiss(s)

    @on(DataTable.RowSelected, "#activity-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_replay()

    def action_refresh(self) -> None:
        self.last_load = self._load()

    def action_close(self) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(None)


__all__ = ["AgentActivityScreen", "activity_title", "returned_summary", "when"]
