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

import re
from collections.abc import Sequence

#: a question about a time: how it starts
_WHEN_QUESTION = re.compile(
    r"\W*(?:when|since when|until when"
    r"|(?:what|which) (?:date|day|year|month|time|week|weekend)"
    r"|how long ago)\b",
    re.IGNORECASE,
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
#: May is left out: it is a verb too (it counts beside a number, below)
_MONTHS = "january|february|march|april|june|july|august|september|october|november|december"
_PERIODS = (
    f"week|weekend|month|year|night|morning|evening|summer|winter|spring|autumn|fall|{_WEEKDAYS}"
)
#: words that place something in time
_TIME_EXPRESSION = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recently|the other day|ago"
    rf"|(?:last|next|this|past) (?:{_PERIODS})"
    rf"|{_WEEKDAYS}|{_MONTHS}"
    r"|may \d{1,4}|\d{1,2}(?:st|nd|rd|th)? may"
    r"|(?:19|20)\d\d"
    r"|\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether ``query`` is a question about a time ("When did …", "What year …")."""
    return _WHEN_QUESTION.match(query) is not None


def time_expression(text: str) -> str | None:
    """The first words of ``text`` that place something in time, or None."""
    m = _TIME_EXPRESSION.search(text)
    return m.group(0) if m else None


def unit_times(
    chunk_text: str, start_line: int, first_lines: Sequence[int], last_lines: Sequence[int]
) -> tuple[str | None, ...]:
    """Per unit of a chunk (file lines ``first``–``last``; the chunk's first line is
    file line ``start_line``): its :func:`time_expression`, or None."""
    lines = chunk_text.split("\n")
    return tuple(
        time_expression("\n".join(lines[first - start_line : last - start_line + 1]))
        for first, last in zip(first_lines, last_lines, strict=True)
    )
