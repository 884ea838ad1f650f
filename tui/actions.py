"""The app's keys and the actions they run, in one registry.

The app binds these keys, the help screen and keymap validation read where each
group works (:func:`key_sections`), and the command palette shows each command's
key in force (:func:`current_keys`) and calls the actions through
:class:`DeckActions`: what the app offers the palette. Nothing here imports the
app, so the app, the palette and the help screen all build on this module and
none on another.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme

from engine.workspace.presence import WorkspaceProblem
from tui.keymap import KeySection, key_rows
from tui.screens.dialogs import (
    AppendEntryScreen,
    ConfirmScreen,
    ExportScreen,
    ExternalChangeScreen,
    QuitScreen,
)
from tui.screens.help import HelpScreen
from tui.widgets.curation_queue import CurationQueue
from tui.widgets.editor import EditorPane
from tui.widgets.memory_tree import MemoryTree
from tui.widgets.search_pane import SearchPane

if TYPE_CHECKING:
    from engine.core import Engine

__all__ = [
    "GLOBAL_BINDINGS",
    "MODAL_BLOCKED",
    "TYPING_BINDINGS",
    "DeckActions",
    "DeckHost",
    "current_keys",
    "key_sections",
]

_Result = TypeVar("_Result")

#: The app's actions that act on the main screen only (not under a dialog or
#: another screen: ``MemdeckApp.check_action``).
MODAL_BLOCKED = frozenset(
    {
        "focus_search",
        "focus_pane",
        "append_entry",
        "save",
        "reload",
        "help",
        "toggle_theme",
        "toggle_tree",
        "next_pane",
        "sync_now",
        "agent_activity",
        "context_view",
        "curation_queue",
    }
)


#: Keys that work from anywhere, the editor included: priority bindings act before
#: the focused widget, so none of them may be a key that types or that the editor
#: or search box uses (the keymap validation refuses such remaps). No alt+digit:
#: terminals send alt+1 as ESC 1, which Textual reads as a macOS Option character
#: ("¡"), so it would type instead of acting.
GLOBAL_BINDINGS: list[BindingType] = [
    Binding(
        "ctrl+q",
        "quit",
        "Quit",
        id="app.quit",
        priority=True,
        tooltip="Quit memdeck (asks first when the editor has unsaved edits)",
    ),
    Binding(
        "ctrl+p",
        "command_palette",
        "Palette",
        id="app.palette",
        priority=True,
        show=False,
        tooltip="Open the command palette",
    ),
    Binding("f1", "help", "Help", id="app.help", priority=True, tooltip="Show every key"),
    Binding(
        "ctrl+f",
        "focus_search",
        "Search",
        id="search.focus",
        priority=True,
        tooltip="Focus the search box",
    ),
    Binding(
        "ctrl+g",
        "next_pane",
        "Next pane",
        id="pane.next",
        priority=True,
        show=False,
        tooltip="Go to the next pane: tree → editor → search → monitor",
    ),
    Binding(
        "ctrl+b",
        "toggle_tree",
        "Tree",
        id="app.tree",
        priority=True,
        show=False,
        tooltip="Hide or show the memory tree (it hides by itself below 100 columns)",
    ),
    Binding(
        "ctrl+s",
        "save",
        "Save",
        id="editor.save",
        priority=True,
        tooltip="Save the file (asks if it changed on disk); triggers a sync",
    ),
    Binding(
        "ctrl+r",
        "reload",
        "Reload",
        id="editor.reload",
        priority=True,
        show=False,
        tooltip="Reload the file from disk (asks before discarding edits)",
    ),
    Binding(
        "ctrl+n",
        "append_entry",
        "Append entry",
        id="editor.append",
        priority=True,
        tooltip="Append a timestamped entry to today's daily log",
    ),
    Binding(
        "f9",
        "sync_now",
        "Sync",
        id="index.sync",
        priority=True,
        tooltip="Sync the index with the files now",
    ),
    Binding(
        "f11",
        "agent_activity",
        "Agents",
        id="app.agent_activity",
        priority=True,
        show=False,
        tooltip="Agent activity: the searches agents made (MCP, CLI); Enter replays one",
    ),
    Binding(
        "alt+o",
        "openclaw_compare",
        "vs OpenClaw",
        id="search.openclaw_compare",
        priority=True,
        show=False,
        tooltip="The search pane's query ranked by OpenClaw 2026.9.6 beside memdeck's ranking",
    ),
    Binding(
        "alt+m",
        "curation_queue",
        "Curate",
        id="app.curate",
        priority=True,
        show=False,
        tooltip="Show or hide the curation queue beside the editor (MEMORY.md's entries)",
    ),
    Binding(
        "alt+c",
        "context_view",
        "Context",
        id="app.context",
        priority=True,
        show=False,
        tooltip="What the agent is given every turn: the bootstrap files against the budget",
    ),
    Binding(
        "ctrl+t",
        "toggle_theme",
        "Theme",
        id="app.theme",
        priority=True,
        show=False,
        tooltip="Switch between the dark and the light theme (remembered)",
    ),
]

#: Short keys for when no text field has focus (in the editor or the search box
#: they type, as they should).
TYPING_BINDINGS: list[BindingType] = [
    Binding(
        "slash",
        "focus_search",
        "Search",
        id="search.slash",
        show=False,
        tooltip="Focus the search box",
    ),
    Binding(
        "question_mark", "help", "Help", id="app.help_key", show=False, tooltip="Show every key"
    ),
    Binding("1", "focus_pane('tree')", "Tree", id="pane.tree", show=False, tooltip="Memory tree"),
    Binding("2", "focus_pane('editor')", "Editor", id="pane.editor", show=False, tooltip="Editor"),
    Binding(
        "3",
        "focus_pane('search')",
        "Search pane",
        id="pane.search",
        show=False,
        tooltip="Search pane",
    ),
    Binding(
        "4",
        "focus_pane('monitor')",
        "Monitor",
        id="pane.monitor",
        show=False,
        tooltip="Index monitor",
    ),
]


class GlobalKeys:
    BINDINGS = GLOBAL_BINDINGS


class TypingKeys:
    BINDINGS = TYPING_BINDINGS


def key_sections() -> list[KeySection]:
    """Where each group of bindings works (drives help and keymap validation)."""
    return [
        KeySection("Everywhere", GlobalKeys, screen="*", in_text_field=True),
        KeySection("Outside text fields", TypingKeys),
        KeySection("Search pane", SearchPane, widget=True, in_text_field=True),
        KeySection("Memory tree", MemoryTree, widget=True),
        KeySection("Curation queue", CurationQueue, widget=True),
        KeySection("Append entry", AppendEntryScreen, screen="append", in_text_field=True),
        KeySection("Dialogs", ConfirmScreen, screen="confirm"),
        KeySection("External change", ExternalChangeScreen, screen="external"),
        KeySection("Unsaved edits", QuitScreen, screen="quit"),
        KeySection("Export", ExportScreen, screen="export", in_text_field=True),
        KeySection("Help", HelpScreen, screen="help"),
        *_optional_sections(),
    ]


def _optional_sections() -> list[KeySection]:
    """The dreaming and flush screens' keys (both screens ship with the app)."""
    from tui.screens.agent_activity import AgentActivityScreen
    from tui.screens.context_view import ContextViewScreen
    from tui.screens.promotion_queue import PromotionQueueScreen
    from tui.screens.sessions_view import SessionsViewScreen

    return [
        KeySection("Promotion queue", PromotionQueueScreen, screen="promotion"),
        KeySection("Sessions", SessionsViewScreen, screen="sessions"),
        KeySection("Agent activity", AgentActivityScreen, screen="activity"),
        KeySection("Context", ContextViewScreen, screen="context"),
    ]


def current_keys(keymap: dict[str, str]) -> dict[str, str]:
    """binding id → the keys in force under ``keymap``, as people write them (the
    palette's help)."""
    return {row.binding_id: row.keys for row in key_rows(key_sections(), keymap)}


@runtime_checkable
class DeckHost(Protocol):
    """The app as the flows that act for it see it (``tui.editing``,
    ``tui.exporting``): the engine, the panes, dialogs and notices, syncing."""

    @property
    def engine(self) -> Engine: ...
    @property
    def clock(self) -> Callable[[], dt.datetime]: ...
    @property
    def blink(self) -> bool: ...
    @property
    def display_home(self) -> Path: ...
    @property
    def search_pane(self) -> SearchPane: ...
    @property
    def editor_pane(self) -> EditorPane: ...
    @property
    def memory_tree(self) -> MemoryTree: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...
    def push_screen(
        self,
        screen: Screen[_Result],
        callback: Callable[[_Result | None], None] | None = None,
    ) -> object: ...
    def effective_keys(self, binding_id: str | None, default: str) -> str: ...
    def request_sync(self, reason: str, *, force: bool = False) -> None: ...
    def refresh_tree(self) -> None: ...
    def action_focus_pane(self, pane: str) -> None: ...


@runtime_checkable
class DeckActions(DeckHost, Protocol):
    """What the command palette reads and calls on the app: the state its commands
    are worded from, and the actions they run (``MemdeckApp`` is the one)."""

    @property
    def keymap(self) -> dict[str, str]: ...
    @property
    def workspace_problem(self) -> WorkspaceProblem | None: ...
    @property
    def theme(self) -> str: ...
    @property
    def available_themes(self) -> dict[str, Theme]: ...

    def set_theme(self, name: str) -> None: ...
    def open_location(self, path: str, line: int = 1) -> None: ...
    def action_focus_search(self) -> None: ...
    def action_export_ranking(self) -> None: ...
    def action_toggle_tree(self) -> None: ...
    def action_sync_now(self) -> None: ...
    def action_full_reindex(self) -> None: ...
    def action_append_entry(self, initial: str = "") -> None: ...
    def action_save(self) -> None: ...
    def action_reload(self) -> None: ...
    def action_unlock_editor(self) -> None: ...
    def action_create_workspace(self) -> None: ...
    def action_help(self) -> None: ...
    def action_promotion_queue(self) -> None: ...
    def action_sessions_view(self) -> None: ...
    def action_agent_activity(self) -> None: ...
    def action_context_view(self) -> None: ...
    def action_curation_queue(self) -> None: ...
