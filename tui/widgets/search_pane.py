"""Live search: results as you type, each score taken apart, and why others lost.

Every ``Input.Changed`` starts an exclusive thread worker, so the previous
keystroke's worker is cancelled: if it has not reached the index yet it never
does (searches queue on a lock and a cancelled one gives up), and if it has, its
result is ignored because its generation is stale. The worker always retrieves
in hybrid mode, so the pane keeps the whole ``Retrieval`` (both candidate lists)
and every toggle — mode, fusion, weights, MMR, decay — is a call to the pure
``engine.search.rank.rank`` on it, without touching the index again.
"""

from __future__ import annotations

import collections
import datetime as dt
import threading
import time
from collections.abc import Callable, Mapping
from typing import ClassVar, Literal

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane
from textual.worker import get_current_worker

from engine.config.settings import FUSIONS
from engine.core import Engine
from engine.search.explain import fmt
from engine.search.model import Candidate, Retrieval, SearchOptions, SearchOutcome
from engine.search.rank import rank
from engine.searchers import keyword_only_reason
from tui import export, toggles
from tui.format import SCORE_BAR, bar_cells, location, score_bar, signed_shift, style_of
from tui.keymap import display_keys
from tui.messages import OpenLocation, SearchFailed, SearchFinished
from tui.widgets.breakdown import BreakdownView, candidate_lists, explain
from tui.widgets.search_input import SearchInput

PART_BAR = 3
#: How many of the results table's columns fit: all; the vector/text factors
#: without decay and MMR; or only rank, score and location.
Columns = Literal["full", "sides", "narrow"]
#: Narrower than this, the results drop the decay and MMR columns, and narrower
#: than SIDES_WIDTH the vector/text columns too, so locations fit (the parts take
#: 58 cells with padding and borders, vector/text alone 46; a dated daily-log
#: location ~26). At 80 columns the factors the fusion used stay in the table.
COMPACT_WIDTH = 84
SIDES_WIDTH = 72
#: Shorter than this, the results list shrinks to leave the why-not list rows.
SHORT_HEIGHT = 30


class SearchPane(Vertical):
    """The search box, toggles, ranked results, breakdown and why-not views."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "leave",
            "Leave search",
            id="search.leave",
            tooltip="Leave the search box (focus the results or the tree)",
        ),
        Binding(
            "f2",
            "cycle_mode",
            "Mode",
            id="search.mode",
            show=False,
            tooltip="Cycle hybrid → FTS-only → vector-only (re-ranks, no re-query)",
        ),
        Binding(
            "f3",
            "cycle_fusion",
            "Fusion",
            id="search.fusion",
            show=False,
            tooltip="Cycle the fusion: " + " → ".join(FUSIONS),
        ),
        Binding(
            "f4", "toggle_mmr", "MMR", id="search.mmr", show=False, tooltip="MMR diversity on/off"
        ),
        Binding(
            "f5",
            "toggle_decay",
            "Decay",
            id="search.decay",
            show=False,
            tooltip="Temporal decay on/off",
        ),
        Binding(
            "f6",
            "weight(-1)",
            "Vec −",
            id="search.weight_down",
            show=False,
            tooltip="Move 0.1 of weight from vector to text",
        ),
        Binding(
            "f7",
            "weight(1)",
            "Vec +",
            id="search.weight_up",
            show=False,
            tooltip="Move 0.1 of weight from text to vector",
        ),
        Binding(
            "f8",
            "toggle_detail",
            "Why not",
            id="search.whynot",
            show=False,
            tooltip="Switch between the breakdown and the why-not list",
        ),
        Binding(
            "ctrl+o",
            "copy",
            "Copy",
            id="search.copy",
            show=False,
            tooltip="Copy what the detail shows: the result (path#lines, text) and its "
            "breakdown, or the why-not list",
        ),
        Binding(
            "f10",
            "app.export_ranking",
            "Export",
            id="search.export",
            show=False,
            tooltip="Export the whole ranking to a Markdown or JSON file (asks for the path)",
        ),
        Binding(
            "down",
            "cursor(1)",
            show=False,
            id="search.next",
            tooltip="Next result, or dropped candidate on the why-not tab (from the search box)",
        ),
        Binding(
            "up",
            "cursor(-1)",
            show=False,
            id="search.previous",
            tooltip="Previous result (from the search box)",
        ),
        Binding(
            "pagedown",
            "cursor(5)",
            show=False,
            id="search.page_down",
            tooltip="Five rows down (from the search box)",
        ),
        Binding(
            "pageup",
            "cursor(-5)",
            show=False,
            id="search.page_up",
            tooltip="Five rows up (from the search box)",
        ),
    ]

    def __init__(
        self,
        engine: Engine,
        *,
        today: Callable[[], dt.date],
        blink: bool = True,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.engine = engine
        self._today = today
        self._blink = blink
        self.options: SearchOptions = engine.default_options()
        self.generation = 0
        self._started: dict[int, float] = {}
        self._lock = threading.Lock()
        self.retrieval: Retrieval | None = None
        self.outcome: SearchOutcome | None = None
        self.query_text = ""
        self.latencies_ms: collections.deque[float] = collections.deque(maxlen=500)
        self.draw_ms: collections.deque[float] = collections.deque(maxlen=500)
        self.engine_ms: collections.deque[float] = collections.deque(maxlen=500)
        self.shown = 0
        self.painted = 0
        self._whynot_drawn: SearchOutcome | None = None
        #: what the breakdown shows: (outcome, highlighted candidate, width)
        self._breakdown_shown: tuple[SearchOutcome | None, Candidate | None, int] | None = None
        #: a replayed agent search waiting for its results: (query, expected hits, who/when,
        #: the backend that answered the agent)
        self._replay: tuple[str, list[tuple[str, int, int]], str, str] | None = None
        #: "same" or "differs" once compared; "qmd" when qmd answered the agent (the pane
        #: shows the builtin ranking of the same query beside it, not a repeat of it)
        self.replay_verdict: str | None = None
        self.columns: Columns = "full"

    # -- layout ------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        keymap = getattr(self.app, "effective_keys", None)
        focus = keymap("search.focus", "ctrl+f") if keymap else "ctrl+f"
        yield SearchInput(
            placeholder=f"search memory…  ({display_keys(focus)} from anywhere, Esc leaves)",
            id="search-input",
        )
        yield Static(id="search-toggles")
        yield Static(id="search-status")
        # why a search that asked for vectors answered keyword-only: its own line,
        # wrapped, so the reason stays readable down to 80×24 (hidden otherwise)
        yield Static(id="search-fallback")
        table: DataTable[Text] = DataTable(
            id="results",
            cursor_type="row",
            zebra_stripes=True,
            cursor_foreground_priority="renderable",
        )
        yield table
        with TabbedContent(id="detail-tabs", initial="tab-breakdown"):
            with TabPane("Breakdown", id="tab-breakdown"):
                yield BreakdownView(id="breakdown")
            with TabPane("Why not", id="tab-whynot"):
                whynot: DataTable[Text] = DataTable(id="whynot", cursor_type="row")
                yield whynot
                yield Static(id="whynot-detail")

    def on_mount(self) -> None:
        inp = self.query_one("#search-input", Input)
        if not self._blink:
            inp.cursor_blink = False
        results = self.query_one("#results", DataTable)
        self._add_result_columns(results)
        whynot = self.query_one("#whynot", DataTable)
        whynot.add_column("location", key="location")
        whynot.add_column("score", key="score", width=7)
        whynot.add_column("lists", key="lists", width=9)
        whynot.add_column("reason", key="reason")
        self._show_toggles()
        self._show_status()

    def _add_result_columns(self, results: DataTable[Text]) -> None:
        results.add_column("#", key="rank", width=2)
        results.add_column("score", key="score", width=SCORE_BAR + 7)
        if self.columns != "narrow":
            results.add_column("vector", key="vector", width=PART_BAR + 5)
            results.add_column("text", key="text", width=PART_BAR + 5)
        if self.columns == "full":
            results.add_column("decay", key="decay", width=5)
            results.add_column("mmr", key="mmr", width=3)
        results.add_column("location", key="location")

    def on_resize(self, event: events.Resize) -> None:
        """Below COMPACT_WIDTH the decay and MMR columns go, below SIDES_WIDTH the
        vector/text columns too (the breakdown still has them all), so a result's
        location is never cut; below SHORT_HEIGHT the results list shrinks so the
        why-not list keeps rows."""
        self.set_class(event.size.height < SHORT_HEIGHT, "-short")
        # the status and toggle lines' wording depends on their width, known after this layout
        self.call_after_refresh(self._show_status)
        self.call_after_refresh(self._show_toggles)
        width = event.size.width
        columns: Columns = (
            "full" if width >= COMPACT_WIDTH else "sides" if width >= SIDES_WIDTH else "narrow"
        )
        if columns == self.columns:
            return
        self.columns = columns
        results = self.query_one("#results", DataTable)
        results.clear(columns=True)
        self._add_result_columns(results)
        self._draw(self.outcome)

    # -- typing → worker -----------------------------------------------------------
    @on(Input.Changed, "#search-input")
    def _query_changed(self, event: Input.Changed) -> None:
        self.generation += 1
        gen = self.generation
        self.query_text = event.value
        self._started = {gen: time.perf_counter()}
        if not event.value.strip():
            self.workers.cancel_group(self, "search")
            self.retrieval = None
            self._draw(None)
            return
        self._search(event.value, gen)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, query: str, generation: int) -> None:
        worker = get_current_worker()
        with self._lock:  # one index query at a time; stale ones give up here
            if worker.is_cancelled:
                return
            try:
                outcome = self.engine.search(
                    query, self.options.with_(mode="hybrid"), today=self._today()
                )
            except Exception as exc:
                if not worker.is_cancelled:
                    self.post_message(SearchFailed(generation, f"{type(exc).__name__}: {exc}"))
                return
        if not worker.is_cancelled:
            self.post_message(SearchFinished(generation, outcome))

    def on_search_finished(self, message: SearchFinished) -> None:
        message.stop()
        if message.generation != self.generation:
            return  # a newer keystroke is on its way
        self.retrieval = message.outcome.retrieval
        outcome = message.outcome
        if self.options.mode != "hybrid":
            outcome = rank(self.retrieval, self.options, self._today())
        if self._replay is not None and self._replay[0] == outcome.query:
            self._judge_replay(outcome)
        t_draw = time.perf_counter()
        self._draw(outcome)
        self.draw_ms.append((time.perf_counter() - t_draw) * 1000)
        self.engine_ms.append(message.outcome.timings_ms.get("total", 0.0))
        started = self._started.pop(message.generation, None)
        if started is not None:
            # Measured once the frame with the results has been composed.
            self.call_after_refresh(self._results_painted, started)

    def _results_painted(self, started: float) -> None:
        latency = (time.perf_counter() - started) * 1000
        self.latencies_ms.append(latency)
        self.painted += 1

    def on_search_failed(self, message: SearchFailed) -> None:
        message.stop()
        if message.generation != self.generation:
            return
        self.query_one("#search-status", Static).update(
            Text(f"search failed: {message.error}", style="bold red")
        )
        self.app.notify(message.error, title="Search failed", severity="error")

    # -- re-ranking toggles ----------------------------------------------------------
    def rerank(self) -> None:
        """Rank the cached retrieval again under the current options (no index query)."""
        self._show_toggles()
        if self.retrieval is None:
            return
        self._draw(rank(self.retrieval, self.options, self._today()))

    def rerank_or_redraw(self) -> None:
        """Redraw with the current theme's colours (re-ranking is cheap and pure)."""
        self._show_toggles()
        if self.outcome is not None and self.retrieval is not None:
            self.rerank()

    def research(self) -> None:
        """Run the current query again (the index changed under it)."""
        if self.query_text.strip():
            self.generation += 1
            self._started.pop(self.generation, None)
            self._search(self.query_text, self.generation)

    def replay(
        self,
        query: str,
        *,
        max_results: int,
        min_score: float,
        expected: list[tuple[str, int, int]],
        label: str,
        backend: str = "builtin",
    ) -> None:
        """Run an agent's search again as it ran: the configured ranking (the user's
        toggles reset) with its maxResults/minScore. Once the results are in, the
        pane says whether they are the ones the agent got (``replay_verdict``).
        A search qmd answered is replayed on the builtin index: the pane then says
        how many of the agent's hits memdeck's own ranking also returns."""
        self.options = self.engine.default_options().with_(
            max_results=max_results, min_score=min_score
        )
        self._replay = (query, expected, label, backend)
        self.replay_verdict = None
        self._show_toggles()
        inp = self.query_one("#search-input", Input)
        if inp.value == query:
            self.research()  # no Changed event for an unchanged value
        else:
            inp.value = query
            inp.cursor_position = len(query)

    def _judge_replay(self, outcome: SearchOutcome) -> None:
        assert self._replay is not None
        _, expected, label, backend = self._replay
        self._replay = None
        got = [(c.path, c.start_line, c.end_line) for c in outcome.results]
        if backend in ("qmd", "openclaw"):
            files = {p for p, _, _ in expected}
            shared = len(files & {c.path for c in outcome.results})
            self.replay_verdict = backend
            who = "qmd" if backend == "qmd" else "OpenClaw's ranking (--profile openclaw)"
            self.app.notify(
                f"{who} answered {label}; shown is memdeck's own ranking of the same query "
                f"({shared} of the {len(files)} files it returned are in it).",
                timeout=6,
            )
        elif got == expected:
            self.replay_verdict = "same"
            self.app.notify(f"Replayed {label}: the same ranking the agent got.", timeout=4)
        else:
            self.replay_verdict = "differs"
            self.app.notify(
                f"Replayed {label}: the ranking differs from what the agent got "
                "(the files or the index changed since).",
                severity="warning",
                timeout=6,
            )

    def set_options(self, options: SearchOptions) -> None:
        self.options = options
        self.rerank()

    def action_cycle_mode(self) -> None:
        self.set_options(toggles.cycle_mode(self.options))

    def action_cycle_fusion(self) -> None:
        self.set_options(toggles.cycle_fusion(self.options))

    def action_toggle_mmr(self) -> None:
        self.set_options(toggles.toggle_mmr(self.options))

    def action_toggle_decay(self) -> None:
        self.set_options(toggles.toggle_decay(self.options))

    def action_weight(self, direction: int) -> None:
        self.set_options(toggles.shift_weights(self.options, direction * toggles.WEIGHT_STEP))

    def action_toggle_detail(self) -> None:
        tabs = self.query_one("#detail-tabs", TabbedContent)
        tabs.active = "tab-whynot" if tabs.active == "tab-breakdown" else "tab-breakdown"

    # -- copy -------------------------------------------------------------------------
    def action_copy(self) -> None:
        tabs = self.query_one("#detail-tabs", TabbedContent)
        if tabs.active == "tab-whynot":
            self.copy_whynot()
        else:
            self.copy_result(breakdown=True)

    def copy_result(self, *, breakdown: bool = False, result: bool = True) -> None:
        c = self.highlighted()
        if c is None or self.outcome is None:
            self.app.notify("No result is highlighted.", severity="warning", timeout=3)
            return
        parts = [export.result_clip(c)] if result else []
        if breakdown:
            parts.append(export.breakdown_clip(c, self.outcome))
        self.app.copy_to_clipboard("\n".join(parts))
        what = " and ".join(w for w, on in (("result", result), ("breakdown", breakdown)) if on)
        self.app.notify(f"Copied the {what} of {export.anchor(c)}.", timeout=3)

    def copy_whynot(self) -> None:
        if self.outcome is None:
            self.app.notify("Search first: nothing to copy.", severity="warning", timeout=3)
            return
        self.app.copy_to_clipboard(export.whynot_clip(self.outcome))
        self.app.notify(f"Copied {len(self.outcome.dropped)} why-not rows.", timeout=3)

    def action_leave(self) -> None:
        results = self.query_one("#results", DataTable)
        if self.app.focused is self.query_one("#search-input") and results.row_count:
            results.focus()
        elif self.app.query_one("#tree").display:
            self.app.action_focus_pane("tree")  # type: ignore[attr-defined]
        else:  # the tree is hidden (narrow screen): the pane tabs, where 1–4 and / act
            self.app.query_one("#panes Tabs").focus()

    def action_cursor(self, delta: int) -> None:
        """↑ ↓ pgup pgdn from the search box: move through the list the detail shows
        (the results, or on the why-not tab the dropped candidates)."""
        tabs = self.query_one("#detail-tabs", TabbedContent)
        table = self.query_one("#whynot" if tabs.active == "tab-whynot" else "#results", DataTable)
        if table.row_count:
            row = max(0, min(table.row_count - 1, table.cursor_row + delta))
            table.move_cursor(row=row)

    # -- opening ----------------------------------------------------------------------
    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        self.open_highlighted()

    @on(DataTable.RowSelected, "#results")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.open_highlighted()

    def highlighted(self) -> Candidate | None:
        if self.outcome is None or not self.outcome.results:
            return None
        row = self.query_one("#results", DataTable).cursor_row
        if 0 <= row < len(self.outcome.results):
            return self.outcome.results[row]
        return None

    def open_highlighted(self) -> None:
        c = self.highlighted()
        if c is not None:
            self.post_message(OpenLocation(c.path, c.start_line))

    # -- drawing ------------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#results")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_breakdown()

    @on(DataTable.RowHighlighted, "#whynot")
    def _whynot_highlighted(self, event: DataTable.RowHighlighted) -> None:
        detail = self.query_one("#whynot-detail", Static)
        if self.outcome is None or not (0 <= event.cursor_row < len(self.outcome.dropped)):
            detail.update("")
            return
        c = self.outcome.dropped[event.cursor_row]
        detail.update(explain(c, self.outcome, self.app.theme_variables, self._detail_width()))

    def _show_breakdown(self) -> None:
        view = self.query_one("#breakdown", BreakdownView)
        outcome = self.outcome
        # ``_draw`` shows the breakdown, then moving the cursor there may highlight
        # the same row again: explaining it twice per keystroke is wasted work
        # (compared by identity: a ranking is a new object, and dataclass equality
        # would compare every candidate's numbers)
        key = (outcome, self.highlighted(), self._detail_width())
        last = self._breakdown_shown
        if (
            outcome is not None
            and last is not None
            and all(a is b for a, b in zip(key[:2], last[:2], strict=True))
            and key[2] == last[2]
        ):
            return
        self._breakdown_shown = key
        if outcome is None:
            view.show(Text("Type a query: the breakdown of the highlighted result appears here."))
            return
        c = self.highlighted()
        if c is None:
            view.show(
                Text("\n").join(
                    [
                        Text("No result passed the cut; see Why not (F8).\n"),
                        candidate_lists(
                            outcome, None, self.app.theme_variables, self._detail_width()
                        ),
                    ]
                )
                if outcome.candidates
                else Text("No candidates: nothing in the index matches this query.")
            )
            return
        view.show(explain(c, outcome, self.app.theme_variables, self._detail_width()))

    def _detail_width(self) -> int:
        """Cells available to the breakdown text (the pane minus padding and scrollbar)."""
        width = self.size.width - 4
        return width if width > 40 else 84

    def _show_toggles(self) -> None:
        bar = self.query_one("#search-toggles", Static)
        text = self._toggles_text(compact=False)
        if bar.size.width and text.cell_len > bar.size.width:  # 80 columns: every key shown
            text = self._toggles_text(compact=True)
        bar.update(text, layout=False)

    def _toggles_text(self, *, compact: bool) -> Text:
        """The toggle bar; ``compact`` drops the words a narrow terminal has no room
        for (each key and its state stay)."""
        d = toggles.describe(self.options)
        if compact:  # "on 30 d" → "30d", "on λ=0.70" → "λ0.70", "0.70/0.30" → "0.7/0.3"
            d["decay"] = d["decay"].removeprefix("on ").replace(" d", "d")
            d["mmr"] = d["mmr"].removeprefix("on ").replace("=", "")
            d["weights"] = f"{self.options.vector_weight:g}/{self.options.text_weight:g}"
        keys = self._keys()
        text = Text()
        for label, key, value in (
            ("", keys["search.mode"], d["mode"]),
            ("", keys["search.fusion"], d["fusion"]),
            ("", f"{keys['search.weight_down']}/{keys['search.weight_up']}", d["weights"]),
            ("MMR", keys["search.mmr"], d["mmr"]),
            ("decay", keys["search.decay"], d["decay"]),
            ("", keys["search.whynot"], "why-not"),
        ):
            text.append(key, style="bold reverse")
            text.append(f" {label}{' ' if label else ''}", style="dim")
            text.append(value, style="bold")
            text.append(" ")
        return text

    def _keys(self) -> dict[str, str]:
        keymap = getattr(self.app, "effective_keys", None)
        out = {}
        for b in self.BINDINGS:
            assert isinstance(b, Binding)
            key = keymap(b.id, b.key) if keymap else b.key
            out[str(b.id)] = key.split(",")[0].upper()
        return out

    def _show_status(self) -> None:
        out = self.outcome
        status = self.query_one("#search-status", Static)
        if out is None:
            status.update(
                Text("Enter opens the highlighted result in the editor.", style="dim"),
                layout=False,
            )
            self._show_fallback(None)
            return
        reason = keyword_only_reason(self.engine, out)
        text = self._status_text(out, reason, compact=False)
        if status.size.width and text.cell_len > status.size.width:  # keep minScore in view
            text = self._status_text(out, reason, compact=True)
        status.update(text, layout=False)
        self._show_fallback(reason)

    def _status_text(self, out: SearchOutcome, reason: str | None, *, compact: bool) -> Text:
        """The status line; ``compact`` is the narrow-terminal wording (same numbers)."""
        r = out.retrieval
        text = Text()
        text.append(
            f"{len(out.results)} result{'s' if len(out.results) != 1 else ''}", style="bold"
        )
        text.append(
            f" of {len(out.candidates)}"
            + ("" if compact else f" candidate{'s' if len(out.candidates) != 1 else ''}"),
            style="dim",
        )
        text.append(
            f" · FTS {len(r.fts_hits)}", style=style_of(self.app.theme_variables, "score-text")
        )
        if r.fts_operator == "OR":
            text.append(" (OR)", style="italic")
        text.append(
            f" · {'vec' if compact else 'vector'} {len(r.vector_hits)}",
            style=style_of(self.app.theme_variables, "score-vector"),
        )
        if out.mode != out.options.mode and reason is None:  # no provider: a choice
            text.append(f" · {out.options.mode} unavailable → {out.mode}", style="italic")
        if out.rescue_used:
            text.append(" · keyword rescue", style="italic")
        text.append(
            f" · {len(out.dropped)} dropped · minScore {out.options.min_score:.2f}", style="dim"
        )
        return text

    def _show_fallback(self, reason: str | None) -> None:
        """The keyword-only line: mode, fallback and reason (the CLI's ``reason``)."""
        line = self.query_one("#search-fallback", Static)
        out = self.outcome
        if reason is None or out is None:
            line.display = False
            return
        text = Text(
            "keyword-only", style=f"bold {style_of(self.app.theme_variables, 'state-error')}"
        )
        text.append(f" ({out.options.mode} → {out.mode}): ", style="bold")
        text.append(reason)
        line.update(text)
        line.display = True

    def _draw(self, outcome: SearchOutcome | None) -> None:
        self.outcome = outcome
        results = self.query_one("#results", DataTable)
        rows = (
            [result_cells(c, self.app.theme_variables, self.columns) for c in outcome.results]
            if outcome is not None
            else []
        )
        if not self._refill_in_place(results, rows):
            keep_row = results.cursor_row if results.row_count else 0
            results.clear()
            for i, cells in enumerate(rows):
                results.add_row(*cells, key=str(i))
            if results.row_count:
                results.move_cursor(row=min(keep_row, results.row_count - 1))
        if self.query_one("#detail-tabs", TabbedContent).active == "tab-whynot":
            self._fill_whynot()
        self._show_status()
        self._show_breakdown()
        self.shown += 1

    def _refill_in_place(self, results: DataTable[Text], rows: list[list[Text]]) -> bool:
        """Put ``rows`` into the table's existing rows when that changes none of its
        dimensions (as many rows, every cell of a fitted column within the width the
        column has; a fixed column crops either way, and a fitted column never
        narrows on a refill either): the table
        is then repainted, not laid out again. A cleared and refilled table changes
        its virtual size, and every layout redoes the whole screen.
        Rows are keyed by position, so row ``i`` is the ``i``-th result."""
        if not rows or len(rows) != results.row_count:
            return False
        columns = list(results.columns.values())
        if any(
            column.auto_width and cell.cell_len > column.content_width
            for cells in rows
            for cell, column in zip(cells, columns, strict=True)
        ):
            return False
        for i, cells in enumerate(rows):
            for cell, column in zip(cells, columns, strict=True):
                results.update_cell(str(i), column.key, cell)
        return True

    @on(TabbedContent.TabActivated, "#detail-tabs")
    def _detail_tab(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-whynot":
            self._fill_whynot()

    def _fill_whynot(self) -> None:
        """The why-not table is filled only while visible (it can be 40 rows per keystroke)."""
        outcome = self.outcome
        if self._whynot_drawn is outcome and outcome is not None:
            return
        self._whynot_drawn = outcome
        whynot = self.query_one("#whynot", DataTable)
        whynot.clear()
        for c in outcome.dropped if outcome else []:
            whynot.add_row(*whynot_cells(c, self.app.theme_variables), key=str(c.chunk_id))
        if not whynot.row_count:
            self.query_one("#whynot-detail", Static).update(
                Text("Nothing was dropped." if outcome else "", style="dim")
            )


def result_cells(
    c: Candidate, variables: Mapping[str, str], columns: Columns = "full"
) -> list[Text]:
    """One row of the results table: rank, score bar and score, the factor each side
    entered the fusion with, decay, MMR move, location. Every number is read from
    the candidate the ranking built (``Candidate.parts`` for the bar and the sides)."""
    s_vec = style_of(variables, "score-vector")
    s_text = style_of(variables, "score-text")
    score = (
        score_bar(c.parts, s_vec, s_text)
        if c.parts is not None
        else Text("·" * SCORE_BAR, style="dim")
    )
    # the 4 decimals the breakdown prints: a 3-decimal rounding of 0.3545 reads 0.354
    score.append(f" {fmt(c.score)}", style=f"bold {style_of(variables, 'score-final')}")
    parts: list[Text] = []
    if columns != "narrow":
        parts += [
            _part_cell(None if c.parts is None else c.parts.vector, s_vec),
            _part_cell(None if c.parts is None else c.parts.text, s_text),
        ]
    if columns == "full":
        parts += [
            Text(
                f"×{c.decay_multiplier:.2f}" if c.age_days is not None else "·",
                style=style_of(variables, "score-decay"),
            ),
            Text(
                signed_shift(c.mmr_shift) if c.mmr_position else "·",
                style=style_of(variables, "score-mmr"),
            ),
        ]
    where = Text(location(c.path, c.start_line, c.end_line))
    if c.rescued:  # under minScore, kept by the keyword rescue (the breakdown says why)
        where.append(" rescued", style=f"italic {s_text}")
    return [
        Text(str(c.final_rank), style="bold"),
        score,
        *parts,
        where,
    ]


def whynot_cells(c: Candidate, variables: Mapping[str, str]) -> list[Text]:
    """One row of the why-not table: location, score, the lists it came from, reason."""
    s_drop = style_of(variables, "score-dropped", "dim")
    lists = []
    if c.fts_position:
        lists.append(f"F{c.fts_position}")
    if c.vector_position:
        lists.append(f"V{c.vector_position}")
    return [
        Text(location(c.path, c.start_line, c.end_line)),
        Text(fmt(c.score), style=s_drop),
        Text(" ".join(lists), style="dim"),
        Text(c.dropped or "", style=s_drop),
    ]


def _part_cell(value: float | None, style: str) -> Text:
    """One side's factor as the fusion used it (``ScoreParts``): a bar and two
    decimals, or ``–`` when the side is no part of the score."""
    if value is None:
        return Text("–".center(PART_BAR + 5), style="dim")
    cell = Text(bar_cells(value, PART_BAR), style=style)
    cell.append(f" {value:.2f}")
    return cell
