"""The help screen: every key, as currently mapped, grouped by where it works."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from tui.keymap import BUILTIN_KEYS, KeyRow


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q,f1,question_mark",
            "dismiss",
            "Close",
            id="help.close",
            tooltip="Close the help screen",
        ),
    ]

    def __init__(self, rows: list[KeyRow], settings_hint: str) -> None:
        super().__init__()
        self._rows = rows
        self._hint = settings_hint

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Label("memdeck keys", classes="dialog-title")
            yield Static(
                "Keyboard first: / searches from anywhere (Esc leaves), 1–4 switch panes, "
                "ctrl+p opens the command palette. Keys are remapped by binding id in "
                f'{self._hint} → "keymap".',
                id="help-intro",
            )
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one("#help-table", DataTable)
        table.add_column("where", key="where")
        table.add_column("key", key="key")
        table.add_column("does", key="does")
        table.add_column("binding id", key="id")
        for row in self._rows:
            table.add_row(row.section, row.keys, row.tooltip or row.description, row.binding_id)
        for section, keys, what in BUILTIN_KEYS:
            table.add_row(section, keys, what, "(built in)")
        table.focus()
