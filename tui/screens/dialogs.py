"""Typed modal dialogs: each one dismisses with the answer its caller awaits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea


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


@dataclass(frozen=True)
class EntryDraft:
    """What the append dialog ends with: the text, and whether to append it now
    (``append`` False: closed with Esc or Cancel; the app keeps the text as a draft)."""

    text: str
    append: bool


class AppendEntryScreen(ModalScreen[EntryDraft]):
    """Write a new timestamped entry for today's daily log. Closing it never loses
    the text: Esc hands it back as a draft, which the next ctrl+n reopens."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "submit",
            "Append",
            id="append.submit",
            tooltip="Append the entry to today's log",
        ),
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="append.cancel",
            tooltip="Close without appending (the text is kept as a draft for ctrl+n)",
        ),
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
                "ctrl+s appends; Esc closes and keeps the text as a draft for ctrl+n.",
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
        area.move_cursor(area.document.end)

    @property
    def text(self) -> str:
        """The entry as typed so far."""
        return self.query_one("#entry-text", TextArea).text

    def action_submit(self) -> None:
        if not self.text.strip():
            self.notify("The entry is empty.", severity="warning")
            return
        self.dismiss(EntryDraft(self.text, append=True))

    def action_cancel(self) -> None:
        self.dismiss(EntryDraft(self.text, append=False))

    @on(Button.Pressed, "#append")
    def _append(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.action_cancel()


QuitChoice = Literal["save", "discard", "cancel"]


class QuitScreen(ModalScreen[QuitChoice]):
    """Quitting with unsaved edits: save and quit, discard and quit, or stay.

    Every way out of the app (ctrl+q, ctrl+c outside a text field, the palette's
    Quit) comes here first, so an edit is lost only when the user says so. Escape
    and the default button both mean "cancel": a reflexive key never discards.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "dismiss('cancel')",
            "Cancel",
            id="quit.cancel",
            tooltip="Do not quit; keep editing",
        )
    ]

    def __init__(self, unsaved: Sequence[str], save: str = "write the file") -> None:
        """``unsaved``: one line per thing that would be lost (the open file's edits,
        an entry not appended yet); ``save``: what "Save" does, e.g. "append the entry"."""
        super().__init__()
        self._unsaved = list(unsaved)
        self._save = save

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            several = len(self._unsaved) > 1
            yield Label("Unsaved work" if several else self._unsaved[0], classes="dialog-title")
            listed = "".join(f"• {item}\n" for item in self._unsaved) if several else ""
            yield Static(
                f"{listed}"
                f"Save: {self._save}, then quit.\n"
                "Discard: quit without saving; the edits are lost.\n"
                "Cancel: stay in memdeck with the edits as they are.",
                classes="dialog-body",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save and quit", id="save", variant="primary")
                yield Button("Discard and quit", id="discard", variant="error")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        choice = str(event.button.id)
        self.dismiss(choice if choice in ("save", "discard") else "cancel")  # type: ignore[arg-type]


class ExportScreen(ModalScreen[Path | None]):
    """Ask where to write the exported ranking (a path; relative to the current folder)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="export.cancel", tooltip="Do not export"),
    ]

    def __init__(self, title: str, default: str, base: Path) -> None:
        super().__init__()
        self._title = title
        self._default = default
        self._base = base

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self._title, classes="dialog-title")
            yield Static(
                "A path ending in .json writes JSON, anything else Markdown. Relative paths "
                f"start at {self._base}. Enter writes, Esc cancels.",
                classes="dialog-body",
            )
            yield Input(self._default, id="export-path")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", id="export", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    def _submit(self) -> None:
        raw = self.query_one("#export-path", Input).value.strip()
        if not raw:
            self.notify("Give a file name.", severity="warning")
            return
        path = Path(raw).expanduser()
        self.dismiss(path if path.is_absolute() else self._base / path)

    @on(Input.Submitted, "#export-path")
    def _entered(self) -> None:
        self._submit()

    @on(Button.Pressed, "#export")
    def _export(self) -> None:
        self._submit()

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
