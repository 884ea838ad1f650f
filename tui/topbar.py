"""The top bar's fields and the order in which they give way on a narrow terminal.

The bar is one line. When its fields do not fit, whole fields drop out, the least
useful first (the file and chunk counts, then the provider's description), so a
field is never cut in the middle; only the fields that never give way (the name,
the index state, the workspace) are shortened with an ellipsis, and only when
they alone are wider than the terminal. Widths are terminal cells, not characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

#: give-way ranks (higher gives way first; 0 never does)
KEEP = 0
PROVIDER = 1
QMD = 1
COUNTS = 2


@dataclass(frozen=True)
class BarField:
    """One field of the bar: its text (with its leading separator), its Rich style,
    and its give-way rank."""

    text: str
    style: str = ""
    give_way: int = KEEP

    @property
    def cells(self) -> int:
        return cell_len(self.text)


def fit_fields(fields: Sequence[BarField], width: int) -> list[BarField]:
    """The fields that fit ``width`` cells, in their order: the highest give-way rank
    drops first, the rightmost of equal rank before the others."""
    kept = list(fields)
    while sum(f.cells for f in kept) > width:
        droppable = [i for i, f in enumerate(kept) if f.give_way != KEEP]
        if not droppable:
            break
        victim = max(droppable, key=lambda i: (kept[i].give_way, i))
        del kept[victim]
    return kept


def render_bar(fields: Sequence[BarField], width: int) -> Text:
    """The bar for a terminal ``width`` cells wide (see :func:`fit_fields`)."""
    bar = Text(no_wrap=True, overflow="ellipsis")
    for field in fit_fields(fields, width):
        bar.append(field.text, style=field.style)
    if bar.cell_len > width > 0:
        bar.truncate(width, overflow="ellipsis")
    return bar
