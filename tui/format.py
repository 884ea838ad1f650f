"""Small renderers shared by the panes: score bars, numbers, paths, times.

Colours come from the theme variables (``$score-vector``…) resolved by the
caller, so a theme file changes the bars exactly as it changes the stylesheet.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.text import Text

from engine.search.scoring import ScoreParts

_EIGHTHS = " ▏▎▍▌▋▊▉"
FULL = "█"


def bar_cells(fraction: float, width: int) -> str:
    """A left-aligned bar of ``width`` cells, with eighth-cell resolution."""
    fraction = 0.0 if not math.isfinite(fraction) else min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    text = FULL * full
    if rest and full < width:
        text += _EIGHTHS[rest]
    return text.ljust(width)


def stacked_bar(parts: Sequence[tuple[float, str]], width: int, track: str = "") -> Text:
    """Consecutive coloured segments whose lengths are the ``parts`` values (0..1 of
    the whole width); used to draw a score as the sum of its weighted parts."""
    out = Text()
    used = 0
    acc = 0.0
    for value, style in parts:
        if not math.isfinite(value):
            continue
        # a negative part (a negative cosine's term) shortens what follows, so the
        # bar is always as long as the parts' sum
        acc += value
        end = min(width, round(acc * width))
        if end > used:
            out.append(FULL * (end - used), style=style)
            used = end
    if used < width:
        out.append("·" * (width - used) if track else " " * (width - used), style=track)
    return out


#: cells of a score bar (a score of 1.0 fills them)
SCORE_BAR = 8


#: the style of a score bar's name segment (the calibrated fusion's name signal)
NAME_STYLE = "bold"


def score_bar(
    parts: ScoreParts, s_vec: str, s_text: str, width: int = SCORE_BAR, s_name: str = NAME_STYLE
) -> Text:
    """A score as a bar of its ``ScoreParts`` segments: the geometric floor (dim),
    the vector side, the text side, the name signal; as long as the score, since
    they sum to it."""
    return stacked_bar(
        [
            (parts.bar_floor, "dim"),
            (parts.bar_vector, s_vec),
            (parts.bar_text, s_text),
            (parts.bar_name, s_name),
        ],
        width,
        track="dim",
    )


def num(value: float | None, digits: int = 3, none: str = "–") -> str:
    if value is None:
        return none
    if not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}f}"


def signed_shift(shift: int) -> str:
    if shift > 0:
        return f"↑{shift}"
    if shift < 0:
        return f"↓{-shift}"
    return "·"


def short_path(path: str | Path | None, home: Path | None) -> str:
    """``~/…`` for paths under ``home`` (the user's home, or a test's temp dir)."""
    if path is None:
        return "–"
    p = Path(path)
    if home is not None:
        try:
            rel = p.relative_to(home)
        except ValueError:
            return str(p)
        return "~" if str(rel) == "." else f"~/{rel.as_posix()}"
    return str(p)


def location(path: str, start: int, end: int) -> str:
    return f"{path}:{start}" if start == end else f"{path}:{start}-{end}"


def ago(then: float | None, now: float) -> str:
    """'12 s ago', '3 min ago', '2 h ago' — relative to the app's clock."""
    if then is None:
        return "never"
    delta = max(0.0, now - then)
    if delta < 60:
        return f"{delta:.0f} s ago"
    if delta < 3600:
        return f"{delta / 60:.0f} min ago"
    if delta < 86400:
        return f"{delta / 3600:.1f} h ago"
    return f"{delta / 86400:.1f} d ago"


def clock_time(ts: float | None, tz: dt.tzinfo | None = None) -> str:
    if ts is None:
        return "–"
    return dt.datetime.fromtimestamp(ts, tz).strftime("%H:%M:%S")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def style_of(variables: Mapping[str, str], name: str, fallback: str = "") -> str:
    """A Rich style string for a theme variable (``score-vector`` → its colour)."""
    value = variables.get(name)
    if not value:
        return fallback
    return value.split()[0]
