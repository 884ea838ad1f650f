"""The memory tree: MEMORY.md, daily logs by month, other notes, extraPaths.

Each file shows its index state, computed from the workspace listing and the
index's ``files`` table without reading any file: indexed (size and mtime match
what was indexed), dirty (changed since), new (never indexed), error (the
indexer refused it, e.g. binary or too large) and warning (indexed with a
problem, e.g. invalid UTF-8). The listing is produced off the UI thread (a
worker's ``TreeListing``); rebuilding keeps the expanded folders and
the cursor on the same file.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import groupby
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from engine.index.store import FileRecord
from engine.memory.context import ContextReport, LineRange
from engine.workspace.files import MemoryFile
from tui.format import style_of

STATE_ICONS = {"indexed": "●", "dirty": "◐", "new": "○", "error": "✗", "warning": "!"}
STATE_VARS = {
    "indexed": "state-indexed",
    "dirty": "state-dirty",
    "new": "state-dirty",
    "error": "state-error",
    "warning": "state-dirty",
}


@dataclass(frozen=True)
class FileState:
    """One file as the tree shows it."""

    rel: str
    kind: str  # memory | daily | note | extra
    state: str  # indexed | dirty | new | error | warning
    chunks: int
    error: str | None
    date: dt.date | None

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]


def file_states(files: list[MemoryFile], records: Mapping[str, FileRecord]) -> list[FileState]:
    """Join the listing with the index: what each file's row should say."""
    out = []
    for f in files:
        rec = records.get(f.rel)
        if rec is None:
            state, chunks, error = "new", 0, None
        elif rec.error and rec.chunks == 0:
            state, chunks, error = "error", 0, rec.error
        elif rec.size != f.size or rec.mtime != f.mtime:
            state, chunks, error = "dirty", rec.chunks, rec.error
        elif rec.error:
            state, chunks, error = "warning", rec.chunks, rec.error
        else:
            state, chunks, error = "indexed", rec.chunks, None
        out.append(FileState(f.rel, f.kind, state, chunks, error, f.date))
    return out


@dataclass(frozen=True)
class NodeData:
    """What a tree node stands for: a file (``rel``) or a group (``group``)."""

    rel: str | None = None
    group: str | None = None


class MemoryTree(Tree[NodeData]):
    """Keyboard: arrows move, Enter opens a file (or folds a group)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_file", "Open", id="tree.open", tooltip="Open the file"),
    ]

    def __init__(self, *, today: Callable[[], dt.date], **kwargs: object) -> None:
        super().__init__("workspace", data=NodeData(group="root"), **kwargs)  # type: ignore[arg-type]
        self.show_root = False
        self.guide_depth = 2
        self._today = today
        self.states: dict[str, FileState] = {}
        self._file_nodes: dict[str, TreeNode[NodeData]] = {}
        self._expanded_groups: set[str] = {"daily", "notes", "extra"}
        self._loaded = False
        #: the lines of each injected file the agent never sees (``show_context``)
        self.unseen: dict[str, tuple[LineRange, ...]] = {}

    # -- building ------------------------------------------------------------
    def _label(self, fs: FileState, text: str) -> Text:
        variables = self.app.theme_variables
        style = style_of(variables, STATE_VARS[fs.state])
        label = Text()
        label.append(STATE_ICONS[fs.state] + " ", style=style)
        label.append(text)
        if fs.date is not None and fs.date == self._today():
            label.append(" today", style="italic")
        if fs.chunks:
            label.append(f"  {fs.chunks}", style="dim")
        unseen = self.unseen.get(fs.rel)
        if unseen:
            where = ", ".join(f"{r.start_line}–{r.end_line}" for r in unseen)
            label.append(f"  ✂ {where}", style=style_of(variables, "state-error"))
        return label

    def show_context(self, report: ContextReport) -> None:
        """Mark the lines of MEMORY.md (any file shown here) the agent never sees."""
        unseen = {f.path: f.hidden for f in report.files if f.hidden}
        if unseen != self.unseen:
            self.unseen = unseen
            self.relabel()

    def _group_label(self, title: str, items: list[FileState]) -> Text:
        label = Text(title, style="bold")
        bad = sum(1 for s in items if s.state != "indexed")
        label.append(f"  {len(items)}", style="dim")
        if bad:
            label.append(f" ({bad} not indexed)", style="italic dim")
        return label

    def show_files(self, files: list[MemoryFile], records: Mapping[str, FileRecord]) -> None:
        """Rebuild (or just relabel) from a new listing."""
        states = file_states(files, records)
        new = {s.rel: s for s in states}
        if self._loaded and list(new) == list(self.states):
            self.states = new
            for rel, fs in new.items():
                node = self._file_nodes.get(rel)
                if node is not None and isinstance(node.data, _FileData):
                    node.set_label(self._label(fs, node.data.rel_label))
            self._relabel_groups()
            return
        self._remember_expanded()
        cursor_rel = self.cursor_rel
        self.states = new
        self._rebuild(states)
        self._loaded = True
        if cursor_rel is not None:
            self.select_rel(cursor_rel, scroll=False)
        elif self.cursor_line < 0 and states:
            self.cursor_line = 0  # Enter works at once on the first file

    def relabel(self) -> None:
        """Redraw labels (theme change) without touching the structure."""
        for rel, fs in self.states.items():
            node = self._file_nodes.get(rel)
            if node is not None and isinstance(node.data, _FileData):
                node.set_label(self._label(fs, node.data.rel_label))
        self._relabel_groups()

    def _remember_expanded(self) -> None:
        if not self._loaded:
            return
        self._expanded_groups = set()

        def walk(node: TreeNode[NodeData]) -> None:
            for child in node.children:
                if child.data and child.data.group and child.is_expanded:
                    self._expanded_groups.add(child.data.group)
                walk(child)

        walk(self.root)

    def _add_group(
        self, parent: TreeNode[NodeData], key: str, title: str, items: list[FileState]
    ) -> TreeNode[NodeData]:
        node = parent.add(
            self._group_label(title, items),
            data=_GroupData(group=key, title=title),
            expand=key in self._expanded_groups,
        )
        return node

    def _add_file(self, parent: TreeNode[NodeData], fs: FileState, text: str) -> None:
        node = parent.add_leaf(self._label(fs, text), data=_FileData(rel=fs.rel, rel_label=text))
        self._file_nodes[fs.rel] = node

    def _rebuild(self, states: list[FileState]) -> None:
        self.clear()
        self._file_nodes = {}
        root = self.root
        memory = [s for s in states if s.kind == "memory"]
        daily = sorted((s for s in states if s.kind == "daily"), key=lambda s: s.rel, reverse=True)
        notes = [s for s in states if s.kind == "note"]
        extra = [s for s in states if s.kind == "extra"]
        for fs in memory:
            self._add_file(root, fs, fs.rel)
        if daily:
            group = self._add_group(root, "daily", "Daily logs", daily)
            for month, items in groupby(daily, key=lambda s: _month_key(s)):
                month_items = list(items)
                month_node = self._add_group(
                    group, f"daily:{month}", _month_title(month), month_items
                )
                for fs in month_items:
                    self._add_file(month_node, fs, fs.name)
        if notes:
            group = self._add_group(root, "notes", "Notes", notes)
            for fs in notes:
                self._add_file(group, fs, fs.rel.removeprefix("memory/"))
        if extra:
            group = self._add_group(root, "extra", "Extra paths", extra)
            for fs in extra:
                self._add_file(group, fs, fs.rel)
        if not states:
            root.add_leaf(Text("no memory files yet — ctrl+n adds a daily entry", style="italic"))
        # The newest month is open by default.
        if daily and not any(g.startswith("daily:") for g in self._expanded_groups):
            first_month = f"daily:{_month_key(daily[0])}"
            self._expanded_groups.add(first_month)
            for node in self._iter_nodes(root):
                if isinstance(node.data, _GroupData) and node.data.group == first_month:
                    node.expand()

    def _relabel_groups(self) -> None:
        by_group: dict[str, list[FileState]] = {}
        for fs in self.states.values():
            if fs.kind == "daily":
                by_group.setdefault("daily", []).append(fs)
                by_group.setdefault(f"daily:{_month_key(fs)}", []).append(fs)
            elif fs.kind == "note":
                by_group.setdefault("notes", []).append(fs)
            elif fs.kind == "extra":
                by_group.setdefault("extra", []).append(fs)
        for node in self._iter_nodes(self.root):
            if isinstance(node.data, _GroupData) and node.data.group in by_group:
                node.set_label(self._group_label(node.data.title, by_group[node.data.group]))

    def _iter_nodes(self, node: TreeNode[NodeData]) -> Iterator[TreeNode[NodeData]]:
        for child in node.children:
            yield child
            yield from self._iter_nodes(child)

    # -- cursor ----------------------------------------------------------------
    @property
    def cursor_rel(self) -> str | None:
        node = self.cursor_node
        return node.data.rel if node is not None and node.data is not None else None

    def select_rel(self, rel: str, *, scroll: bool = True) -> bool:
        node = self._file_nodes.get(rel)
        if node is None:
            return False
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        self.move_cursor(node, animate=False)
        if scroll:
            self.scroll_to_node(node, animate=False)
        return True

    def action_open_file(self) -> None:
        node = self.cursor_node
        if node is None or node.data is None:
            return
        if node.data.rel is not None:
            from tui.messages import OpenLocation

            self.post_message(OpenLocation(node.data.rel, 1))
        else:
            node.toggle()

    def on_tree_node_selected(self, event: Tree.NodeSelected[NodeData]) -> None:
        """A mouse click on a file opens it, like Enter."""
        data = event.node.data
        if data is not None and data.rel is not None:
            from tui.messages import OpenLocation

            self.post_message(OpenLocation(data.rel, 1))


@dataclass(frozen=True)
class _FileData(NodeData):
    rel_label: str = ""


@dataclass(frozen=True)
class _GroupData(NodeData):
    title: str = ""


def _month_key(fs: FileState) -> str:
    return fs.date.strftime("%Y-%m") if fs.date else "undated"


def _month_title(key: str) -> str:
    try:
        return dt.datetime.strptime(key, "%Y-%m").strftime("%B %Y")
    except ValueError:
        return key
