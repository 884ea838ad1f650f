"""Dates of memory files, read from their names (pure, no I/O).

Daily logs are named ``YYYY-MM-DD``; a dated name is a better age than mtime.
Curated memory (``MEMORY.md`` and undated files under ``memory/``) is
evergreen and never decays.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["MONTH_NAMES", "WEEKDAY_NAMES", "date_from_path", "is_evergreen"]

#: the English names of the months and weekdays, in calendar order (``date.month - 1``,
#: ``date.weekday()``), lower case: how a query names a day
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")  # fmt: skip
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_DATE_IN_NAME_RE = re.compile(r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")


def _normalise_path(path: str) -> str:
    normalised = path.replace("\\", "/")
    while normalised.startswith("./"):
        normalised = normalised[2:]
    return normalised


def date_from_path(path: str) -> dt.date | None:
    """The first valid YYYY-MM-DD in the file's *name* (not its folders).

    Daily logs are named for the day they record, which is a better age than
    mtime (an edit to an old log must not make it "new"). Only the name is
    searched so that ``memory/2026-01-05/notes.md``-style folders do not date
    every file below them. Impossible dates are ignored, not errors.
    """
    name = _normalise_path(path).rsplit("/", 1)[-1]
    for match in _DATE_IN_NAME_RE.finditer(name):
        year, month, day = (int(part) for part in match.groups())
        try:
            return dt.date(year, month, day)
        except ValueError:
            continue
    return None


def is_evergreen(path: str) -> bool:
    """True for curated memory that must never lose rank with age.

    ``MEMORY.md``/``memory.md`` at the workspace root (exactly those names, as
    OpenClaw matches them) and undated files under ``memory/`` such as
    ``memory/gtd/NEXT.md`` are knowledge, not events. ``path`` is
    workspace-relative.
    """
    normalised = _normalise_path(path)
    if normalised in ("MEMORY.md", "memory.md"):
        return True
    return normalised.startswith("memory/") and date_from_path(normalised) is None
