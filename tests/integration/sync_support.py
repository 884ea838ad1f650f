"""Helpers shared by the sync tests and the sync benchmark.

``HashEmbedder`` is the benchmarks' cheap deterministic embedding provider
(feature hashing of words, ``tests.bench.synthetic``). It implements the real
provider protocol, so the real store, sqlite-vec, embedding cache and search
run unchanged, and it can be imported by name in a subprocess, which a killed
or concurrent process needs. ``delay`` slows each batch down so that a test can
kill or cancel a reindex while it is embedding.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.embeddings.base import ProgressCallback
from tests.bench import synthetic

REPO = Path(__file__).resolve().parents[2]


class HashEmbedder(synthetic.HashEmbedder):
    """The benchmark's feature-hashing embedder, with a counter and an optional delay."""

    def __init__(self, dims: int = 64, delay: float = 0.0) -> None:
        super().__init__(dims)
        self.delay = delay
        self.texts_embedded = 0
        self._lock = threading.Lock()

    def fingerprint(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "provider_key": f"d{self.dims}"}

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        if self.delay:
            time.sleep(self.delay)
        with self._lock:  # the memo of the base class is not shared across threads
            self.texts_embedded += len(texts)
            return super().embed_documents(texts, progress)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return super().embed_query(text)


def spawn_python(*args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """``python ARGS`` started from the repository root, so ``tests.*`` imports by name,
    with stdout piped as text: the test reads the lines the child prints to know when
    to kill it or what it did."""
    return subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, text=True, cwd=REPO, env=env
    )


def kill_9(proc: subprocess.Popen[str]) -> None:
    """SIGKILL and reap: no handler, no ``finally`` runs — a crash, not a shutdown."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def wait_until(
    predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.05, what: str = ""
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``.

    Generous deadlines instead of fixed sleeps: on a loaded 2-core CI machine a
    watcher event or a sync can take much longer than usual, and a test should
    only be slower there, never flaky.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


class EventLog:
    """A thread-safe list of the events an engine published."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        with self._lock:
            self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        with self._lock:
            return [e for e in self.events if isinstance(e, kind)]

    def clear(self) -> None:
        with self._lock:
            self.events.clear()
