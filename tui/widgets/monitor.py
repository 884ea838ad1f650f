"""The monitor: what the index is, whether it is fresh, and what it is doing.

Fed by the app on the UI thread, never by polling widgets from threads:
``engine.status()`` computed in a worker, the sync service's state snapshots,
and engine events (progress, done, failures, search timings). Progress shows
rate and ETA from the event itself, so a test that replays events sees exactly
the numbers it sent.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Callable
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Label, ProgressBar, RichLog, Sparkline, Static

from engine.events import FileError, SearchTimed, SyncDone, SyncFailed, SyncProgress, SyncStarted
from engine.index.sync_service import SyncServiceState
from engine.qmd.status import QmdStep
from engine.status import EngineStatus
from tui.format import ago, clock_time, duration, short_path, style_of

HISTORY = 40
#: Narrower than this, the facts are one per line instead of two side by side.
NARROW_FACTS = 80


class MonitorPane(VerticalScroll):
    """Index facts, live sync progress, sparklines, errors and the QMD backend."""

    def __init__(
        self,
        *,
        now: Callable[[], float],
        home: Path | None,
        tz: dt.tzinfo | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._now = now
        self._tz = tz
        self._home = home
        self.status: EngineStatus | None = None
        self.service: SyncServiceState | None = None
        self.sync_durations: collections.deque[float] = collections.deque(maxlen=HISTORY)
        self.search_ms: collections.deque[float] = collections.deque(maxlen=HISTORY)
        self.progress: SyncProgress | None = None
        self.running: SyncStarted | None = None
        self.last_done: SyncDone | None = None
        self.errors_logged = 0
        self._drawn_narrow = False
        #: refused/warned files as the index lists them now (path → reason)
        self.file_errors: dict[str, str] = {}
        self.events_log: collections.deque[Text] = collections.deque(maxlen=200)

    def compose(self) -> ComposeResult:
        yield Static(id="monitor-facts")
        with Vertical(id="monitor-progress-box"):
            yield Label("idle", id="monitor-progress-label")
            yield ProgressBar(id="monitor-progress", show_eta=False, show_percentage=True)
        with Horizontal(id="monitor-sparks"):
            with Vertical(classes="spark-box"):
                yield Label("sync time · no sync yet", id="spark-sync-label")
                yield Sparkline([], id="spark-sync")
            with Vertical(classes="spark-box"):
                yield Label("search · no search yet", id="spark-search-label")
                yield Sparkline([], id="spark-search")
        yield Static(id="monitor-qmd")
        yield Label("errors", classes="section-title")
        yield RichLog(id="monitor-errors", max_lines=200, wrap=True, markup=False)

    def on_mount(self) -> None:
        self._show_facts()
        self._show_qmd()
        self._show_progress()

    # -- inputs (called from the app's message handlers) ----------------------------
    def show_status(self, status: EngineStatus) -> None:
        first = self.status is None
        self.status = status
        self._show_facts()
        self._show_qmd()
        # The refused files are the index's current list: a file fixed or deleted
        # leaves it at the next sync, and each file is listed once.
        self._set_file_errors({p: FileError(p, e).reason for p, e in status.file_errors.items()})
        if first:
            if status.provider_error:
                self.log_error(f"provider: {status.provider_error}")
            if status.integrity_check:
                self.log_error(status.integrity_check)
            if status.recovered:
                self.log_error(status.recovered)
            for finding in status.damage:
                self.log_error(f"index damage: {finding} (`memdeck index` rebuilds it)")

    def show_service(self, state: SyncServiceState) -> None:
        old = self.service
        self.service = state
        # File and sync errors arrive as engine events; only the watcher's own
        # problems are news here.
        if state.watch_error and (old is None or old.watch_error != state.watch_error):
            self.log_error(f"watcher: {state.watch_error}")
        self._show_facts()

    def apply_event(self, event: object) -> None:
        if isinstance(event, SyncStarted):
            self.running = event
            self.progress = None
            self._show_progress()
        elif isinstance(event, SyncProgress):
            self.progress = event
            self._show_progress()
        elif isinstance(event, SyncDone):
            self.running = None
            self.progress = None
            self.last_done = event
            self.sync_durations.append(event.duration)
            self.query_one("#spark-sync", Sparkline).data = list(self.sync_durations)
            self.query_one("#spark-sync-label", Label).update(
                f"sync time · last {duration(event.duration)}"
                f" · max {duration(max(self.sync_durations))}"
            )
            # event.errors are the FileError events already shown (once, by path)
            self._show_progress()
            self._show_facts()
        elif isinstance(event, SyncFailed):
            self.running = None
            self.progress = None
            self.log_error(f"sync ({event.reason}) failed: {event.error}")
            self._show_progress()
        elif isinstance(event, FileError):
            self._set_file_errors({**self.file_errors, event.path: event.reason})
        elif isinstance(event, SearchTimed):
            self.search_ms.append(event.duration_ms)
            self.query_one("#spark-search", Sparkline).data = list(self.search_ms)
            label = self.query_one("#spark-search-label", Label)
            # every search lands here: while the monitor is hidden (the user is typing
            # in the search pane) its new width needs no reflow of the screen; showing
            # the monitor lays it out anyway
            label.update(
                f"search · last {event.duration_ms:.1f} ms · max {max(self.search_ms):.1f} ms",
                layout=label.is_on_screen,
            )

    @property
    def narrow(self) -> bool:
        return 0 < self.size.width < NARROW_FACTS

    def on_resize(self, event: events.Resize) -> None:
        narrow = 0 < event.size.width < NARROW_FACTS
        if narrow != self._drawn_narrow:
            self._drawn_narrow = narrow
            self._show_facts()

    def redraw(self) -> None:
        self._show_facts()
        self._show_qmd()

    def log_error(self, text: str) -> None:
        """A problem that happened (sync failure, watcher, provider): stamped, kept."""
        self.errors_logged += 1
        stamp = clock_time(self._now(), self._tz)
        line = Text(f"{stamp}  {text}")
        self.events_log.append(line)
        self.query_one("#monitor-errors", RichLog).write(line)

    def _set_file_errors(self, errors: dict[str, str]) -> None:
        if errors == self.file_errors:
            return
        self.file_errors = errors
        log = self.query_one("#monitor-errors", RichLog)
        log.clear()
        bad = style_of(self.app.theme_variables, "state-error")
        for path, reason in sorted(errors.items()):
            line = Text("✗ ", style=bad)
            line.append(path, style="bold")
            line.append(f": {reason}")
            log.write(line)
        for line in self.events_log:
            log.write(line)

    # -- drawing --------------------------------------------------------------------
    def _show_progress(self) -> None:
        bar = self.query_one("#monitor-progress", ProgressBar)
        label = self.query_one("#monitor-progress-label", Label)
        p = self.progress
        if self.running is None and p is None:
            bar.update(total=1, progress=1 if self.last_done else 0)
            if self.last_done is not None:
                d = self.last_done
                label.update(
                    f"idle · last sync ({d.reason}{', full' if d.full else ''}): "
                    f"{d.files_indexed} files, {d.chunks_embedded} chunks embedded, "
                    f"{d.cache_hits} cache hits in {duration(d.duration)}"
                )
            else:
                label.update("idle")
            return
        if p is None:
            bar.update(total=None)
            label.update(f"sync ({self.running.reason if self.running else '…'}) starting…")
            return
        if p.phase == "embed" and p.chunks_total:
            bar.update(total=p.chunks_total, progress=p.chunks_embedded)
            text = f"embedding {p.chunks_embedded}/{p.chunks_total} chunks"
        else:
            bar.update(total=max(1, p.files_total), progress=p.files_done)
            text = f"{p.phase}: {p.files_done}/{p.files_total} files"
        if p.rate:
            text += f" · {p.rate:.0f} chunks/s"
        if p.kb_per_s:
            text += f" · {p.kb_per_s:.1f} KB/s"
        if p.eta_seconds is not None:
            text += f" · ETA {duration(p.eta_seconds)}"
        if p.cache_hits:
            text += f" · {p.cache_hits} cache hits"
        label.update(text)

    def _show_facts(self) -> None:
        st = self.status
        v = self.app.theme_variables
        ok = style_of(v, "state-indexed")
        warn = style_of(v, "state-dirty")
        bad = style_of(v, "state-error")
        if st is None:
            self.query_one("#monitor-facts", Static).update(Text("loading status…", style="dim"))
            return
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold", no_wrap=True, min_width=9)
        t.add_column(ratio=1)
        t.add_column(style="bold", no_wrap=True)
        t.add_column(ratio=1)

        provider = Text(st.provider)
        if st.provider == "none":
            provider.append("  (FTS-only)", style=warn)
        if st.provider_error:
            provider.append(f"  {st.provider_error}", style=bad)
        vector = Text(st.vector)
        if st.sqlite_vec_version:
            vector.append(f" {st.sqlite_vec_version}", style="dim")
        if st.sqlite_vec_error:
            vector.append(f"  numpy fallback: {st.sqlite_vec_error}", style=warn)
        fts = Text(st.fts, style=bad if st.fts == "unavailable" else ok)
        fts.append(f" ({st.fts_tokenizer})", style="dim")
        dirty = st.dirty
        service = self.service
        if service is not None:
            dirty = dirty or service.dirty
        dirty_text = Text("yes" if dirty else "no", style=warn if dirty else ok)
        if st.needs_full_reindex:
            dirty_text.append("  (settings changed: full reindex)", style=warn)
        files = Text(f"{st.files} indexed / {st.files_on_disk} on disk")
        chunks = Text(f"{st.chunks}")
        if st.provider != "none":
            chunks.append(f" ({st.embedded_chunks} embedded)", style="dim")
        last = st.last_sync
        if self.last_done is not None:
            d = self.last_done
            last_text = Text(
                f"{clock_time(d.at, self._tz)} ({ago(d.at, self._now())}) · {d.reason} · "
                f"{duration(d.duration)}"
            )
        elif last is not None:
            last_text = Text(f"{last.at} · {last.reason} · {last.duration_s} s")
        else:
            last_text = Text("not in this session", style="dim")
        watch = Text("–", style="dim")
        if service is not None:
            if service.disabled:
                watch = Text(f"off: {service.disabled}", style=warn)
            elif service.watch_error:
                watch = Text(service.watch_error, style=bad)
            elif service.watching:
                watch = Text(f"watching {service.watched_dirs} folders", style=ok)
            else:
                watch = Text("not watching", style="dim")
            if service.running:
                watch.append(f" · syncing ({service.running_reason})", style=warn)
            if service.next_retry_in is not None:
                watch.append(f" · retry in {service.next_retry_in:.0f} s", style=bad)

        paths = Table.grid(padding=(0, 2))
        paths.add_column(style="bold", no_wrap=True, min_width=9)
        paths.add_column(overflow="fold")
        paths.add_row("workspace", Text(short_path(st.workspace, self._home)))
        # on PostgreSQL the index is a masked DSN and a namespace, not a path to shorten
        index = st.index if st.store == "postgres" else short_path(st.index, self._home)
        paths.add_row("index", Text(index))
        if st.write_problem is not None:
            # writing stopped (the app keeps answering from the index as it is)
            stopped = Text(st.write_problem.kind, style=f"bold {bad}")
            stopped.append(f" — {st.write_problem.text}")
            paths.add_row("writes", stopped)
        mode = Text(st.mode)
        if st.provider != "none":  # whether the ranking has a vector per line (unit) too
            units = "a vector per line too" if st.unit_vectors else "a vector per chunk"
            mode.append(f" · {units}", style="dim")
        rows = [
            ("agent", Text(st.agent), "backend", Text(st.backend)),
            ("provider", provider, "model", Text(st.model or "–")),
            ("dims", Text(str(st.dims or "–")), "mode", mode),
            (
                "binding",
                Text(f"{st.binding} · {st.store_version}"),
                "vectors",
                vector,
            ),
            ("FTS", fts, "cache", Text(f"{st.cache_entries} embeddings")),
            ("files", files, "chunks", chunks),
            ("dirty", dirty_text, "last sync", last_text),
            (
                "sync",
                watch,
                "errors",
                Text(str(len(st.file_errors)), style=bad if st.file_errors else ok),
            ),
        ]
        if self.narrow:
            # One fact per line: side by side, the values got no room below ~80 cells.
            t = Table.grid(padding=(0, 2))
            t.add_column(style="bold", no_wrap=True, min_width=9)
            t.add_column(ratio=1, overflow="fold")
            for label, value, label2, value2 in rows:
                t.add_row(label, value)
                t.add_row(label2, value2)
        else:
            for row in rows:
                t.add_row(*row)
        self.query_one("#monitor-facts", Static).update(Group(paths, t))

    def _show_qmd(self) -> None:
        st = self.status
        widget = self.query_one("#monitor-qmd", Static)
        qmd = st.qmd if st is not None else None
        if st is None or (st.backend != "qmd" and qmd is None):
            widget.update(
                Text.assemble(
                    ("QMD ", "bold"),
                    ("not in use (memory.backend = builtin)", "dim"),
                )
            )
            return
        v = self.app.theme_variables
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold", no_wrap=True)
        t.add_column()
        if st.fallback:
            t.add_row(
                "fallback",
                Text(
                    f"serving from {st.fallback}: {st.fallback_reason}",
                    style=style_of(v, "state-error"),
                ),
            )
        else:
            t.add_row(
                "fallback", Text("none — qmd is answering", style=style_of(v, "state-indexed"))
            )
        if qmd is not None:
            cmd = qmd.resolved_command or qmd.command
            t.add_row("command", Text(f"{cmd} · mode {qmd.search_mode}"))
            t.add_row(
                "searches",
                Text(
                    f"{qmd.searches} ({qmd.fallbacks} fell back)"
                    + (" · refreshing" if qmd.refreshing else "")
                ),
            )
            t.add_row("last update", Text(_describe_run(qmd.last_update)))
            t.add_row("last embed", Text(_describe_run(qmd.last_embed)))
            names = ", ".join(
                f"{c.name} ({short_path(c.path, self._home)})" for c in qmd.collections
            )
            t.add_row("collections", Text(names or "none"))
            if qmd.last_failure:
                t.add_row("last failure", Text(qmd.last_failure))
        title = Text("QMD backend", style="bold")
        widget.update(Group(title, t))


def _describe_run(run: QmdStep | None) -> str:
    """A maintenance step as a person reads it: ``14:02:11 · ok · 0.40 s`` (and what it
    said when it failed)."""
    if run is None:
        return "not yet"
    at = run.at.split("T")[-1] if "T" in run.at else run.at
    words = [at, "ok" if run.ok else "failed", f"{run.duration_s:.2f} s"]
    if run.detail:
        words.append(run.detail)
    return " · ".join(words)
