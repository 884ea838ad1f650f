"""Light phase: stage recent candidates and fold near-duplicates together.

Input: entries of daily logs and session transcripts (``engine.memory.dreaming.entries``)
and recall events (``engine.memory.recall``). Output: a short list of *candidates*,
each a cluster of entries that say the same thing, with every recall hit that
landed on any of them. Light never writes ``MEMORY.md``.

Which entries are staged (``phases.light.sources``):

* ``daily`` / ``sessions``: entries whose note is at most ``lookbackDays`` days
  old (age in whole days, today = 0);
* ``recall``: entries hit by a recall event at most ``lookbackDays`` days old,
  however old the note itself is (being searched for is a recent trace).

Recall attribution: a search hit covers a chunk (a line range), which may hold
several entries. The hit counts for the overlapping entries that share a word
with the query; when none does (a purely semantic match), for all of them.

Dedupe: entries are visited newest first and join the first cluster whose
representative (its newest entry) has Jaccard similarity ≥ ``dedupeSimilarity``
on lower-case word sets (the MMR tokenizer); otherwise they start a cluster.
The same fact logged on Monday and again on Friday becomes one candidate whose
evidence is the sum of both.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from engine.index.tokens import jaccard, similarity_tokens
from engine.memory.dreaming.entries import MAX_TAGS, Entry, normalize_text
from engine.memory.recall import RecallEvent


@dataclass(frozen=True)
class Merge:
    """An entry folded into an existing candidate, and how similar it was."""

    kept: str  # ref of the candidate's representative entry
    dropped: str  # ref of the folded entry
    similarity: float


@dataclass
class Candidate:
    """A cluster of entries saying the same thing, with its recall evidence."""

    entry: Entry  # the representative: the newest member
    members: list[Entry] = field(default_factory=list)
    hits: list[RecallEvent] = field(default_factory=list)

    @property
    def text(self) -> str:
        return normalize_text(self.entry.text)

    @property
    def key(self) -> str:
        """Stable id: a hash of the normalised text (survives line moves and reindexes)."""
        return candidate_key(self.text)

    @property
    def recall_count(self) -> int:
        return len(self.hits)

    @property
    def queries(self) -> list[str]:
        """Distinct questions (normalised), in order of first recall."""
        return list(dict.fromkeys(h.query_key for h in sorted(self.hits, key=lambda h: h.at)))

    @property
    def unique_queries(self) -> int:
        return len(self.queries)

    @property
    def last_recall_at(self) -> float | None:
        return max((h.at for h in self.hits), default=None)

    @property
    def newest_day(self) -> dt.date | None:
        return max((m.day for m in self.members if m.day is not None), default=None)

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for m in self.members for t in m.tags))[:MAX_TAGS]

    @property
    def sources(self) -> list[str]:
        return [m.ref for m in self.members]


def candidate_key(text: str) -> str:
    return hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:12]


@dataclass
class LightResult:
    staged: list[Candidate]
    merges: list[Merge]
    considered: int  # entries that entered the window
    over_limit: int  # candidates cut by ``limit``


def event_age_days(event_at: float, now: dt.datetime) -> float:
    return max(0.0, (now.timestamp() - event_at) / 86400.0)


def note_age_days(day: dt.date | None, today: dt.date) -> int | None:
    return None if day is None else max(0, (today - day).days)


def attribute(
    entries: Sequence[Entry], events: Iterable[RecallEvent]
) -> dict[int, list[RecallEvent]]:
    """Map each event to the entries it covers: ``{index in entries: [events]}``."""
    by_path: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        by_path.setdefault(entry.path, []).append(index)
    out: dict[int, list[RecallEvent]] = {}
    for event in events:
        covered = [
            i
            for i in by_path.get(event.path, ())
            if entries[i].overlaps(event.start_line, event.end_line)
        ]
        if len(covered) > 1:
            query_words = similarity_tokens(event.query)
            sharing = [i for i in covered if entries[i].words & query_words]
            covered = sharing or covered
        for i in covered:
            out.setdefault(i, []).append(event)
    return out


def cluster(
    entries: Sequence[Entry],
    hits: dict[int, list[RecallEvent]],
    threshold: float,
) -> tuple[list[Candidate], list[Merge]]:
    """Greedy near-duplicate clustering, newest entry first (see module docstring)."""
    order = sorted(
        range(len(entries)),
        key=lambda i: (
            -(day.toordinal() if (day := entries[i].day) else 0),
            entries[i].path,
            -entries[i].start_line,
        ),
    )
    candidates: list[Candidate] = []
    merges: list[Merge] = []
    for i in order:
        entry = entries[i]
        home: Candidate | None = None
        best = 0.0
        for cand in candidates:
            sim = jaccard(cand.entry.words, entry.words)
            if sim >= threshold and sim > best:
                home, best = cand, sim
        if home is None:
            home = Candidate(entry=entry)
            candidates.append(home)
        else:
            merges.append(Merge(kept=home.entry.ref, dropped=entry.ref, similarity=best))
        home.members.append(entry)
        for event in hits.get(i, ()):
            if event not in home.hits:
                home.hits.append(event)
    for cand in candidates:
        cand.hits.sort(key=lambda e: (e.at, e.path, e.start_line))
    return candidates, merges


def in_window(
    entries: Sequence[Entry],
    hits: dict[int, list[RecallEvent]],
    *,
    sources: Sequence[str],
    lookback_days: int,
    now: dt.datetime,
) -> list[int]:
    """Indexes of the entries the window admits (by note age or by a recent recall)."""
    today = now.date()
    chosen = []
    for i, entry in enumerate(entries):
        age = note_age_days(entry.day, today)
        by_note = entry.source in sources and age is not None and age <= lookback_days
        by_recall = "recall" in sources and any(
            event_age_days(e.at, now) <= lookback_days for e in hits.get(i, ())
        )
        if by_note or by_recall:
            chosen.append(i)
    return chosen


def stage(
    entries: Sequence[Entry],
    events: Sequence[RecallEvent],
    *,
    now: dt.datetime,
    lookback_days: int,
    limit: int,
    dedupe_similarity: float,
    sources: Sequence[str],
) -> LightResult:
    """Run the light phase on already-gathered material (pure)."""
    hits = attribute(entries, events)
    chosen = in_window(entries, hits, sources=sources, lookback_days=lookback_days, now=now)
    window_entries = [entries[i] for i in chosen]
    window_hits = {
        new: [e for e in hits.get(old, ()) if event_age_days(e.at, now) <= lookback_days]
        for new, old in enumerate(chosen)
    }
    candidates, merges = cluster(window_entries, window_hits, dedupe_similarity)
    candidates.sort(
        key=lambda c: (
            -c.recall_count,
            -(c.newest_day.toordinal() if c.newest_day else 0),
            c.entry.path,
            c.entry.start_line,
        )
    )
    over = max(0, len(candidates) - limit)
    return LightResult(
        staged=candidates[:limit], merges=merges, considered=len(chosen), over_limit=over
    )


__all__ = [
    "Candidate",
    "LightResult",
    "Merge",
    "attribute",
    "candidate_key",
    "cluster",
    "event_age_days",
    "in_window",
    "note_age_days",
    "stage",
]
