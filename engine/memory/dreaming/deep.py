"""Deep phase: score candidates, apply the gates, propose promotions.

Score = Σ weight × component, every component in [0, 1]:

============== ====== ==========================================================
component      weight value
============== ====== ==========================================================
relevance      0.30   mean score of the candidate's recall hits
frequency      0.24   min(1, ln(1 + recalls) / ln(11))   (10 recalls → 1)
diversity      0.15   min(1, distinct queries / 5)
recency        0.15   0.5 ^ (days since the last recall / recencyHalfLifeDays)
consolidation  0.10   spread over distinct days (recall days ∪ note days, in the
                      dreaming time zone): 0 for none, 0.2 for one, else
                      0.55·min(1, ln d / ln 5) + 0.45·min(1, span days / 7)
conceptual     0.06   min(1, concept tags / 6)
============== ====== ==========================================================

A candidate is *proposed* when it passes every gate: score ≥ ``minScore``,
recalls ≥ ``minRecallCount``, distinct queries ≥ ``minUniqueQueries`` and note
age (today − date of its newest entry) ≤ ``maxAgeDays``. Candidates already in
long-term memory (Jaccard ≥ the light dedupe threshold against a ``MEMORY.md``
entry), or already accepted or rejected by the user, are never proposed.

**Recovery.** Memory health is ``0.5·min(1, MEMORY.md entries / 20) +
0.5·(share of recall hits in the recovery window that landed in MEMORY.md)``
(only the first term, alone, when there were no hits). Below
``recovery.triggerBelowHealth`` the phase also looks back
``recovery.lookbackDays`` and treats every distinct day an entry was written
in the daily logs as one extra signal with relevance 1.0 and a query of its
own (the agent chose to write it down again). Candidates that failed the normal
gates but reach ``minRecoveryConfidence`` with that evidence are proposed as
*recovered*, at most ``maxRecoveredCandidates``; the count gates do not apply.

Every proposal has a ``confidence`` (its score). Nothing here writes anything.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from engine.index.tokens import jaccard
from engine.memory.dreaming.config import DeepSettings
from engine.memory.dreaming.entries import Entry
from engine.memory.dreaming.light import Candidate, note_age_days
from engine.memory.recall import RecallEvent

WEIGHTS: dict[str, float] = {
    "relevance": 0.30,
    "frequency": 0.24,
    "diversity": 0.15,
    "recency": 0.15,
    "consolidation": 0.10,
    "conceptual": 0.06,
}
FREQUENCY_SATURATION = 10
DIVERSITY_SATURATION = 5
CONCEPT_SATURATION = 6
HEALTH_ENTRY_TARGET = 20


def _unit(x: float) -> float:
    return 0.0 if not math.isfinite(x) else max(0.0, min(1.0, x))


def frequency_component(recalls: int) -> float:
    return _unit(math.log1p(max(0, recalls)) / math.log1p(FREQUENCY_SATURATION))


def diversity_component(unique_queries: int) -> float:
    return _unit(unique_queries / DIVERSITY_SATURATION)


def recency_component(age_days: float | None, half_life_days: float) -> float:
    if age_days is None:
        return 0.0
    return _unit(0.5 ** (max(0.0, age_days) / half_life_days))


def consolidation_component(days: Iterable[dt.date]) -> float:
    distinct = sorted(set(days))
    if not distinct:
        return 0.0
    if len(distinct) == 1:
        return 0.2
    spacing = _unit(math.log(len(distinct)) / math.log(5))
    span = _unit((distinct[-1] - distinct[0]).days / 7)
    return _unit(0.55 * spacing + 0.45 * span)


def conceptual_component(tags: int) -> float:
    return _unit(tags / CONCEPT_SATURATION)


@dataclass(frozen=True)
class ScoreParts:
    """The six components and what they came from, for display and for tests."""

    relevance: float
    frequency: float
    diversity: float
    recency: float
    consolidation: float
    conceptual: float
    recalls: int
    unique_queries: int
    days: int
    tags: int
    last_recall_age_days: float | None

    @property
    def total(self) -> float:
        return _unit(sum(WEIGHTS[name] * getattr(self, name) for name in WEIGHTS))

    def weighted(self) -> dict[str, float]:
        return {name: WEIGHTS[name] * getattr(self, name) for name in WEIGHTS}


def local_day(at: float, tz: dt.tzinfo | None) -> dt.date:
    return dt.datetime.fromtimestamp(at, tz or dt.datetime.now().astimezone().tzinfo).date()


def score_parts(
    hits: Sequence[RecallEvent],
    note_days: Iterable[dt.date],
    tags: int,
    *,
    now: dt.datetime,
    half_life_days: float,
    grounded_days: Sequence[dt.date] = (),
) -> ScoreParts:
    """Components for one candidate; ``grounded_days`` are recovery's extra signals."""
    tz = now.tzinfo
    recalls = len(hits) + len(grounded_days)
    total_relevance = sum(_unit(h.score) for h in hits) + 1.0 * len(grounded_days)
    queries = {h.query_key for h in hits} | {f"daily:{d.isoformat()}" for d in grounded_days}
    ages = [max(0.0, (now.timestamp() - h.at) / 86400.0) for h in hits]
    ages += [float(max(0, (now.date() - d).days)) for d in grounded_days]
    last_age = min(ages) if ages else None
    days = {local_day(h.at, tz) for h in hits} | set(note_days)
    return ScoreParts(
        relevance=_unit(total_relevance / recalls) if recalls else 0.0,
        frequency=frequency_component(recalls),
        diversity=diversity_component(len(queries)),
        recency=recency_component(last_age, half_life_days),
        consolidation=consolidation_component(days),
        conceptual=conceptual_component(tags),
        recalls=recalls,
        unique_queries=len(queries),
        days=len(days),
        tags=tags,
        last_recall_age_days=last_age,
    )


@dataclass
class Proposal:
    """A scored candidate and the verdict of every gate."""

    candidate: Candidate
    parts: ScoreParts
    age_days: int | None  # note age of the newest entry
    failed: list[str] = field(default_factory=list)  # gate failures, human readable
    excluded: str | None = None  # "in MEMORY.md", "rejected", "accepted"
    recovered: bool = False

    @property
    def key(self) -> str:
        return self.candidate.key

    @property
    def score(self) -> float:
        return self.parts.total

    @property
    def confidence(self) -> float:
        return self.parts.total

    @property
    def passed(self) -> bool:
        return not self.failed and self.excluded is None


@dataclass
class DeepResult:
    proposed: list[Proposal]  # passed the gates, best first, at most ``limit``
    recovered: list[Proposal]  # proposed by recovery
    rejected: list[Proposal]  # scored but failed a gate or excluded
    health: float
    recovery_triggered: bool
    over_limit: int = 0

    @property
    def queue(self) -> list[Proposal]:
        return self.proposed + self.recovered


def memory_health(memory_entries: int, hits_total: int, hits_in_memory: int) -> float:
    """See the module docstring; 0 = nothing long-term, 1 = a well-used MEMORY.md."""
    size = _unit(memory_entries / HEALTH_ENTRY_TARGET)
    if hits_total <= 0:
        return size
    return _unit(0.5 * size + 0.5 * hits_in_memory / hits_total)


def gate(p: Proposal, s: DeepSettings) -> list[str]:
    failed = []
    if p.parts.total < s.min_score:
        failed.append(f"score {p.parts.total:.3f} < minScore {s.min_score}")
    if p.parts.recalls < s.min_recall_count:
        failed.append(f"recalls {p.parts.recalls} < minRecallCount {s.min_recall_count}")
    if p.parts.unique_queries < s.min_unique_queries:
        failed.append(f"queries {p.parts.unique_queries} < minUniqueQueries {s.min_unique_queries}")
    if p.age_days is not None and p.age_days > s.max_age_days:
        failed.append(f"note age {p.age_days} d > maxAgeDays {s.max_age_days}")
    return failed


def already_remembered(candidate: Candidate, memory: Sequence[Entry], threshold: float) -> bool:
    words = candidate.entry.words
    if any(candidate.key in m.text for m in memory):
        return True
    return any(jaccard(words, m.words) >= threshold for m in memory)


def rank(
    candidates: Sequence[Candidate],
    settings: DeepSettings,
    *,
    now: dt.datetime,
    memory: Sequence[Entry] = (),
    decisions: dict[str, str] | None = None,
    dedupe_similarity: float = 0.9,
    health: float = 1.0,
    trigger_recovery: bool | None = None,
) -> DeepResult:
    """Score, gate and order candidates (pure). ``decisions`` maps key → "accepted"/"rejected"."""
    decisions = decisions or {}
    today = now.date()
    scored: list[Proposal] = []
    for cand in candidates:
        note_days = [m.day for m in cand.members if m.day is not None]
        parts = score_parts(
            cand.hits,
            note_days,
            len(cand.tags),
            now=now,
            half_life_days=settings.recency_half_life_days,
        )
        p = Proposal(candidate=cand, parts=parts, age_days=note_age_days(cand.newest_day, today))
        if cand.key in decisions:
            p.excluded = decisions[cand.key]
        elif already_remembered(cand, memory, dedupe_similarity):
            p.excluded = "in MEMORY.md"
        p.failed = gate(p, settings)
        scored.append(p)
    order = sorted(
        scored, key=lambda p: (-p.score, -p.parts.recalls, p.candidate.entry.path, p.key)
    )
    passing = [p for p in order if p.passed]
    proposed = passing[: settings.limit]
    rejected = [p for p in order if not p.passed] + passing[settings.limit :]
    r = settings.recovery
    triggered = (
        trigger_recovery
        if trigger_recovery is not None
        else r.enabled and health < r.trigger_below_health
    )
    recovered: list[Proposal] = []
    if triggered:
        recovered = _recover(rejected, settings, now=now)
        keys = {p.key for p in recovered}
        rejected = [p for p in rejected if p.key not in keys]
    return DeepResult(
        proposed=proposed,
        recovered=recovered,
        rejected=rejected,
        health=health,
        recovery_triggered=bool(triggered),
        over_limit=max(0, len(passing) - settings.limit),
    )


def _recover(pool: Sequence[Proposal], s: DeepSettings, *, now: dt.datetime) -> list[Proposal]:
    r = s.recovery
    today = now.date()
    out: list[Proposal] = []
    for p in pool:
        if p.excluded is not None:
            continue
        if p.age_days is not None and p.age_days > r.lookback_days:
            continue
        cand = p.candidate
        written = sorted({m.day for m in cand.members if m.source == "daily" and m.day is not None})
        written = [d for d in written if (today - d).days <= r.lookback_days]
        parts = score_parts(
            cand.hits,
            [m.day for m in cand.members if m.day is not None],
            len(cand.tags),
            now=now,
            half_life_days=s.recency_half_life_days,
            grounded_days=written,
        )
        if parts.total >= r.min_recovery_confidence:
            out.append(replace(p, parts=parts, failed=[], recovered=True))
    out.sort(key=lambda p: (-p.score, p.candidate.entry.path, p.key))
    return out[: r.max_recovered_candidates]


__all__ = [
    "WEIGHTS",
    "DeepResult",
    "Proposal",
    "ScoreParts",
    "conceptual_component",
    "consolidation_component",
    "diversity_component",
    "frequency_component",
    "gate",
    "memory_health",
    "rank",
    "recency_component",
    "score_parts",
]
