"""REM phase: recurring themes from concept-tag co-occurrence.

Material (``phases.rem.sources``): entries of ``MEMORY.md`` ("memory"), daily
log entries at most ``lookbackDays`` old ("daily") and the deep phase's
current proposals ("deep"). Identical texts count once.

For every pair of tags that appear together in at least :data:`MIN_SUPPORT`
entries::

    strength(a, b) = |entries with a and b| / |entries with a or b|

(the Jaccard similarity of the two tags' entry sets: 1 when the tags always
come together, small when they mostly appear apart). Pairs at or above
``minPatternStrength`` are themes, strongest first (then most entries, then by
name), at most ``limit``. REM writes them to DREAMS.md, never to MEMORY.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from engine.memory.dreaming.entries import Entry, normalize_text

MIN_SUPPORT = 2


@dataclass(frozen=True)
class Theme:
    tags: tuple[str, str]
    strength: float
    support: int  # entries with both tags
    union: int  # entries with either tag
    sources: tuple[str, ...]  # refs of the entries with both tags

    @property
    def title(self) -> str:
        return " + ".join(f"#{t}" if " " not in t else f'"{t}"' for t in self.tags)


@dataclass
class RemResult:
    themes: list[Theme]
    entries: int  # distinct entries reflected on
    pairs_considered: int


def find_themes(
    entries: Sequence[Entry], *, min_strength: float, limit: int, min_support: int = MIN_SUPPORT
) -> RemResult:
    """Themes among ``entries`` (pure)."""
    seen: set[str] = set()
    unique: list[Entry] = []
    for e in entries:
        norm = normalize_text(e.text).lower()
        if norm in seen:
            continue
        seen.add(norm)
        unique.append(e)
    with_tag: dict[str, set[int]] = {}
    for i, e in enumerate(unique):
        for tag in set(e.tags):
            with_tag.setdefault(tag, set()).add(i)
    pair_support: dict[tuple[str, str], set[int]] = {}
    for i, e in enumerate(unique):
        for a, b in combinations(sorted(set(e.tags)), 2):
            pair_support.setdefault((a, b), set()).add(i)
    themes: list[Theme] = []
    for (a, b), both in pair_support.items():
        if len(both) < min_support:
            continue
        either = with_tag[a] | with_tag[b]
        strength = len(both) / len(either)
        if strength >= min_strength:
            themes.append(
                Theme(
                    tags=(a, b),
                    strength=strength,
                    support=len(both),
                    union=len(either),
                    sources=tuple(unique[i].ref for i in sorted(both)),
                )
            )
    themes.sort(key=lambda t: (-t.strength, -t.support, t.tags))
    return RemResult(themes=themes[:limit], entries=len(unique), pairs_considered=len(pair_support))


def rem_material(
    *,
    memory: Sequence[Entry],
    daily: Sequence[Entry],
    deep: Sequence[Entry],
    sources: Sequence[str],
    today: dt.date,
    lookback_days: int,
) -> list[Entry]:
    out: list[Entry] = []
    if "memory" in sources:
        out += memory
    if "daily" in sources:
        out += [
            e for e in daily if e.day is not None and 0 <= (today - e.day).days <= lookback_days
        ]
    if "deep" in sources:
        out += deep
    return out


__all__ = ["MIN_SUPPORT", "RemResult", "Theme", "find_themes", "rem_material"]
