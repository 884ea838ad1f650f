"""Remembered vector sizes of custom endpoints, so an outage does not lose vectors.

A custom endpoint's size is learned by a probe request. If that endpoint is
down when the engine starts, not knowing the size would make the index look
like it needs an FTS-only rebuild. The size seen last time (kept in a small
JSON file beside the index, per provider/model/endpoint) lets the engine keep
its index and simply retry the embeddings on the next sync; every answer is
still checked against it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

from engine.workspace.files import atomic_write


class DimsMemo:
    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()

    def _read(self) -> dict[str, int]:
        if self.path is None:
            return {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(raw, dict):
            return {}
        return {str(k): v for k, v in raw.items() if isinstance(v, int) and v > 0}

    def get(self, scope: str) -> int | None:
        with self._lock:
            return self._read().get(scope)

    def put(self, scope: str, dims: int) -> None:
        if self.path is None:
            return
        with self._lock:
            data = self._read()
            if data.get(scope) == dims:
                return
            data[scope] = dims
            # a read-only state dir is fine: the memo is an optimisation only
            with contextlib.suppress(OSError):
                atomic_write(self.path, json.dumps(data, sort_keys=True).encode("utf-8"))
