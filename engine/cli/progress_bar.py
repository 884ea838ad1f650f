"""A plain-text progress bar for ``memdeck index --progress`` and ``memdeck watch``.

It is one more subscriber of the engine's events (no Rich: the engine stays
UI-free). On a terminal it redraws one line with ``\\r``; into a pipe or a log
file it writes one line per (throttled) update, so the output stays readable.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

from engine.events import Event, FileError, SyncDone, SyncFailed, SyncProgress, SyncStarted


class ProgressPrinter:
    """Subscribe it to ``engine.bus``; it draws sync progress on ``stream``."""

    def __init__(
        self,
        stream: TextIO,
        width: int = 30,
        min_interval: float = 0.1,
        tty: bool | None = None,
    ):
        self.stream = stream
        self.width = width
        self.min_interval = min_interval
        self.tty = bool(getattr(stream, "isatty", lambda: False)()) if tty is None else tty
        self._last = 0.0
        self._last_phase: str | None = None
        self._open_line = 0  # length of a progress line not yet ended with "\n"
        self._lock = threading.Lock()  # events arrive on worker threads

    def __call__(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, SyncStarted):
                kind = "full reindex" if event.full else "sync"
                self._line(f"{kind} started ({event.reason})")
            elif isinstance(event, SyncProgress):
                now = time.monotonic()
                # Throttle redraws, but never swallow the first or the last update of a phase.
                last = (
                    event.chunks_embedded >= event.chunks_total
                    if event.phase == "embed" and event.chunks_total
                    else event.files_done >= event.files_total
                )
                same = event.phase == self._last_phase
                if same and not last and now - self._last < self.min_interval:
                    return
                self._last, self._last_phase = now, event.phase
                self._progress(self.render(event))
            elif isinstance(event, FileError):
                self._line(f"warning: {event.error}")
            elif isinstance(event, SyncFailed):
                self._line(f"sync failed: {event.error}")
            elif isinstance(event, SyncDone):
                self._line(
                    f"done in {event.duration:.1f}s: {event.files_indexed} files indexed, "
                    f"{event.files_removed} removed, {event.chunks_embedded} chunks embedded, "
                    f"{event.cache_hits} cache hits"
                )

    def render(self, ev: SyncProgress) -> str:
        """One progress line: phase, bar, percentage and counts."""
        if ev.phase == "embed" and ev.chunks_total:
            frac = min(1.0, ev.chunks_embedded / ev.chunks_total)
            tail = f"{ev.chunks_embedded}/{ev.chunks_total} chunks {ev.rate:.1f}/s"
            if ev.cache_hits:
                tail += f", {ev.cache_hits} cached"
            if ev.eta_seconds is not None:
                tail += f" eta {ev.eta_seconds:.0f}s"
        else:
            frac = min(1.0, ev.files_done / ev.files_total) if ev.files_total else 1.0
            tail = f"{ev.files_done}/{ev.files_total} files"
        filled = int(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{ev.phase:<6} [{bar}] {frac * 100:5.1f}% {tail}"

    def _progress(self, text: str) -> None:
        if not self.tty:
            self._write(text + "\n")
            return
        pad = " " * max(0, self._open_line - len(text))
        self._write("\r" + text + pad)
        self._open_line = len(text)

    def _line(self, text: str) -> None:
        if self._open_line:
            text = "\r" + text + " " * max(0, self._open_line - len(text))
            self._open_line = 0
        self._write(text + "\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
