"""Typed modal dialogs: each one dismisses with the answer its caller awaits."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static, TextArea


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no; Escape means no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "dismiss(False)",
            "Cancel",
            id="dialog.cancel",
            tooltip="Close the dialog without doing anything",
        )
    ]

    def __init__(self, title: str, message: str, yes: str = "Yes", no: str = "Cancel") -> None:
        super().__init__()
        self._title = title
        self._message = message
        self._yes = yes
        self._no = no

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self._title, classes="dialog-title")
            yield Static(self._message, classes="dialog-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self._yes, id="yes", variant="warning")
                yield Button(self._no, id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ExternalChangeScreen(ModalScreen[str]):
    """The file changed on disk since it was opened: reload, overwrite or cancel.

    Nothing is written unless the user picks "overwrite"; cancel keeps both the
    buffer and the file as they are.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "dismiss('cancel')",
            "Cancel",
            id="dialog.cancel_change",
            tooltip="Keep editing; nothing is written",
        )
    ]

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"{self._path} changed on disk", classes="dialog-title")
            yield Static(
                "Someone else (an agent, another editor) wrote this file after you opened "
                "it. Saving now would replace their change.\n\n"
                "Reload: discard your edits and load the file from disk.\n"
                "Overwrite: write your buffer over their change.\n"
                "Cancel: keep editing; nothing is written (copy what you need first).",
                classes="dialog-body",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Reload", id="reload", variant="primary")
                yield Button("Overwrite", id="overwrite", variant="error")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id))


class AppendEntryScreen(ModalScreen[str | None]):
    """Write a new timestamped entry for today's daily log."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "submit",
            "Append",
            id="append.submit",
            tooltip="Append the entry to today's log",
        ),
        Binding("escape", "cancel", "Cancel", id="append.cancel", tooltip="Discard the entry"),
    ]

    def __init__(self, target: str, stamp: str, *, blink: bool = True, initial: str = "") -> None:
        super().__init__()
        self._target = target
        self._stamp = stamp
        self._blink = blink
        self._initial = initial

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog dialog-wide"):
            yield Label(f"New entry for {self._target} at {self._stamp}", classes="dialog-title")
            yield Static(
                "Appended under a '## HH:MM' heading; earlier entries are never rewritten. "
                "ctrl+s appends, Esc cancels.",
                classes="dialog-body",
            )
            yield TextArea(self._initial, id="entry-text", soft_wrap=True, tab_behavior="focus")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Append", id="append", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        area = self.query_one("#entry-text", TextArea)
        if not self._blink:
            area.cursor_blink = False
        area.focus()

    def action_submit(self) -> None:
        text = self.query_one("#entry-text", TextArea).text
        if not text.strip():
            self.notify("The entry is empty.", severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#append")
    def _append(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)
