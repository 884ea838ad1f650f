"""qmd's slow maintenance steps on stderr, for the one-shot commands that wait.

``memdeck search --backend qmd`` and ``memdeck index`` wait for qmd's boot
refresh: on a fresh qmd home that is ``qmd update`` over every file and, with
a model, ``qmd embed`` of every chunk — easily a minute of silence. A step that
is still running after ``MEMDECK_PROGRESS_DELAY_S`` (default 1 s) is announced
on stderr, and its end is reported; quick steps print nothing, so a warm
search stays as quiet as any other command.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TextIO

from engine.qmd.backend import QmdProgress

DELAY_ENV = "MEMDECK_PROGRESS_DELAY_S"

WHAT = {
    "collections": "setting up qmd's collections for this workspace",
    "update": "qmd update: indexing the files (a first run reads every file)",
    "embed": "qmd embed: embedding new text (a first run embeds everything; can take minutes)",
}


class QmdProgressPrinter:
    """An ``on_step`` listener for ``QmdBackend``; safe to call from any thread."""

    def __init__(self, stream: TextIO, delay_s: float | None = None):
        self.stream = stream
        if delay_s is None:
            try:
                delay_s = float(os.environ.get(DELAY_ENV, "1"))
            except ValueError:
                delay_s = 1.0
        self.delay_s = max(0.0, delay_s)
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}
        self._shown: set[str] = set()

    def __call__(self, event: QmdProgress) -> None:
        if event.state == "started" and self.delay_s == 0:
            with self._lock:
                self._shown.add(event.step)
            self._write(f"{WHAT[event.step]} ({event.reason})…")
            return
        with self._lock:
            if event.state == "started":
                timer = threading.Timer(self.delay_s, self._announce, (event,))
                timer.daemon = True
                self._timers[event.step] = timer
                timer.start()
                return
            pending = self._timers.pop(event.step, None)
            if pending is not None:
                pending.cancel()
            if event.step not in self._shown:
                return
            self._shown.discard(event.step)
        verb = "finished" if event.state == "finished" else "failed"
        self._write(f"qmd {event.step} {verb} after {event.seconds:.1f} s")

    def _announce(self, event: QmdProgress) -> None:
        with self._lock:
            if self._timers.get(event.step) is None:
                return  # ended meanwhile
            self._shown.add(event.step)
        self._write(f"{WHAT[event.step]} ({event.reason})…")

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # stderr closed: progress is optional
            print(f"memdeck: {text}", file=self.stream, flush=True)
