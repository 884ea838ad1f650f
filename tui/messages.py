"""Textual messages: the only way background work reaches the widgets.

The engine publishes plain dataclass events from its worker threads; the bridge
in ``tui.bridge`` wraps each one in a message below and posts it to the app, so
every widget update happens in a message handler on the UI thread. Progress
messages replace each other in the queue (``can_replace``): if the UI falls
behind a fast reindex it only draws the latest progress, never a backlog.
Status and tree loads are not messages: their workers return the result and
the app takes it from the worker's SUCCESS state, so a cancelled load (the app
exiting, a newer load) never delivers anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from engine.events import (
    Event,
    FileError,
    SearchTimed,
    SyncDone,
    SyncFailed,
    SyncProgress,
    SyncStarted,
)
from engine.index.store import FileRecord
from engine.index.sync_service import SyncServiceState
from engine.memory.context import ContextReport
from engine.search.model import SearchOutcome
from engine.workspace.files import MemoryFile


class EngineEvent(Message):
    """An engine event, delivered on the UI thread."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class SyncStartedMessage(EngineEvent):
    event: SyncStarted


class SyncProgressMessage(EngineEvent):
    event: SyncProgress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SyncProgressMessage)


class SyncDoneMessage(EngineEvent):
    event: SyncDone


class SyncFailedMessage(EngineEvent):
    event: SyncFailed


class FileErrorMessage(EngineEvent):
    event: FileError


class SearchTimedMessage(EngineEvent):
    event: SearchTimed


_WRAPPERS: dict[type, type[EngineEvent]] = {
    SyncStarted: SyncStartedMessage,
    SyncProgress: SyncProgressMessage,
    SyncDone: SyncDoneMessage,
    SyncFailed: SyncFailedMessage,
    FileError: FileErrorMessage,
    SearchTimed: SearchTimedMessage,
}


def wrap_event(event: Event) -> EngineEvent | None:
    """The message for an engine event (None for event types the UI ignores)."""
    cls = _WRAPPERS.get(type(event))
    return cls(event) if cls is not None else None


class ServiceStateChanged(Message):
    """A new ``SyncServiceState`` snapshot; only the newest one matters."""

    def __init__(self, state: SyncServiceState) -> None:
        super().__init__()
        self.state = state

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ServiceStateChanged)


@dataclass(frozen=True)
class TreeListing:
    """A tree load's result: the workspace listing and the index's view of each file."""

    files: list[MemoryFile]
    records: dict[str, FileRecord]
    #: what the agent is given every turn, measured with the same listing
    context: ContextReport | None = None


class SearchFinished(Message):
    """A search worker's result; ``generation`` says which keystroke asked for it."""

    def __init__(self, generation: int, outcome: SearchOutcome) -> None:
        super().__init__()
        self.generation = generation
        self.outcome = outcome


class SearchFailed(Message):
    def __init__(self, generation: int, error: str) -> None:
        super().__init__()
        self.generation = generation
        self.error = error


class OpenLocation(Message):
    """Open a memory file in the editor, with the cursor on ``line`` (1-based)."""

    def __init__(self, path: str, line: int = 1) -> None:
        super().__init__()
        self.path = path
        self.line = line
