"""A plain-text progress bar for ``memdeck index --progress`` (no Rich: engine stays UI-free)."""

from __future__ import annotations

import time
from typing import TextIO

from engine.events import Event, SyncDone, SyncProgress, SyncStarted


class ProgressPrinter:
    """Subscribes to the event bus and redraws one line on a terminal."""

    def __init__(self, stream: TextIO, width: int = 30, min_interval: float = 0.1):
        self.stream = stream
        self.width = width
        self.min_interval = min_interval
        self._last = 0.0
        self.tty = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, event: Event) -> None:
        if isinstance(event, SyncStarted):
            self._write(f"{'full reindex' if event.full else 'sync'} started ({event.reason})")
        elif isinstance(event, SyncProgress):
            now = time.monotonic()
            if now - self._last < self.min_interval:
                return
            self._last = now
            self._write(self.render(event), end="\r" if self.tty else "\n")
        elif isinstance(event, SyncDone):
            self._write(f"done in {event.duration:.1f}s" + " " * 40)

    def render(self, ev: SyncProgress) -> str:
        if ev.phase == "embed" and ev.chunks_total:
            frac = min(1.0, ev.chunks_embedded / ev.chunks_total)
            tail = f"{ev.chunks_embedded}/{ev.chunks_total} chunks {ev.rate:.1f}/s"
            if ev.eta_seconds is not None:
                tail += f" eta {ev.eta_seconds:.0f}s"
        else:
            frac = ev.files_done / ev.files_total if ev.files_total else 1.0
            tail = f"{ev.files_done}/{ev.files_total} files"
        filled = int(frac * self.width)
        bar = "█" * filled + "░" * (self.width - filled)
        return f"{ev.phase:<6} {bar} {frac * 100:5.1f}% {tail}"

    def _write(self, text: str, end: str = "\n") -> None:
        self.stream.write(text + end)
        self.stream.flush()
