"""Hands engine events from worker threads to the app as Textual messages.

Subscribers of ``EventBus`` and ``SyncService`` run on the publishing thread;
this bridge does nothing there except wrap the event and post it (``post_message``
is thread-safe), so no widget is ever touched off the UI thread and a slow
screen never slows down a sync.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.message_pump import MessagePump

from engine.core import Engine
from engine.events import Event
from engine.index.sync_service import SyncService, SyncServiceState
from tui.messages import ServiceStateChanged, wrap_event


class EngineBridge:
    """Subscribe on ``attach``; ``detach`` before the app stops."""

    def __init__(self, engine: Engine, target: MessagePump) -> None:
        self.engine = engine
        self.target = target
        self._unsubscribers: list[Callable[[], None]] = []
        self.posted = 0

    def attach(self, service: SyncService | None = None) -> None:
        self._unsubscribers.append(self.engine.bus.subscribe(self._on_event))
        if service is not None:
            self._unsubscribers.append(service.subscribe(self._on_state))

    def detach(self) -> None:
        while self._unsubscribers:
            self._unsubscribers.pop()()

    def _on_event(self, event: Event) -> None:
        message = wrap_event(event)
        if message is not None:
            self.posted += 1
            self.target.post_message(message)

    def _on_state(self, state: SyncServiceState) -> None:
        self.posted += 1
        self.target.post_message(ServiceStateChanged(state))
