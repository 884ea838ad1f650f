"""memdeck's terminal app: memory tree, editor, live search, monitor.

``MemdeckApp(engine)`` is one client of the engine; it never reaches into the
index itself. Blocking work (search, status, listing, sync) runs in thread
workers; engine events arrive as Textual messages through ``EngineBridge``;
only message handlers and actions touch widgets. Themes are registered in
``__init__`` (before the stylesheet is parsed) and the keymap from memdeck's
settings file is validated and applied there too.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.console import RenderableType
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent, TabPane, TextArea
from textual.worker import Worker, WorkerState

from engine.config.paths import memdeck_home
from engine.core import Engine, IndexUnavailable
from engine.events import SyncDone, SyncFailed, SyncStarted
from engine.index.sync_service import SyncService, SyncServiceState
from engine.search.explain import formula
from engine.status import EngineStatus
from engine.workspace.presence import WorkspaceProblem, create_workspace, workspace_problem
from tui.actions import (
    GLOBAL_BINDINGS,
    MODAL_BLOCKED,
    TYPING_BINDINGS,
    DeckActions,
    key_sections,
)
from tui.bridge import EngineBridge
from tui.commands import MemdeckCommands
from tui.editing import EditorFlows
from tui.exporting import RankingExport
from tui.format import short_path, style_of
from tui.heap import HeapKeeper
from tui.keymap import display_keys, key_rows, validate_keymap
from tui.messages import EngineEvent, OpenLocation, ServiceStateChanged, TreeListing
from tui.screens.dialogs import (
    AppendEntryScreen,
    ConfirmScreen,
    QuitChoice,
    QuitScreen,
)
from tui.screens.help import HelpScreen
from tui.settings import (
    PANES,
    SettingsWriteError,
    UISettings,
    load_ui_settings,
    save_theme,
    settings_path,
)
from tui.themes import (
    DEFAULT_DARK,
    DEFAULT_LIGHT,
    FALLBACK_DARK,
    FALLBACK_LIGHT,
    choose_theme,
    default_variables,
    load_themes,
    theme_dirs,
)
from tui.topbar import COUNTS, PROVIDER, QMD, BarField, render_bar
from tui.widgets.curation_queue import CurationQueue, EditorRow
from tui.widgets.editor import EditorPane
from tui.widgets.memory_tree import MemoryTree
from tui.widgets.monitor import MonitorPane
from tui.widgets.search_pane import SearchPane

STATUS_INTERVAL_S = 5.0
#: how often the app asks whether a full garbage collection is due (``HeapKeeper.tick``)
HEAP_TICK_S = 0.5
#: How long leaving waits for a sync the app runs itself to stop between files.
OWN_SYNC_WAIT_S = 30.0
#: Below this many columns the tree is hidden until asked for (ctrl+b, 1), so the
#: panes keep room for result locations and the monitor's values.
NARROW = 100


def default_clock() -> dt.datetime:
    return dt.datetime.now().astimezone()


class Body(Horizontal):
    """The tree beside the panes. It follows the terminal's width: a resize reaches
    the app's own handler first, which stops it, and the screen's widgets get
    theirs; so the tree is shown or hidden here (``tmux resize-window`` to 80×24
    hides it, as a start at 80×24 does)."""

    def on_resize(self, event: events.Resize) -> None:
        app = self.app
        if isinstance(app, MemdeckApp):
            app.apply_tree_display()
            app._update_topbar()


class MemdeckApp(App[int]):
    """The memdeck terminal application."""

    CSS_PATH = "app.tcss"
    TITLE = "memdeck"
    COMMANDS: ClassVar = App.COMMANDS | {MemdeckCommands}
    BINDINGS: ClassVar[list[BindingType]] = [*GLOBAL_BINDINGS, *TYPING_BINDINGS]

    def __init__(
        self,
        engine: Engine,
        *,
        sync_service: SyncService | None = None,
        ui_settings: UISettings | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        display_home: Path | None = None,
        blink: bool = True,
        themes_from: list[Path] | None = None,
        env: Mapping[str, str] = os.environ,
    ) -> None:
        self.engine = engine
        self.sync_service = sync_service
        self.settings_file = settings_path(env)
        self.ui = ui_settings if ui_settings is not None else load_ui_settings(self.settings_file)
        self.clock = clock or default_clock
        self.display_home = display_home if display_home is not None else Path.home()
        self.blink = blink
        self.status: EngineStatus | None = None
        self.service_state: SyncServiceState | None = None
        self.syncing: SyncStarted | None = None
        super().__init__()
        # Themes must exist before the stylesheet (which uses $score-*) is parsed.
        loaded = load_themes(
            themes_from if themes_from is not None else theme_dirs(memdeck_home(env))
        )
        for theme in loaded.themes:
            self.register_theme(theme)
        self.problems: list[str] = list(self.ui.problems) + loaded.problems
        chosen = choose_theme(self.ui.theme, self.available_themes)
        if self.ui.theme and chosen != self.ui.theme:
            self.problems.append(f"theme {self.ui.theme!r} not found; using {chosen!r}")
        self.theme = chosen
        keymap, key_problems = validate_keymap(self.ui.keymap, key_sections())
        self.problems += key_problems
        self.keymap = keymap
        self.set_keymap(keymap)
        self.bridge = EngineBridge(engine, self)
        self.startup_notice: str | None = None
        #: None: the tree shows from NARROW columns up; True/False: ctrl+b decided.
        self.tree_choice: bool | None = None
        self._pane_pending: str | None = None
        self.workspace_problem: WorkspaceProblem | None = None
        #: opening, saving and appending (``tui/editing.py``); exporting the ranking
        self.editing = EditorFlows(self)
        self.exporting = RankingExport(self)
        #: True from the moment the app begins to exit (see ``exit``).
        self.leaving = False
        self._status_timer: Timer | None = None
        #: Syncs this app runs itself (no sync service): told to stop by ``_sync_cancel``
        #: and counted, so the app returns only once none is still writing the index.
        self._sync_cancel = threading.Event()
        self._own_syncs = 0
        self._own_syncs_done = threading.Condition()
        #: the collector's full collections, frozen start-up objects and idle timing
        #: (``_settle_heap``, ``tui/heap.py``)
        self.heap = HeapKeeper()

    # -- theme variables --------------------------------------------------------------
    def get_theme_variable_defaults(self) -> dict[str, str]:
        theme = self.get_theme(self.theme) if self.theme else None
        return default_variables(theme.dark if theme is not None else True)

    def effective_keys(self, binding_id: str | None, default: str) -> str:
        return self.keymap.get(binding_id or "", default)

    # -- layout ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        today = lambda: self.clock().date()  # noqa: E731
        yield Static(id="topbar")
        with Body(id="body"):
            tree = MemoryTree(today=today, id="tree")
            tree.border_title = "1 Memory"
            yield tree
            with TabbedContent(id="panes", initial=f"pane-{_start_tab(self.ui.layout.start_pane)}"):
                with TabPane("2 Editor", id="pane-editor"), EditorRow():
                    yield EditorPane(self.engine.workspace, blink=self.blink, id="editor")
                    yield CurationQueue(self.engine, id="curation")
                with TabPane("3 Search", id="pane-search"):
                    yield SearchPane(self.engine, today=today, blink=self.blink, id="search")
                with TabPane("4 Monitor", id="pane-monitor"):
                    yield MonitorPane(
                        now=lambda: self.clock().timestamp(),
                        home=self.display_home,
                        tz=self.clock().tzinfo,
                        id="monitor",
                    )
        yield Footer()

    @property
    def memory_tree(self) -> MemoryTree:
        return self.query_one("#tree", MemoryTree)

    @property
    def editor_pane(self) -> EditorPane:
        return self.query_one("#editor", EditorPane)

    @property
    def search_pane(self) -> SearchPane:
        return self.query_one("#search", SearchPane)

    @property
    def monitor(self) -> MonitorPane:
        return self.query_one("#monitor", MonitorPane)

    def on_mount(self) -> None:
        self.memory_tree.styles.width = self.ui.layout.tree_width
        self.apply_tree_display()
        self.bridge.attach(self.sync_service)
        self.workspace_problem = workspace_problem(self.engine.workspace.root)
        service = self.sync_service
        if self.workspace_problem is None and service is not None and not service.started:
            service.start()
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.refresh_tree()
        self.refresh_status()
        self._status_timer = self.set_interval(
            STATUS_INTERVAL_S, self.refresh_status, name="status"
        )
        self._update_topbar()
        if self.problems:
            self.startup_notice = "\n".join(self.problems)
            self.notify(
                self.startup_notice, title="memdeck settings", severity="warning", timeout=12
            )
        self.action_focus_pane(self.ui.layout.start_pane)
        if self.workspace_problem is not None:
            self._report_workspace_problem(self.workspace_problem)

    # -- a workspace that is not there ----------------------------------------------
    def _report_workspace_problem(self, problem: WorkspaceProblem) -> None:
        """Say it, instead of an empty index that looks "up to date"; offer to create
        a missing folder (nothing is written without a yes)."""
        if not problem.creatable:
            self.notify(problem.message, title="No workspace", severity="error", timeout=30)
            return

        def decided(create: bool | None) -> None:
            if create:
                self.action_create_workspace()
            else:
                self.notify(
                    f"{problem.message}. Nothing was created; the palette's "
                    "'Workspace: create' makes it later.",
                    title="No workspace",
                    severity="warning",
                    timeout=10,
                )

        self.push_screen(
            ConfirmScreen(
                "The workspace does not exist",
                f"{problem.path} does not exist, so there is nothing to index or search. "
                f"Create it (with an empty memory/ folder)?",
                yes="Create it",
                no="Not now",
            ),
            decided,
        )

    def action_create_workspace(self) -> None:
        problem = self.workspace_problem
        if problem is None:
            return
        if not problem.creatable:
            self.notify(problem.message, title="No workspace", severity="error")
            return
        try:
            create_workspace(problem.path)
            self.engine.open_for_writing()  # read-only until now: "Not now" wrote nothing
        except (OSError, IndexUnavailable) as exc:
            self.notify(f"Not created: {exc}", title="No workspace", severity="error")
            return
        self.workspace_problem = None
        if self.sync_service is not None and not self.sync_service.started:
            self.sync_service.start()
        self.request_sync("created")
        self.refresh_tree()
        self.refresh_status()
        self._update_topbar()
        self.notify(f"Created {problem.path}.", timeout=4)

    def on_unmount(self) -> None:
        self.shutdown()

    def exit(
        self,
        result: int | None = None,
        return_code: int = 0,
        message: RenderableType | None = None,
    ) -> None:
        """Stop what posts to the app, then exit (Textual tears the screen down after).

        Nothing can reach a removed widget afterwards: the bridge is detached (no
        engine event or service state is posted once ``detach`` returns), the status
        timer is stopped, no new status/tree/sync work starts, and the running
        workers are cancelled, so Textual discards their results. What was queued
        before is handled ahead of the exit request, on the intact screen.

        Textual can also tear the screen down without ``exit`` (Pilot's ``run_test``
        leaving its block while the app still runs): it then clears ``is_running``
        first, and the three handlers that take background results (worker states,
        engine events, service states) ignore whatever arrives after that."""
        self.stop_background()
        super().exit(result, return_code, message)

    def stop_background(self) -> None:
        """Stop everything that would post to the app (idempotent)."""
        self.leaving = True
        self.bridge.detach()
        if self._status_timer is not None:
            self._status_timer.stop()
        self.workers.cancel_all()

    def shutdown(self) -> None:
        """Stop listening and stop the background sync (idempotent).

        A sync the app runs itself (no sync service) is a thread that cancelling
        its worker does not stop, and ``App.run`` (``asyncio.run``) joins it before
        returning: quitting during a long sync left the terminal waiting, the
        screen gone, until the last file. It is asked to stop between files (the
        index stays consistent; what was saved is on disk and is indexed at the
        next start) and waited for here, so the engine is closed after it."""
        self.stop_background()
        if self.sync_service is not None and self.sync_service.started:
            self.sync_service.stop(timeout=5.0)
        self._sync_cancel.set()
        with self._own_syncs_done:
            self._own_syncs_done.wait_for(lambda: self._own_syncs == 0, timeout=OWN_SYNC_WAIT_S)
        self.heap.release()  # what the app froze is the collector's again

    # -- workers ----------------------------------------------------------------------
    # Status and tree loads return their result; the app takes it from the worker's
    # SUCCESS state (``on_worker_state_changed``). A cancelled worker (exit, or a
    # newer load of the same group) never reaches SUCCESS: Textual drops its result.
    def refresh_status(self) -> None:
        """Load ``engine.status()`` off the UI thread (the monitor and the top bar)."""
        if not self.leaving:
            self.run_worker(
                functools.partial(self.engine.status, load_provider=False),
                name="status",
                group="status",
                thread=True,
                exclusive=True,
                exit_on_error=False,
            )

    def refresh_tree(self) -> None:
        """List the workspace and the index's view of each file off the UI thread."""
        if not self.leaving:
            self.run_worker(
                self._list_tree,
                name="tree",
                group="tree",
                thread=True,
                exclusive=True,
                exit_on_error=False,
            )

    def _list_tree(self) -> TreeListing:
        from engine.memory.context import context_report

        files = self.engine.workspace.list_files()
        return TreeListing(files, self.engine.store.files(), context_report(self.engine.settings))

    @work(thread=True, group="sync", exit_on_error=False)
    def _sync_in_worker(self, reason: str, force: bool) -> None:
        with self._own_syncs_done:
            if self._sync_cancel.is_set():
                return  # the app is leaving: the next start syncs
            self._own_syncs += 1
        try:
            self.engine.sync(reason=reason, force=force, cancel=self._sync_cancel)
        finally:
            with self._own_syncs_done:
                self._own_syncs -= 1
                self._own_syncs_done.notify_all()

    def request_sync(self, reason: str, *, force: bool = False) -> None:
        """Ask for a sync without waiting: the service when it runs, else a worker."""
        if self.leaving:
            return
        if self.sync_service is not None and self.sync_service.started:
            self.sync_service.request_sync(reason, force=force)
        else:
            self._sync_in_worker(reason, force)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if not self.is_running:
            return  # Textual is tearing the screen down (see ``exit``)
        if event.state == WorkerState.SUCCESS:
            result = event.worker.result
            if isinstance(result, EngineStatus):
                self._show_status(result)
            elif isinstance(result, TreeListing):
                self.memory_tree.show_files(result.files, result.records)
                if result.context is not None:
                    self.memory_tree.show_context(result.context)
                    self.editor_pane.set_context(result.context)
            self._settle_heap()
            return
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        text = f"{event.worker.group or event.worker.name}: {type(error).__name__}: {error}"
        self.monitor.log_error(text)
        if event.worker.group == "sync":
            self.notify(text, title="Sync failed", severity="error")

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):
            self.heap.input_seen()  # a full garbage collection waits for a pause
        await super().on_event(event)

    def _settle_heap(self) -> None:
        """Once the first status and tree are on screen, move every object alive then
        (the engine's index structures, the tree's nodes, Textual's widgets) out of the
        cyclic collector's reach (``gc.freeze``), and run full collections only when
        the user pauses (``HeapKeeper``). Otherwise a full collection walks them all
        from time to time in the middle of a keystroke: 80–200 ms pauses on a
        10k-chunk workspace with nothing frozen, about 30 ms of what was made after
        start-up with it (profiled). ``shutdown`` releases both, so what
        was frozen is collectable again after the app (one process can run several,
        as tests do)."""
        if self.heap.settled or self.status is None or not self.memory_tree.states:
            return
        self.heap.settle()
        self.set_interval(HEAP_TICK_S, self.heap.tick, name="heap")

    # -- messages ---------------------------------------------------------------------
    @on(EngineEvent)
    def _engine_event(self, message: EngineEvent) -> None:
        if not self.is_running:
            return  # Textual is tearing the screen down (see ``exit``)
        event = message.event
        self.monitor.apply_event(event)
        if isinstance(event, SyncStarted):
            self.syncing = event
            self._update_topbar()
        elif isinstance(event, SyncDone | SyncFailed):
            self.syncing = None
            self.refresh_tree()
            self.refresh_status()
            if isinstance(event, SyncDone) and (event.files_indexed or event.files_removed):
                self.search_pane.research()
            self._update_topbar()

    def on_service_state_changed(self, message: ServiceStateChanged) -> None:
        if not self.is_running:
            return  # Textual is tearing the screen down (see ``exit``)
        old = self.service_state
        self.service_state = message.state
        self.monitor.show_service(message.state)
        if old is None or old.dirty != message.state.dirty:
            self.refresh_tree()
        self._update_topbar()

    def _show_status(self, status: EngineStatus) -> None:
        self.status = status
        self.monitor.show_status(status)
        self._update_topbar()

    def on_open_location(self, message: OpenLocation) -> None:
        self.open_location(message.path, message.line)

    def _theme_changed(self, _theme: object) -> None:
        self._persist_theme()
        self.search_pane.rerank_or_redraw()
        self.monitor.redraw()
        self.memory_tree.relabel()
        self._update_topbar()

    def _persist_theme(self) -> None:
        """Remember the theme (ctrl+t, the palette, Textual's theme picker) for next time."""
        path = self.ui.path or self.settings_file
        try:
            save_theme(path, self.theme)
        except (SettingsWriteError, OSError) as exc:
            self.notify(
                f"Theme not remembered: {exc}", title="memdeck settings", severity="warning"
            )

    def _update_topbar(self) -> None:
        bar = render_bar(self._topbar_fields(), self.size.width)
        # one line high whatever it says (app.tcss): no need to lay the screen out again
        self.query_one("#topbar", Static).update(bar, layout=False)

    def _topbar_fields(self) -> list[BarField]:
        """The top bar's fields, each with its give-way rank (``tui.topbar``)."""
        st = self.status
        v = self.theme_variables
        fields = [BarField(" memdeck ", "bold reverse")]
        state = self.service_state
        dirty = (st is not None and st.dirty) or (state is not None and state.dirty)
        if self.workspace_problem is not None:
            what = {"missing": "workspace missing", "not_a_folder": "not a folder"}
            kind = what.get(self.workspace_problem.kind, "workspace unreadable")
            fields.append(BarField(f" ✗ {kind}", style_of(v, "state-error")))
        elif st is not None and st.write_problem is not None:
            # reads go on, writes stopped: say which (disk full, read-only…) first
            fields.append(BarField(f" ✗ {st.write_problem.kind}", style_of(v, "state-error")))
        elif self.syncing is not None or (state is not None and state.running):
            fields.append(BarField(" ⟳ syncing", style_of(v, "state-dirty")))
        elif st is not None and dirty:
            fields.append(BarField(" ◐ dirty", style_of(v, "state-dirty")))
        elif st is not None:
            fields.append(BarField(" ● up to date", style_of(v, "state-indexed")))
        root = short_path(str(self.engine.workspace.root), self.display_home)
        fields.append(BarField(f"  {root}", "bold"))
        if st is not None:
            if st.provider == "none":
                desc = "no embeddings · FTS-only"
            else:
                model = Path(str(st.model)).name.removesuffix(".gguf")
                dims = f" {st.dims}d" if st.dims else ""
                desc = f"{st.provider} {model}{dims} · {st.mode}"
            fields.append(BarField(f"  │ {desc}", "dim", PROVIDER))
            fields.append(BarField(f"  │ {st.files} files · {st.chunks} chunks", "dim", COUNTS))
        if st is not None and st.backend == "qmd":
            fb = st.fallback
            fields.append(
                BarField(
                    f"  │ qmd{' → ' + str(fb) if fb else ''}",
                    style_of(v, "state-error") if fb else "dim",
                    QMD,
                )
            )
        return fields

    # -- actions ----------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Pane keys act on the main screen only (not under a dialog or another screen).
        return not (action in MODAL_BLOCKED and self.screen is not self.default_screen)

    # -- leaving ------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """ctrl+q and the palette's Quit: ask first when the editor has unsaved edits."""
        self.request_quit()

    def action_help_quit(self) -> None:
        """ctrl+c outside a text field: the same as ctrl+q. In a text field ctrl+c
        copies the selection; with nothing selected it says how to quit instead of
        quitting, so a reflexive copy never ends the session."""
        if isinstance(self.focused, TextArea | Input):
            keys = display_keys(self.effective_keys("app.quit", "ctrl+q"))
            self.notify(f"Nothing selected to copy. {keys} quits.", timeout=3)
            return
        self.request_quit()

    def request_quit(self) -> None:
        """Quit, asking first when something typed is not on disk: the editor's edits,
        or a daily-log entry being written or kept as a draft."""
        if any(isinstance(s, QuitScreen) for s in self.screen_stack):
            return
        editor = self.editor_pane
        entry = self._pending_entry()
        unsaved, save = [], []
        if editor.modified:
            unsaved.append(f"{editor.rel} has unsaved edits")
            save.append(f"write {editor.rel}")
        if entry.strip():
            unsaved.append(f"A new entry for {self._today_rel()} is not appended yet")
            save.append("append the entry")
        if not unsaved:
            self.exit(0)
            return
        self.push_screen(QuitScreen(unsaved, " and ".join(save)), self._quit_choice)

    def _pending_entry(self) -> str:
        """The entry in an open append dialog, else the kept draft."""
        for screen in self.screen_stack:
            if isinstance(screen, AppendEntryScreen):
                return screen.text
        return self.editing.entry_draft

    def _today_rel(self) -> str:
        ws = self.engine.workspace
        return ws.rel(ws.daily_path(self.clock().date()))

    def _quit_choice(self, choice: QuitChoice | None) -> None:
        if choice == "discard":
            self.exit(0)
        elif choice == "save":
            entry = self._pending_entry()
            if self.editor_pane.modified and not self.editing.write(
                force=False, then=lambda: self._quit_choice("save")
            ):
                if not self.editing.asking:  # else the changed-file dialog decides
                    self.notify("Not quit: the file was not saved.", severity="warning", timeout=5)
                return
            if entry.strip():
                try:
                    self.engine.workspace.append_entry(entry, now=self.clock())
                except (ValueError, OSError) as exc:
                    self.editing.entry_draft = entry
                    self.notify(
                        f"Not quit: the entry was not appended: {exc}. It is kept as a draft.",
                        severity="error",
                    )
                    return
                self.editing.entry_draft = ""
            self.exit(0)
        else:
            self.notify("Not quit; what you typed is still there.", timeout=3)

    def action_help(self) -> None:
        rows = key_rows(key_sections(), self.keymap)
        hint = short_path(self.ui.path or self.settings_file, self.display_home)
        self.push_screen(HelpScreen(rows, hint))

    def action_focus_search(self) -> None:
        self.query_one("#panes", TabbedContent).active = "pane-search"
        inp = self.search_pane.query_one("#search-input", Input)
        inp.focus()
        inp.cursor_position = len(inp.value)

    def current_pane(self) -> str | None:
        """Which pane holds the focus (None under a dialog). A pane just asked for
        counts before the focus has moved, so keys typed fast (ctrl+g ctrl+g) chain."""
        if self._pane_pending is not None:
            return self._pane_pending
        node = self.focused
        while node is not None:
            if node.id == "tree":
                return "tree"
            if node.id in ("editor", "search", "monitor"):
                return str(node.id)
            node = node.parent  # type: ignore[assignment]
        active = self.query_one("#panes", TabbedContent).active
        return active.removeprefix("pane-") if active else None

    def action_next_pane(self) -> None:
        """ctrl+g: the next pane. Presses that arrive before the focus has moved
        (ctrl+g ctrl+g in one terminal read) step on from the pane already chosen,
        and only the last one is focused."""
        order = [p for p in PANES if p != "tree" or self.memory_tree.display]
        current = self.current_pane()
        nxt = order[(order.index(current) + 1) % len(order)] if current in order else order[0]
        if self._pane_pending is None:
            self.call_after_refresh(self._go_to_pending_pane)
        self._pane_pending = nxt

    def _go_to_pending_pane(self) -> None:
        pane, self._pane_pending = self._pane_pending, None
        if pane is not None:
            self.action_focus_pane(pane)

    def action_toggle_tree(self) -> None:
        """Hide or show the memory tree (the user's choice beats the narrow-screen default)."""
        self.tree_choice = not self.memory_tree.display
        self.apply_tree_display()
        if not self.memory_tree.display and self.focused is self.memory_tree:
            self.action_focus_pane("search")

    def apply_tree_display(self) -> None:
        tree = self.memory_tree
        shown = self.tree_choice if self.tree_choice is not None else self.size.width >= NARROW
        if tree.display != shown:
            tree.display = shown

    def action_focus_pane(self, pane: str) -> None:
        tabs = self.query_one("#panes", TabbedContent)
        if pane == "tree":
            if not self.memory_tree.display:
                self.tree_choice = True
                self.apply_tree_display()
            self.memory_tree.focus()
        elif pane == "editor":
            tabs.active = "pane-editor"
            self.editor_pane.area.focus()
        elif pane == "search":
            tabs.active = "pane-search"
            results = self.search_pane.query_one("#results", DataTable)
            if results.row_count:
                results.focus()
            else:
                self.search_pane.query_one("#search-input", Input).focus()
        elif pane == "monitor":
            tabs.active = "pane-monitor"
            self.monitor.focus()

    def action_toggle_theme(self) -> None:
        current = self.get_theme(self.theme)
        dark = current.dark if current is not None else True
        if dark:
            target = DEFAULT_LIGHT if DEFAULT_LIGHT in self.available_themes else FALLBACK_LIGHT
        else:
            target = DEFAULT_DARK if DEFAULT_DARK in self.available_themes else FALLBACK_DARK
        self.set_theme(target)

    def set_theme(self, name: str) -> None:
        self.theme = name

    def action_promotion_queue(self) -> None:
        """Review dreaming's promotion candidates (accept writes to MEMORY.md)."""
        from tui.screens.promotion_queue import PromotionQueueScreen

        self.push_screen(PromotionQueueScreen(self.engine, now=self.clock()))

    def action_openclaw_compare(self) -> None:
        """memdeck's ranking beside OpenClaw 2026.9.6's for the search pane's query."""
        from tui.screens.openclaw_compare import OpenClawCompareScreen, Row

        outcome = self.search_pane.outcome
        if outcome is None or not outcome.query.strip():
            self.notify("Search first: there is no query to compare.", severity="warning")
            return
        rows = [Row(c.path, c.start_line, c.end_line, c.score, formula(c)) for c in outcome.results]
        self.push_screen(OpenClawCompareScreen(self.engine, outcome.query, rows))

    def action_sessions_view(self) -> None:
        """Per-session token estimates against the memory-flush threshold."""
        from tui.screens.sessions_view import SessionsViewScreen

        self.push_screen(SessionsViewScreen(self.engine, day=self.clock().date()))

    def action_agent_activity(self) -> None:
        """The searches agents made, newest first; Enter replays one in the search pane."""
        from tui.screens.agent_activity import AgentActivityScreen

        self.push_screen(
            AgentActivityScreen(self.engine, today=lambda: self.clock().date()),
            self._replay_agent_search,
        )

    def action_context_view(self) -> None:
        """What the agent is given every turn; Enter opens MEMORY.md at its unseen lines."""
        from tui.screens.context_view import ContextViewScreen

        def chosen(where: tuple[str, int] | None) -> None:
            if where is not None:
                self.open_location(*where)

        self.push_screen(ContextViewScreen(self.engine.settings), chosen)

    def action_curation_queue(self) -> None:
        """Show (and fill) or hide the curation queue beside the editor."""
        queue = self.query_one("#curation", CurationQueue)
        queue.display = not queue.display
        if not queue.display:
            self.editor_pane.area.focus()
            return
        self.query_one("#panes", TabbedContent).active = "pane-editor"
        if self.editor_pane.rel is None and "MEMORY.md" in self.memory_tree.states:
            self.editing.open("MEMORY.md", 1)
        queue.refresh_suggestions()
        queue.table.focus()
        row = self.editor_pane.area.cursor_location[0]
        # narrower now: once the editor has wrapped its lines anew, keep the cursor's in view
        self.set_timer(0.15, lambda: self.editor_pane.goto_line(row + 1))

    def on_curation_queue_changed(self, message: CurationQueue.Changed) -> None:
        """A curation change was written and indexed: the editor and the tree follow."""
        editor = self.editor_pane
        if editor.rel in message.rels and not editor.modified:
            editor.reload()
        self.refresh_tree()
        self.refresh_status()

    def _replay_agent_search(self, search: object) -> None:
        from engine.memory.recall import RecallSearch

        if not isinstance(search, RecallSearch):
            return  # closed without choosing
        self.action_focus_pane("search")
        at = dt.datetime.fromtimestamp(search.at).strftime("%H:%M:%S")
        self.search_pane.replay(
            search.query,
            max_results=search.max_results,
            min_score=search.min_score,
            expected=[(h.path, h.start_line, h.end_line) for h in search.results],
            label=f"{search.client}'s search at {at}",
            backend=search.backend,
        )

    def on_promotion_queue_screen_promoted(self, message: Message) -> None:
        path = str(getattr(message, "path", "MEMORY.md"))
        self.editing.after_write(path, "promotion")

    def action_sync_now(self) -> None:
        self.request_sync("manual")
        self.notify("Sync requested.", timeout=2)

    def action_full_reindex(self) -> None:
        self.request_sync("reindex", force=True)
        self.notify("Full reindex requested; searches use the old index until the swap.", timeout=4)

    # -- export and the editor (tui/exporting.py, tui/editing.py) ------------------------
    def action_export_ranking(self) -> None:
        """Write the ranking on screen to a file (asks for the path)."""
        self.exporting.start()

    def open_location(self, path: str, line: int = 1) -> None:
        self.editing.open_location(path, line)

    def action_save(self) -> None:
        self.editing.save()

    def action_reload(self) -> None:
        self.editing.reload()

    def action_unlock_editor(self) -> None:
        self.editing.unlock()

    def action_append_entry(self, initial: str = "") -> None:
        self.editing.append_entry(initial)


def _start_tab(pane: str) -> str:
    return pane if pane in ("editor", "search", "monitor") else "search"


if TYPE_CHECKING:

    def _offers_the_palette(app: MemdeckApp) -> DeckActions:
        """The app is what the palette expects of it (checked by mypy)."""
        return app


def run_app(engine: Engine, *, sync_service: SyncService | None = None) -> int:
    """Run the app on ``engine`` with a background sync service; always cleans up."""
    service = sync_service if sync_service is not None else SyncService(engine)
    app = MemdeckApp(engine, sync_service=service)
    try:
        result = app.run()
    finally:
        if service.started:
            service.stop(timeout=5.0)
        engine.close()
    return int(result or 0)
