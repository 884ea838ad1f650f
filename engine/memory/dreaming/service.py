"""The dreaming service: gathers material from a workspace and runs the phases.

``Dreamer(engine)`` is what the CLI (``memdeck promote``, ``memdeck dream``)
and the TUI's promotion queue use. The phase modules are pure; this one does
the I/O around them: reading daily logs, transcripts and MEMORY.md, loading
recall events from the index, writing reports and — only through
:meth:`Dreamer.accept`, or an auto-write the user configured — MEMORY.md.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.memory.dreaming.config import DreamingSettings, load_dreaming_settings
from engine.memory.dreaming.deep import WEIGHTS, DeepResult, Proposal, memory_health, rank
from engine.memory.dreaming.entries import Entry, split_entries
from engine.memory.dreaming.light import LightResult, attribute, cluster, in_window, stage
from engine.memory.dreaming.promotion import (
    MEMORY_NAMES,
    DecisionStore,
    Preview,
    PromotionError,
    decisions_path,
    preview,
    write_preview,
)
from engine.memory.dreaming.rem import RemResult, find_themes, rem_material
from engine.memory.dreaming.reports import (
    REPORTS_DIR,
    ReportError,
    render_deep,
    render_light,
    render_rem,
    write_report,
)
from engine.memory.dreaming.schedule import PHASES, ScheduleState, due_phases, state_path, zone_now
from engine.memory.recall import RecallEvent, load_events
from engine.memory.sessions import REL_PREFIX, transcript_line
from engine.workspace.dates import date_from_path

if TYPE_CHECKING:
    from engine.core import Engine


@dataclass
class RunReport:
    """What one dreaming run did."""

    ran: list[str] = field(default_factory=list)
    light: LightResult | None = None
    deep: DeepResult | None = None
    rem: RemResult | None = None
    files: list[str] = field(default_factory=list)
    auto_written: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


class Dreamer:
    """Light, deep and REM for one engine's workspace, plus the reviewed promotion."""

    def __init__(self, engine: Engine, *, config: DreamingSettings | None = None):
        self.engine = engine
        self.config = config or load_dreaming_settings(engine.settings)
        self.decisions = DecisionStore(decisions_path(engine.settings))

    # -- time and paths ------------------------------------------------------
    @property
    def workspace(self) -> Path:
        return self.engine.workspace.root

    def now(self, now: dt.datetime | None = None) -> dt.datetime:
        return zone_now(self.config, now)

    def _read_text(self, path: Path) -> str | None:
        """A memory file's text, read like the indexer reads it: opened without
        following symlinks, checked on the descriptor, and left unread (None) when
        its ``fstat`` size is over the 10 MiB limit, refused or missing."""
        try:
            doc = self.engine.workspace.read(path)
        except (OSError, ValueError):  # PathRefused, UnreadableFile (too large)
            return None
        return doc.text if doc.exists else None

    def read_only(self) -> str | None:
        root = self.workspace
        if root.exists() and not os.access(root, os.W_OK):
            return f"{root} is not writable"
        return None

    # -- material ------------------------------------------------------------
    def daily_entries(self) -> list[Entry]:
        """Entries of every dated log under memory/ (reports under memory/dreaming/ excluded)."""
        out: list[Entry] = []
        for f in self.engine.workspace.list_files():
            if f.kind != "daily" or f.rel.startswith(REPORTS_DIR + "/"):
                continue
            text = self._read_text(f.abs)
            if text is None:
                continue
            out += split_entries(text, path=f.rel, source="daily", day=date_from_path(f.rel))
        return out

    def memory_entries(self) -> list[Entry]:
        for name in MEMORY_NAMES:
            path = self.workspace / name
            if path.is_file():
                text = self._read_text(path)
                return (
                    []
                    if text is None
                    else split_entries(text, path=name, source="memory", day=None, min_words=1)
                )
        return []

    def session_entries(self, since: dt.date) -> list[Entry]:
        """One entry per user/assistant message of transcripts touched since ``since``."""
        from engine.config.paths import sessions_dir

        directory = sessions_dir(self.engine.settings.state_dir, self.engine.settings.agent_id)
        if not directory.is_dir():
            return []
        tz = self.now().tzinfo
        out: list[Entry] = []
        for path in sorted(directory.glob("*.jsonl")):
            try:
                if path.is_symlink():
                    continue
                mtime_day = dt.datetime.fromtimestamp(path.stat().st_mtime, tz).date()
                if mtime_day < since:
                    continue
                raw_lines = path.read_bytes().split(b"\n")
            except OSError:
                continue
            for number, raw in enumerate(raw_lines, start=1):
                if not raw.strip():
                    continue
                line = transcript_line(raw.decode("utf-8", errors="replace"))
                if line is None:
                    continue
                text = line.split(": ", 1)[1] if ": " in line else line
                day = _message_day(raw, tz) or mtime_day
                rel = REL_PREFIX + path.name
                for e in split_entries(text, path=rel, source="sessions", day=day):
                    out.append(replace(e, start_line=number, end_line=number))
        return out

    def events(self, now: dt.datetime) -> list[RecallEvent]:
        with self.engine.pinned_store() as store:
            return load_events(store, until=now.timestamp())

    def _material(
        self, now: dt.datetime, window_days: int, sources: tuple[str, ...]
    ) -> tuple[list[Entry], list[RecallEvent]]:
        since = now.date() - dt.timedelta(days=window_days)
        entries = self.daily_entries() if ("daily" in sources or "recall" in sources) else []
        if "sessions" in sources:
            entries += self.session_entries(since)
        events = self.events(now) if "recall" in sources else []
        return entries, events

    # -- phases ----------------------------------------------------------------
    def light(self, now: dt.datetime | None = None) -> LightResult:
        now = self.now(now)
        s = self.config.light
        entries, events = self._material(now, s.lookback_days, s.sources)
        return stage(
            entries,
            events,
            now=now,
            lookback_days=s.lookback_days,
            limit=s.limit,
            dedupe_similarity=s.dedupe_similarity,
            sources=s.sources,
        )

    def health(self, now: dt.datetime, events: list[RecallEvent]) -> float:
        window = self.config.deep.recovery.lookback_days * 86400
        recent = [e for e in events if now.timestamp() - e.at <= window]
        in_memory = sum(1 for e in recent if e.path in MEMORY_NAMES)
        return memory_health(len(self.memory_entries()), len(recent), in_memory)

    def deep(self, now: dt.datetime | None = None) -> DeepResult:
        now = self.now(now)
        s = self.config.deep
        window = max(s.max_age_days, s.recovery.lookback_days if s.recovery.enabled else 0)
        pool_sources = tuple(x for x in s.sources if x in ("daily", "sessions", "recall"))
        entries, events = self._material(now, window, pool_sources)
        hits = attribute(entries, events)
        chosen = in_window(entries, hits, sources=pool_sources, lookback_days=window, now=now)
        if "recall" in pool_sources:
            # A recalled entry is material however old the recall (age is gated later).
            chosen = sorted(set(chosen) | set(hits))
        pool = [entries[i] for i in chosen]
        pool_hits = {new: hits.get(old, []) for new, old in enumerate(chosen)}
        candidates, _ = cluster(pool, pool_hits, self.config.light.dedupe_similarity)
        memory = self.memory_entries() if "memory" in s.sources else []
        return rank(
            candidates,
            s,
            now=now,
            memory=memory,
            decisions=self.decisions.verdicts(),
            dedupe_similarity=self.config.light.dedupe_similarity,
            health=self.health(now, events),
        )

    def rem(self, now: dt.datetime | None = None, deep: DeepResult | None = None) -> RemResult:
        now = self.now(now)
        s = self.config.rem
        deep_entries: list[Entry] = []
        if "deep" in s.sources:
            deep = deep or self.deep(now)
            deep_entries = [p.candidate.entry for p in deep.queue]
        material = rem_material(
            memory=self.memory_entries(),
            daily=self.daily_entries() if "daily" in s.sources else [],
            deep=deep_entries,
            sources=s.sources,
            today=now.date(),
            lookback_days=s.lookback_days,
        )
        return find_themes(material, min_strength=s.min_pattern_strength, limit=s.limit)

    # -- reviewed promotion ----------------------------------------------------
    def queue(self, now: dt.datetime | None = None) -> list[Proposal]:
        """Candidates waiting for the user's decision, best first."""
        return self.deep(now).queue

    def preview(self, proposal: Proposal, now: dt.datetime | None = None) -> Preview:
        return preview(self.workspace, proposal.candidate, self.now(now).date())

    def accept(self, proposal: Proposal, shown: Preview, *, by: str = "user") -> Preview:
        """Write exactly the preview the user saw, then remember the decision."""
        if shown.key != proposal.key:
            raise PromotionError("the preview belongs to another candidate")
        write_preview(shown, read_only=self.read_only())
        self.decisions.record(proposal.candidate, "accepted", by=by, score=proposal.score)
        self.engine.mark_dirty()
        return shown

    def reject(self, proposal: Proposal) -> None:
        self.decisions.record(proposal.candidate, "rejected", by="user", score=proposal.score)

    # -- scheduled runs ----------------------------------------------------------
    def run(
        self,
        phases: list[str] | None = None,
        now: dt.datetime | None = None,
        *,
        write_reports: bool = True,
        auto_write: bool = True,
    ) -> RunReport:
        """Run phases in order light → deep → REM and write their reports.

        ``auto_write`` lets the deep phase write candidates whose confidence
        reaches ``autoWriteMinConfidence`` — and only when the user put that key
        in the config. Anything else waits in the queue for a review.
        """
        now = self.now(now)
        report = RunReport()
        wanted = [p for p in PHASES if phases is None or p in phases]
        read_only = self.read_only()
        for phase in wanted:
            if not (self.config.enabled and getattr(self.config, phase).enabled):
                report.skipped[phase] = "disabled"
                continue
            report.ran.append(phase)
            if phase == "light":
                report.light = self.light(now)
                body = render_light(report.light, now)
            elif phase == "deep":
                report.deep = self.deep(now)
                if auto_write and read_only is None:
                    report.auto_written = self._auto_write(report.deep, now)
                body = render_deep(report.deep, now, report.auto_written)
            else:
                report.rem = self.rem(now, report.deep)
                body = render_rem(report.rem, now)
            if write_reports:
                if read_only:
                    report.skipped[f"{phase} report"] = read_only
                    continue
                try:
                    written = write_report(
                        self.workspace,
                        phase,
                        body,
                        now.date(),
                        inline=self.config.inline,
                        separate=self.config.separate,
                    )
                except (ReportError, OSError) as exc:
                    report.skipped[f"{phase} report"] = str(exc)
                    continue
                report.files += [str(p) for p in written if str(p) not in report.files]
        return report

    def _auto_write(self, deep: DeepResult, now: dt.datetime) -> list[str]:
        r = self.config.deep.recovery
        if not r.auto_write_configured:
            return []
        written = []
        for p in deep.queue:
            if p.confidence >= r.auto_write_min_confidence:
                shown = self.preview(p, now)
                self.accept(p, shown, by="auto")
                written.append(p.key)
        return written

    def run_due(self, now: dt.datetime | None = None) -> RunReport:
        """Run the phases whose cron time has come, and remember that they ran."""
        now = self.now(now)
        state = ScheduleState.load(state_path(self.engine.settings), now)
        due = due_phases(self.config, state, now)
        report = self.run(due, now) if due else RunReport()
        for phase in report.ran:
            state.mark(phase, now)
        return report


def proposal_dict(p: Proposal, preview_: Preview | None = None) -> dict[str, Any]:
    """The JSON form of a queued candidate (CLI ``--json`` and tests)."""
    parts = p.parts
    out: dict[str, Any] = {
        "key": p.key,
        "text": p.candidate.text,
        "score": round(p.score, 6),
        "confidence": round(p.confidence, 6),
        "recovered": p.recovered,
        "components": {name: round(getattr(parts, name), 6) for name in WEIGHTS},
        "weighted": {k: round(v, 6) for k, v in parts.weighted().items()},
        "weights": dict(WEIGHTS),
        "recalls": parts.recalls,
        "uniqueQueries": parts.unique_queries,
        "days": parts.days,
        "tags": list(p.candidate.tags),
        "noteAgeDays": p.age_days,
        "sources": p.candidate.sources,
        "queries": p.candidate.queries,
        "failed": list(p.failed),
        "excluded": p.excluded,
    }
    if preview_ is not None:
        out["preview"] = preview_.to_dict()
    return out


def _message_day(raw: bytes, tz: dt.tzinfo | None) -> dt.date | None:
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    raw_message = obj.get("message")
    message: dict[str, Any] = raw_message if isinstance(raw_message, dict) else {}
    for value in (message.get("timestamp"), obj.get("timestamp")):
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            seconds = value / 1000 if value > 1e11 else value
            return dt.datetime.fromtimestamp(seconds, tz).date()
        if isinstance(value, str):
            try:
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.UTC)
            return parsed.astimezone(tz).date()
    return None


__all__ = ["Dreamer", "RunReport", "proposal_dict"]
