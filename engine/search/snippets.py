"""The ``memory_search`` snippet of memdeck's ranking: the lines that made the hit.

OpenClaw's snippet is the first 700 characters of the chunk, which for a 1,600-
character chunk of a daily log is often not the line the search found. memdeck's
snippet is built around the chunk's best unit — the line (or paragraph of wrapped
prose) the breakdown names as the vector side's source — and the query's words,
within the same 700 characters, and says which lines it holds: its citation is
``path#Lfirst-Llast`` of the snippet, not of the whole chunk.

The snippet is one run of whole lines of the chunk (so its line range is exact):

1. the anchor: the best unit; without one (keyword-only search, a provider without
   line vectors) the first line holding a query word; else the chunk's first line;
2. then, while the budget allows, the neighbouring line that holds a query word,
   else the heading just above (the section it sits in), else the lines below and
   above by turns, below first;
3. a line below that does not fit whole ends the snippet with as much of it as fits;
   an anchor longer than the budget is cut to a window around its first query word.

A chunk that fits the budget is its own snippet, whole, as before. The ``openclaw``
profile keeps OpenClaw's snippet. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.search.model import Candidate
from engine.search.results import SNIPPET_MAX_CHARS
from engine.search.words import fold, folded_words

__all__ = ["Snippet", "candidate_snippet", "focused_snippet"]

#: a snippet's length: OpenClaw's 700 characters
LIMIT = SNIPPET_MAX_CHARS
#: the least of a line worth ending a snippet with when the whole line does not fit
MIN_TAIL = 40
#: when an anchor is cut, this many characters are kept before its first query word
LEAD = 120


@dataclass(frozen=True)
class Snippet:
    text: str
    first_line: int
    last_line: int
    #: the file line the snippet is built around (step 1 above), None when unknown
    anchor: int | None = None


def candidate_snippet(c: Candidate, query_words: Sequence[str]) -> Snippet:
    """The snippet of a ranked candidate: around the unit its breakdown names
    (``best_line``–``best_line_end``), else the first line with a query word."""
    unit = None if c.best_line is None else (c.best_line, c.best_line_end or c.best_line)
    return focused_snippet(c.text, c.start_line, c.end_line, unit, query_words)


def focused_snippet(
    text: str,
    start_line: int,
    end_line: int,
    unit: tuple[int, int] | None,
    query_words: Sequence[str],
    limit: int = LIMIT,
) -> Snippet:
    """The snippet of a chunk (``text``, file lines ``start_line``–``end_line``)
    around ``unit`` (its best unit's file lines, or None) and ``query_words``."""
    lines = text.split("\n")
    if start_line + len(lines) - 1 != end_line:  # not one text line per file line
        return Snippet(text[:limit], start_line, end_line)
    wanted = {fold(w) for w in query_words}
    has_word = [bool(wanted.intersection(folded_words(line))) for line in lines]
    if unit is not None and start_line <= unit[0] <= unit[1] <= end_line:
        a, b = unit[0] - start_line, unit[1] - start_line
    else:
        a = b = next((i for i, hit in enumerate(has_word) if hit), 0)
    if len(text) <= limit:
        return Snippet(text, start_line, end_line, start_line + a)
    size = sum(len(line) for line in lines[a : b + 1]) + (b - a)
    if size > limit:
        return _cut_anchor(lines, a, b, wanted, start_line, limit)
    anchor = (a, b)
    while True:
        above = a - 1 if a > 0 else None
        below = b + 1 if b < len(lines) - 1 else None
        # plain lines: alternately below and above the anchor, below first
        down_first = (b - anchor[1]) <= (anchor[0] - a)
        order = _preference(lines, has_word, above, below, down_first)
        grown = False
        for i in order:
            cost = len(lines[i]) + 1
            if size + cost <= limit:
                size += cost
                a, b = min(a, i), max(b, i)
                grown = True
                break
        if grown:
            continue
        if below is not None and limit - size - 1 >= MIN_TAIL:
            tail = lines[below][: limit - size - 1]
            return Snippet(
                "\n".join([*lines[a : b + 1], tail]),
                start_line + a,
                start_line + below,
                start_line + anchor[0],
            )
        shown = "\n".join(lines[a : b + 1])
        return Snippet(shown, start_line + a, start_line + b, start_line + anchor[0])


def _preference(
    lines: list[str],
    has_word: list[bool],
    above: int | None,
    below: int | None,
    down_first: bool,
) -> list[int]:
    """The neighbours in the order they are taken: a line with a query word, the
    heading above, then below and above by turns."""
    sides = [i for i in (above, below) if i is not None]
    with_word = [i for i in sides if has_word[i]]
    if with_word:
        return with_word + [i for i in sides if i not in with_word]
    if above is not None and lines[above].lstrip().startswith("#"):
        return [above] + ([below] if below is not None else [])
    return sides[::-1] if down_first else sides


def _cut_anchor(
    lines: list[str], a: int, b: int, wanted: set[str], start_line: int, limit: int
) -> Snippet:
    """A window of ``limit`` characters of the anchor lines ``a``–``b``, starting up
    to ``LEAD`` characters before their first query word."""
    joined = "\n".join(lines[a : b + 1])
    at = 0
    pos = 0
    for line in lines[a : b + 1]:
        words = line.split()
        hit = next((w for w in words if wanted.intersection(folded_words(w))), None)
        if hit is not None:
            at = pos + line.find(hit)
            break
        pos += len(line) + 1
    begin = max(0, min(at - LEAD, len(joined) - limit))
    window = joined[begin : begin + limit]
    first = a + joined[:begin].count("\n")
    last = first + window.count("\n")
    return Snippet(window, start_line + first, start_line + last, start_line + first)
