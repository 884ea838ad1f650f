"""Provider batch APIs (openai, gemini, voyage): submit, poll, collect, resume.

``remote.batch``: documents go up as a JSONL file, a job is
created, polled every ``pollIntervalMs`` and collected when done, at most
``concurrency`` jobs in flight. With ``wait=false`` the sync does not wait: the
job ids are written to a small JSON file beside the index, the chunks stay
un-embedded (searchable by keywords) and the next sync collects the results.
A job that fails, expires or passes ``timeoutMinutes`` counts as a failure; two
failures switch the provider to direct requests for the rest of the run.

The wire formats live in ``batch_wire``; this module is the lifecycle.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.config.settings import BatchSettings
from engine.embeddings.base import ProviderError
from engine.workspace.files import atomic_write

MAX_FAILURES = 2
#: jobs nobody asked about for this long are forgotten (provider windows are 12-24 h)
STALE_JOB_SECONDS = 48 * 3600


class EmbeddingsDeferred(ProviderError):
    """Some embeddings are still being computed by a batch job (``wait=false``).

    ``ready`` maps input positions to finished vectors; the rest arrive on a
    later sync. Subclassing ``ProviderError`` keeps older callers safe: they
    see a retryable failure and try the chunks again next time.
    """

    def __init__(self, message: str, ready: dict[int, np.ndarray], pending: int):
        super().__init__(message, retryable=True)
        self.ready = ready
        self.pending = pending


@dataclass(frozen=True)
class JobStatus:
    state: str  # "running", "done", "failed"
    detail: str = ""
    output: str | None = None  # provider reference of the results file


class BatchWire(Protocol):
    """One provider's batch endpoints."""

    name: str
    max_items: int

    def submit(self, items: Sequence[tuple[str, str]]) -> str: ...
    def poll(self, job_id: str) -> JobStatus: ...
    def collect(self, job_id: str, status: JobStatus) -> dict[str, list[float]]: ...
    def cancel(self, job_id: str) -> None: ...


def text_key(text: str) -> str:
    """The custom id of one input line: the text's hash, so a resumed job matches."""
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:40]


class JobRegistry:
    """Running jobs per provider scope, persisted so ``wait=false`` survives a restart."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._data: dict[str, list[dict[str, Any]]] = self._load()

    def _load(self) -> dict[str, list[dict[str, Any]]]:
        if self.path is None:
            return {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: forgetting jobs only costs a re-submit
        if not isinstance(raw, dict):
            return {}
        return {
            str(scope): [j for j in jobs if isinstance(j, dict) and "id" in j and "keys" in j]
            for scope, jobs in raw.items()
            if isinstance(jobs, list)
        }

    def _save(self) -> None:
        if self.path is None:
            return
        data = {s: jobs for s, jobs in self._data.items() if jobs}
        if not data:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        atomic_write(self.path, json.dumps(data).encode("utf-8"))

    def jobs(self, scope: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(j) for j in self._data.get(scope, [])]

    def add(self, scope: str, job_id: str, keys: Sequence[str], submitted_at: float) -> None:
        with self._lock:
            self._data.setdefault(scope, []).append(
                {"id": job_id, "keys": list(keys), "submitted_at": submitted_at}
            )
            self._save()

    def remove(self, scope: str, job_id: str) -> None:
        with self._lock:
            self._data[scope] = [j for j in self._data.get(scope, []) if j["id"] != job_id]
            self._save()


@dataclass
class BatchOutcome:
    vectors: dict[int, list[float]] = field(default_factory=dict)
    pending: list[int] = field(default_factory=list)  # in a job that is still running
    direct: list[int] = field(default_factory=list)  # to embed with direct requests


@dataclass
class _Flight:
    job_id: str
    keys: list[str]
    submitted_at: float


ProgressHook = Callable[[int, int], None]  # (items ready, items wanted)


class BatchRunner:
    """Drives jobs of one provider scope; one instance per provider (a "run")."""

    def __init__(
        self,
        wire: BatchWire,
        settings: BatchSettings,
        registry: JobRegistry,
        scope: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ):
        self.wire = wire
        self.settings = settings
        self.registry = registry
        self.scope = scope
        self.sleep = sleep
        self.clock = clock
        self.failures = 0
        self.failure_log: list[str] = []
        self.jobs_submitted = 0
        self.jobs_collected = 0
        self._ready: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    # -- state ---------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.settings.enabled and self.failures < MAX_FAILURES

    @property
    def disabled_reason(self) -> str | None:
        if self.settings.enabled and not self.active:
            return (
                f"batch mode off for this run after {self.failures} failed jobs "
                f"({'; '.join(self.failure_log[-MAX_FAILURES:])}); using direct requests"
            )
        return None

    def describe(self) -> dict[str, object]:
        return {
            "enabled": self.settings.enabled,
            "active": self.active,
            "wait": self.settings.wait,
            "concurrency": self.settings.concurrency,
            "jobs_running": len(self.registry.jobs(self.scope)),
            "jobs_submitted": self.jobs_submitted,
            "jobs_collected": self.jobs_collected,
            "failures": self.failures,
            "disabled_reason": self.disabled_reason,
        }

    def _fail(self, why: str) -> None:
        self.failures += 1
        self.failure_log.append(why)

    # -- the lifecycle -------------------------------------------------------
    def run(self, texts: Sequence[str], progress: ProgressHook | None = None) -> BatchOutcome:
        with self._lock:
            return self._run(texts, progress)

    def _run(self, texts: Sequence[str], progress: ProgressHook | None) -> BatchOutcome:
        keys = [text_key(t) for t in texts]
        text_of = dict(zip(keys, texts, strict=True))
        wanted = set(keys)
        now = self.clock()
        for j in self.registry.jobs(self.scope):
            age = now - float(j.get("submitted_at", now))
            if age > STALE_JOB_SECONDS and not wanted.intersection(j["keys"]):
                self.registry.remove(self.scope, j["id"])  # its texts are gone
        flights = [
            _Flight(j["id"], list(j["keys"]), float(j.get("submitted_at", self.clock())))
            for j in self.registry.jobs(self.scope)
            if wanted.intersection(j["keys"])
        ]
        direct: set[str] = set()
        todo: list[str] = []
        # First look at jobs left running by an earlier sync (wait=false or a crash).
        flights = self._poll_all(flights, todo, direct)
        covered = {k for f in flights for k in f.keys}
        todo = [
            k
            for k in dict.fromkeys(keys)
            if k not in self._ready and k not in covered and k not in direct
        ]
        wait = self.settings.wait
        interval = max(0.0, self.settings.poll_interval_ms / 1000)
        while self.active:
            while todo and len(flights) < max(1, self.settings.concurrency):
                part, todo = todo[: self.wire.max_items], todo[self.wire.max_items :]
                flight = self._submit(part, text_of)
                if flight is None:
                    todo = part + todo
                    if not self.active:
                        break
                else:
                    flights.append(flight)
            if progress is not None:
                progress(sum(1 for k in wanted if k in self._ready), len(wanted))
            if not wait or not flights:
                break
            self.sleep(interval)
            before = len(flights)
            flights = self._poll_all(flights, todo, direct)
            if len(flights) == before and not todo and interval == 0:
                self.sleep(0.001)  # a zero interval must still yield to the server
        if not self.active:
            # batch mode just ended (second failure): everything goes direct
            for f in flights:
                with contextlib.suppress(ProviderError):
                    self.wire.cancel(f.job_id)
                self.registry.remove(self.scope, f.job_id)
                direct.update(f.keys)
            direct.update(todo)
        out = BatchOutcome()
        for i, k in enumerate(keys):
            if k in self._ready:
                out.vectors[i] = self._ready[k]
            elif k in direct:
                out.direct.append(i)
            else:
                out.pending.append(i)
        for k in wanted.intersection(self._ready):
            del self._ready[k]
        return out

    def _submit(self, part: list[str], text_of: dict[str, str]) -> _Flight | None:
        try:
            job_id = self.wire.submit([(k, text_of[k]) for k in part])
        except ProviderError as exc:
            self._fail(f"submit: {exc}")
            return None
        now = self.clock()
        self.registry.add(self.scope, job_id, part, now)
        self.jobs_submitted += 1
        return _Flight(job_id, part, now)

    def _poll_all(self, flights: list[_Flight], todo: list[str], direct: set[str]) -> list[_Flight]:
        """Poll each job once; returns the ones still running. Failed jobs' keys go
        back to ``todo`` (or ``direct`` once batch mode is off)."""
        timeout = self.settings.timeout_minutes * 60
        still: list[_Flight] = []
        for f in flights:
            try:
                status = self.wire.poll(f.job_id)
            except ProviderError as exc:
                status = JobStatus("failed", f"poll: {exc}")
            if status.state == "running" and timeout and self.clock() - f.submitted_at > timeout:
                with contextlib.suppress(ProviderError):
                    self.wire.cancel(f.job_id)
                status = JobStatus(
                    "failed", f"still running after {self.settings.timeout_minutes:g} min"
                )
            if status.state == "running":
                still.append(f)
                continue
            self.registry.remove(self.scope, f.job_id)
            if status.state == "done":
                try:
                    got = self.wire.collect(f.job_id, status)
                except ProviderError as exc:
                    self._fail(f"job {f.job_id}: collect: {exc}")
                    todo.extend(f.keys)
                    continue
                self.jobs_collected += 1
                self._ready.update(got)
                # lines the job could not embed are sent directly
                direct.update(k for k in f.keys if k not in got)
            else:
                self._fail(f"job {f.job_id}: {status.detail or 'failed'}")
                todo.extend(k for k in f.keys if k not in self._ready)
        return still
