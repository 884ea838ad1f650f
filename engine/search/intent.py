"""A query that asks *when*, and the units of memory that say when.

"When did we move the staging database?" is answered by a line that names a time:
"moved staging to the new host yesterday" (the daily log's date makes "yesterday" a
day). The question's embedding is close to every line about the staging database.
Often it is closest to a line that only discusses it. So under the calibrated fusion,
when a query asks when (:func:`asks_when`), the feedback adds ``scoring.TIME_WEIGHT``
to the cosine of each unit that names a time (:func:`time_expression`). The feedback
runs only past its gate, so this reorders what the first pass found and never makes a
query about nothing in memory return something. The breakdown prints the term and the
words that earned it.

The rules are English only, like the question words they read. Numbers:
docs/ranking.md, "A question about when".
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from functools import lru_cache

from engine.workspace.dates import MONTH_NAMES, WEEKDAY_NAMES

#: a question about a time: how it starts
_WHEN_QUESTION = re.compile(
    r"\W*(?:when|since when|until when"
    r"|(?:what|which) (?:date|day|year|month|time|week|weekend)"
    r"|how long ago)\b",
    re.IGNORECASE,
)
_WEEKDAYS = frozenset(WEEKDAY_NAMES)
#: May is left out: it is a verb too (it counts beside a number, below)
_MONTHS = frozenset(MONTH_NAMES) - {"may"}
#: a word that names a time by itself
_ON_ITS_OWN = _WEEKDAYS | _MONTHS | {"yesterday", "today", "tonight", "tomorrow", "recently", "ago"}
#: "last", "next", "this" or "past" before one of these names a time
_PERIODS = _WEEKDAYS | frozenset(
    [
        "week",
        "weekend",
        "month",
        "year",
        "night",
        "morning",
        "evening",
        "summer",
        "winter",
        "spring",
        "autumn",
        "fall",
    ]
)
_BEFORE_PERIOD = frozenset({"last", "next", "this", "past"})
_ASCII_WORD = re.compile(r"[a-z]+")
#: the words a time in letters starts with
_STARTS = _ON_ITS_OWN | _BEFORE_PERIOD | {"the", "may"}
#: what every time in numbers holds: four digits (a year), or a digit, a slash and a digit
_NUMBERS_NEEDED = re.compile(r"\d(?:\d\d\d|/\d)")
#: a line's words and numbers, lower case (a date like 3/14 is one token)
_TOKEN = re.compile(r"[^\W_]+(?:/[^\W_]+)*")
_YEAR = re.compile(r"(?:19|20)\d\d")
_DATE = re.compile(r"\d{1,2}/\d{1,2}(?:/\d{2,4})?")
_DAY_OF_MONTH = re.compile(r"\d{1,2}(?:st|nd|rd|th)?")
_NUMBER = re.compile(r"\d{1,4}")


def asks_when(query: str) -> bool:
    """Whether ``query`` is a question about a time ("When did …", "What year …")."""
    return _WHEN_QUESTION.match(query) is not None


def time_expression(text: str) -> str | None:
    """The first words of ``text`` that place something in time, or None: "yesterday",
    "last week", "two weekends ago" ("ago"), a weekday, a month, a year, a date like
    3/14, "7 May" or "May 2024". Each line is read once per process (remembered)."""
    for line in text.split("\n"):
        words = _line_time(line)
        if words is not None:
            return words
    return None


@lru_cache(maxsize=8192)
def _line_time(line: str) -> str | None:
    """:func:`time_expression` of one line: its words in order, each tried as the start of
    a time (a word is a run of letters and digits, as FTS5's; a date keeps its slashes).
    Most lines hold none of the words or numbers a time needs and are passed over at once."""
    low = line.lower()
    if not _may_name_a_time(set(_ASCII_WORD.findall(low)), low):
        return None
    found = list(_TOKEN.finditer(line))
    words = [m.group(0).lower() for m in found]
    # the words of a time of several are one space apart
    spaced = [line[a.end() : b.start()] == " " for a, b in itertools.pairwise(found)]
    for i, word in enumerate(words):
        if word not in _STARTS and not word[:1].isdigit():
            continue
        stop = _time_at(words, spaced, i)
        if stop is not None:
            return line[found[i].start() : found[stop].end()]
    return None


def _may_name_a_time(words: set[str], low: str) -> bool:
    """Whether a line whose words (lower case, letters only) are ``words`` can hold a
    time: the words one needs are all there, or the numbers (a superset test)."""
    if not _ON_ITS_OWN.isdisjoint(words):
        return True
    if not _BEFORE_PERIOD.isdisjoint(words) and not _PERIODS.isdisjoint(words):
        return True
    if "other" in words and "day" in words:
        return True
    if "may" in words and any(map(str.isdigit, low)):
        return True
    return _NUMBERS_NEEDED.search(low) is not None


def _time_at(words: list[str], spaced: list[bool], i: int) -> int | None:
    """The index of the last word of a time that starts at word ``i``, or None
    (``spaced[i]``: one space between words ``i`` and ``i + 1``)."""
    word = words[i]
    after = words[i + 1] if i + 1 < len(words) and spaced[i] else ""
    if word in _ON_ITS_OWN:
        return i
    if word in _BEFORE_PERIOD and after in _PERIODS:
        return i + 1
    if (
        word == "the"
        and after == "other"
        and spaced[i + 1 : i + 2] == [True]
        and words[i + 2] == "day"
    ):
        return i + 2
    if word == "may" and _NUMBER.fullmatch(after):
        return i + 1
    if _DAY_OF_MONTH.fullmatch(word) and after == "may":
        return i + 1
    if _YEAR.fullmatch(word) or _DATE.fullmatch(word):
        return i
    return None


def unit_time(lines: Sequence[str], start_line: int, first: int, last: int) -> str | None:
    """The :func:`time_expression` of one unit of a chunk: file lines ``first``–``last``
    of a chunk whose ``lines`` start at file line ``start_line``."""
    return time_expression("\n".join(lines[first - start_line : last - start_line + 1]))
