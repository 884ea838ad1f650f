"""The help screen: every key, as currently mapped, grouped by where it works."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
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

    def _keys_of(self, binding_id: str, default: str) -> str:
        """The keys a binding has now (the keymap may have moved it)."""
        return next((r.keys for r in self._rows if r.binding_id == binding_id), default)

    def compose(self) -> ComposeResult:
        search, nxt = self._keys_of("search.focus", "ctrl+f"), self._keys_of("pane.next", "ctrl+g")
        palette = self._keys_of("app.palette", "ctrl+p")
        with Vertical(id="help-box"):
            yield Label("memdeck keys", classes="dialog-title")
            yield Static(
                f"Everywhere keys work in the editor too ({search} search, {nxt} next pane); "
                f"outside text fields / ? and 1–4 do the same. {palette}: command palette. "
                f'Remap by binding id in {self._hint} → "keymap".',
                id="help-intro",
            )
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self._fill()
        self.query_one("#help-table", DataTable).focus()

    def on_resize(self) -> None:
        self._fill()  # the columns are fitted to the terminal's width

    def _fill(self) -> None:
        table = self.query_one("#help-table", DataTable)
        table.clear(columns=True)
        rows = [
            (row.section, row.keys, row.tooltip or row.description, row.binding_id)
            for row in self._rows
        ] + [(section, keys, what, "(built in)") for section, keys, what in BUILTIN_KEYS]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        # The "does" column takes what the box leaves (each column pads 1 cell a
        # side, plus a scrollbar) and wraps; the others keep their longest entry.
        inner = min(self.app.size.width, 118) - 6  # #help-box: border 1+1, padding 2+2
        wide = inner >= 90
        widths[0] = min(widths[0], 18 if wide else 10)
        widths[1] = min(widths[1], 16 if wide else 10)
        # a binding id is what a user types into the keymap: never folded mid-word
        widths[2] = max(16, inner - widths[0] - widths[1] - widths[3] - 8 - 2)
        for key, width in zip(("where", "key", "does", "id"), widths, strict=True):
            table.add_column(
                key if key != "id" else "binding id" if wide else "id", key=key, width=width
            )
        for row in rows:
            *wrapped, binding_id = row
            table.add_row(
                *(Text(cell, overflow="fold") for cell in wrapped),
                Text(binding_id, no_wrap=True),
                height=None,
            )
