"""The curation queue beside the editor: MEMORY.md entries worth a second look.

One row per suggestion (:mod:`engine.memory.curation`): its kind, its lines and the
start of the entry; the evidence of the highlighted one below. Enter shows the entry
in the editor. ``j`` merges a duplicate into the entry it repeats, ``d`` deletes,
``m`` moves to a topic file; each opens the change as a diff first
(:class:`~tui.screens.curation_preview.CurationPreviewScreen`) and writes nothing
unless applied. ``u`` undoes the last change, again shown first. A file changed on
disk meanwhile is reported, never overwritten; after a write the index is synced
with the changed files at once, then the queue is looked for again.

Suggestions and writes run in thread workers; only the handlers touch widgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from tui.screens.curation_preview import CurationPreviewScreen
from tui.widgets.editor import EditorPane

if TYPE_CHECKING:
    from engine.core import Engine
    from engine.memory.curation import Suggestion, Suggestions
    from engine.memory.curation_actions import Plan

# engine.memory.curation and curation_actions (with the dreaming stores they read) are
# imported where the queue first looks or acts: ~50 ms of the app's start otherwise,
# for a pane that is not shown then.

KIND_LABELS = {
    "duplicate": "duplicate",
    "daily-log": "in a log",
    "unseen": "unseen",
    "not-recalled": "unrecalled",
}


class EditorRow(Horizontal):
    """The editor with the curation queue beside it."""

    DEFAULT_CSS = "EditorRow { height: 1fr; }"


class CurationQueue(Vertical):
    """Suggestions for MEMORY.md, and the actions on them."""

    DEFAULT_CSS = """
    CurationQueue {
        width: 40%; min-width: 32; max-width: 56; border-left: solid $primary; display: none;
    }
    CurationQueue #curation-title { height: auto; padding: 0 1; background: $boost; }
    CurationQueue #curation-table { height: 1fr; }
    CurationQueue #curation-evidence { height: auto; max-height: 8; padding: 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "merge", "Merge", id="curation.merge", tooltip="Merge a duplicate"),
        Binding("d", "delete", "Delete", id="curation.delete", tooltip="Delete the entry"),
        Binding("m", "move", "Move", id="curation.move", tooltip="Move the entry to a topic file"),
        Binding("u", "undo", "Undo", id="curation.undo", tooltip="Undo the last change"),
        Binding("r", "refresh", "Refresh", id="curation.refresh", tooltip="Look again"),
    ]

    class Changed(Message):
        """Files were written (and indexed): the editor and the tree follow."""

        def __init__(self, rels: tuple[str, ...], title: str) -> None:
            super().__init__()
            self.rels = rels
            self.title = title

    def __init__(self, engine: Engine, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.engine = engine
        self.found: Suggestions | None = None
        self.suggestions: list[Suggestion] = []
        #: the undo of every change written, newest last
        self.undo_stack: list[Plan] = []
        self.busy = False
        #: the last plan written and indexed
        self.indexed: Plan | None = None

    def compose(self) -> ComposeResult:
        yield Static("Curate MEMORY.md — looking…", id="curation-title")
        yield DataTable(id="curation-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="curation-evidence")

    def on_mount(self) -> None:
        self.query_one("#curation-table", DataTable).add_columns("kind", "lines", "entry")

    @property
    def table(self) -> DataTable[str]:
        return self.query_one("#curation-table", DataTable)

    # -- suggestions -----------------------------------------------------------------
    def refresh_suggestions(self) -> None:
        self.query_one("#curation-title", Static).update("Curate MEMORY.md — looking…")
        self._look()

    @work(thread=True, exclusive=True, exit_on_error=False, group="curation")
    def _look(self) -> None:
        from engine.memory.curation import suggest

        try:
            found = suggest(self.engine)
        except Exception as exc:  # shown, never fatal to the app
            self.app.call_from_thread(self._show_error, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._show, found)

    def _show_error(self, message: str) -> None:
        self.query_one("#curation-title", Static).update(f"Curate MEMORY.md — {message}")

    def _show(self, found: Suggestions) -> None:
        self.found = found
        self.suggestions = list(found.suggestions)
        table = self.table
        row = table.cursor_row
        table.clear()
        for s in self.suggestions:
            lines = f"{s.entry.start_line}" + (
                f"–{s.entry.end_line}" if s.entry.end_line != s.entry.start_line else ""
            )
            table.add_row(KIND_LABELS[s.kind], lines, s.entry.text[:60], key=s.key)
        undo = f" · u undoes {len(self.undo_stack)}" if self.undo_stack else ""
        entries = len({(s.entry.start_line, s.entry.end_line) for s in self.suggestions})
        plural = "" if len(self.suggestions) == 1 else "s"
        self.query_one("#curation-title", Static).update(
            f"Curate MEMORY.md — {len(self.suggestions)} suggestion{plural} for {entries} of "
            f"{found.entry_count} entries{undo}\nj merge · d delete · m move · Enter shows it"
        )
        if self.suggestions:
            table.move_cursor(row=min(max(row, 0), len(self.suggestions) - 1))
        self._detail()

    @on(DataTable.RowHighlighted, "#curation-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    @property
    def current(self) -> Suggestion | None:
        row = self.table.cursor_row
        return self.suggestions[row] if 0 <= row < len(self.suggestions) else None

    def _detail(self) -> None:
        s = self.current
        text = Text()
        if s is None:
            text.append("nothing to curate" if self.found is not None else "", style="italic")
        else:
            text.append(f"{s.entry.where}\n", style="bold")
            text.append(s.evidence)
            if s.other is not None:
                text.append(f"\n↔ {s.other.where}: {s.other.text[:80]}", style="dim")
        self.query_one("#curation-evidence", Static).update(text)

    @on(DataTable.RowSelected, "#curation-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        s = self.current
        if s is not None:
            from tui.messages import OpenLocation

            self.post_message(OpenLocation(s.entry.path, s.entry.start_line))

    # -- actions ---------------------------------------------------------------------------
    def _refused(self, rels: tuple[str, ...]) -> bool:
        """The editor holds unsaved edits of a file the change writes: say so, refuse."""
        for editor in self.app.query(EditorPane):
            if editor.rel in rels and editor.modified:
                self.app.notify(
                    f"{editor.rel} has unsaved edits in the editor: save or reload it first.",
                    severity="warning",
                )
                return True
        return False

    def _preview(self, plan: Plan, **kwargs: object) -> None:
        if self._refused(tuple(c.rel for c in plan.changes)):
            return
        self.app.push_screen(CurationPreviewScreen(plan, **kwargs), self._chosen)  # type: ignore[arg-type]

    def _planned(self, make: object) -> Plan | None:
        from engine.memory.curation_actions import CurationConflict

        try:
            return make() if callable(make) else None
        except (CurationConflict, ValueError, OSError) as exc:
            self.app.notify(str(exc), title="Not possible", severity="error")
            self.refresh_suggestions()
            return None

    def action_delete(self) -> None:
        s = self.current
        if s is None or "delete" not in s.actions:
            return
        from engine.memory.curation_actions import plan_delete

        plan = self._planned(lambda: plan_delete(self.engine.workspace, s.entry))
        if plan is not None:
            self._preview(plan)

    def action_merge(self) -> None:
        s = self.current
        if s is None or s.other is None or "merge" not in s.actions:
            self.app.notify("Only a duplicate can be merged (j).", severity="warning", timeout=3)
            return
        from engine.memory.curation_actions import plan_merge

        other = s.other
        plan = self._planned(lambda: plan_merge(self.engine.workspace, other, s.entry))
        if plan is not None:
            self._preview(plan)

    def action_move(self) -> None:
        s = self.current
        if s is None or "move" not in s.actions:
            return
        from engine.memory.curation_actions import plan_move, topic_path

        ws, entry = self.engine.workspace, s.entry
        topic = topic_path(entry)
        plan = self._planned(lambda: plan_move(ws, entry, topic))
        if plan is not None:
            replan = lambda path, pointer: plan_move(ws, entry, path, pointer=pointer)  # noqa: E731
            self._preview(plan, topic=topic, replan=replan)

    def action_undo(self) -> None:
        if not self.undo_stack:
            self.app.notify("Nothing to undo.", timeout=2)
            return
        self._preview(self.undo_stack[-1])

    def action_refresh(self) -> None:
        self.refresh_suggestions()

    def _chosen(self, plan: Plan | None) -> None:
        # checked again: the preview may have changed the plan's files (a move's
        # topic file typed in the dialog) since it opened
        if plan is None or self.busy or self._refused(tuple(c.rel for c in plan.changes)):
            return
        self.busy = True
        self._write(plan)

    @work(thread=True, exclusive=True, exit_on_error=False, group="curation-write")
    def _write(self, plan: Plan) -> None:
        """Write the plan; the editor and tree hear of it at once; then the index follows
        (a sync of just the changed files)."""
        from engine.memory.curation_actions import CurationConflict, apply

        try:
            undo = apply(self.engine.workspace, plan)
        except CurationConflict as exc:
            message = str(exc)
            if plan.action == "undo":
                message += self.app.call_from_thread(self._forget_undos, plan)
            self.app.call_from_thread(self._failed, message)
            return
        self.app.call_from_thread(self._written, plan, undo)
        try:
            self.engine.mark_dirty()
            self.engine.sync(reason="curate", paths=[str(p) for p in plan.paths])
        except Exception as exc:  # the files are written; the next sync indexes them
            self.app.call_from_thread(self._failed, f"written, not indexed yet: {exc}", "Sync")
            return
        self.app.call_from_thread(self._indexed, plan)

    def _forget_undos(self, failed: Plan) -> str:
        """An undo met a file changed since (an agent appended, the editor saved):
        that undo and the older ones of the same files cannot restore what they
        recorded any more. They are dropped, so an undo of another file is reachable
        again, and the notice says so."""
        files = {c.rel for c in failed.changes}
        kept = [p for p in self.undo_stack if not files & {c.rel for c in p.changes}]
        dropped = len(self.undo_stack) - len(kept)
        self.undo_stack = kept
        undos = f"{dropped} undo{'' if dropped == 1 else 's'}"
        return f"; {undos} of {', '.join(sorted(files))} dropped"

    def _failed(self, message: str, title: str = "Not written") -> None:
        self.busy = False
        self.app.notify(message, title=title, severity="error")
        self.refresh_suggestions()

    def _written(self, plan: Plan, undo: Plan) -> None:
        if plan.action == "undo":
            if self.undo_stack:
                self.undo_stack.pop()
        else:
            self.undo_stack.append(undo)
        self.post_message(self.Changed(tuple(c.rel for c in plan.changes), plan.title))

    def _indexed(self, plan: Plan) -> None:
        self.busy = False
        self.indexed = plan
        self.app.notify(
            f"{plan.title}; indexed." + ("" if plan.action == "undo" else " u undoes it."),
            timeout=4,
        )
        self.refresh_suggestions()


__all__ = ["CurationQueue", "EditorRow"]
