"""Hands engine events from worker threads to the app as Textual messages.

Subscribers of ``EventBus`` and ``SyncService`` run on the publishing thread;
this bridge does nothing there except wrap the event and post it (``post_message``
is thread-safe), so no widget is ever touched off the UI thread and a slow
screen never slows down a sync. Once ``detach`` has returned nothing more is
posted, not even by a publisher that was mid-way on another thread: the app
detaches when it begins to exit, before its screen is torn down.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message
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
        self._lock = threading.Lock()
        self._attached = False
        self.posted = 0

    def attach(self, service: SyncService | None = None) -> None:
        with self._lock:
            self._attached = True
        self._unsubscribers.append(self.engine.bus.subscribe(self._on_event))
        if service is not None:
            self._unsubscribers.append(service.subscribe(self._on_state))

    def detach(self) -> None:
        with self._lock:  # waits for a post in progress; none starts after this
            self._attached = False
        while self._unsubscribers:
            self._unsubscribers.pop()()

    def _on_event(self, event: Event) -> None:
        message = wrap_event(event)
        if message is not None:
            self._post(message)

    def _on_state(self, state: SyncServiceState) -> None:
        self._post(ServiceStateChanged(state))

    def _post(self, message: Message) -> None:
        with self._lock:  # post_message only queues: the lock is held for microseconds
            if self._attached:
                self.posted += 1
                self.target.post_message(message)
