"""When dreaming phases run: cron expressions evaluated in the dreaming time zone.

Each phase has a 5-field cron (``phases.<phase>.cron``). A phase is *due* when
a scheduled time has passed since it last ran — or, for a phase that never ran,
since memdeck first looked at the schedule (so opening memdeck on an old
workspace does not fire every phase at once). Missed runs do not pile up: one
run catches up however many scheduled times were missed.

Times are evaluated in ``dreaming.timezone`` (IANA name), or the machine's
local zone when unset; daylight-saving gaps and repeats are croniter's job.
Last-run times live in a small JSON file in the state directory.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from croniter import croniter

from engine.config.settings import Settings
from engine.memory.dreaming.config import DreamingSettings
from engine.workspace.files import atomic_write_json

PHASES = ("light", "deep", "rem")


def zone_now(settings: DreamingSettings, now: dt.datetime | None = None) -> dt.datetime:
    """``now`` (or the current time) as an aware datetime in the dreaming zone."""
    tz = settings.tz
    if now is None:
        return dt.datetime.now(tz) if tz else dt.datetime.now().astimezone()
    if now.tzinfo is None:
        now = now.astimezone()  # naive means local time
    return now.astimezone(tz) if tz else now.astimezone()


def next_run(cron: str, after: dt.datetime) -> dt.datetime:
    """The first scheduled time strictly after ``after`` (same zone as ``after``)."""
    next_time: dt.datetime = croniter(cron, after).get_next(dt.datetime)
    return next_time


def phase_cron(settings: DreamingSettings, phase: str) -> str:
    cron: str = getattr(settings, phase).cron
    return cron


def phase_enabled(settings: DreamingSettings, phase: str) -> bool:
    return settings.enabled and getattr(settings, phase).enabled


def state_path(settings: Settings) -> Path:
    return settings.state_dir / "memory" / f"{settings.agent_id}.memdeck-dreaming.json"


@dataclass
class ScheduleState:
    """Persistent last-run times (epoch seconds) per phase."""

    path: Path
    created_at: float
    last_run: dict[str, float]

    @classmethod
    def load(cls, path: Path, now: dt.datetime) -> ScheduleState:
        try:
            doc: Any = json.loads(path.read_bytes())
        except (FileNotFoundError, ValueError, OSError):
            doc = None
        if not isinstance(doc, dict):
            state = cls(path, now.timestamp(), {})
            state.save()
            return state
        raw_runs = doc.get("lastRun")
        runs: dict[str, Any] = raw_runs if isinstance(raw_runs, dict) else {}
        created = doc.get("createdAt")
        return cls(
            path,
            float(created) if isinstance(created, int | float) else now.timestamp(),
            {k: float(v) for k, v in runs.items() if isinstance(v, int | float)},
        )

    def save(self) -> None:
        doc = {"version": 1, "createdAt": self.created_at, "lastRun": self.last_run}
        atomic_write_json(self.path, doc)

    def mark(self, phase: str, at: dt.datetime) -> None:
        self.last_run[phase] = at.timestamp()
        self.save()


def due_phases(settings: DreamingSettings, state: ScheduleState, now: dt.datetime) -> list[str]:
    """Enabled phases with a scheduled time in (last run, now], in run order."""
    now = zone_now(settings, now)
    due = []
    for phase in PHASES:
        if not phase_enabled(settings, phase):
            continue
        since = state.last_run.get(phase, state.created_at)
        anchor = dt.datetime.fromtimestamp(since, now.tzinfo)
        if next_run(phase_cron(settings, phase), anchor) <= now:
            due.append(phase)
    return due


__all__ = [
    "PHASES",
    "ScheduleState",
    "due_phases",
    "next_run",
    "state_path",
    "zone_now",
]
