"""The search box: an ``Input`` whose typing repaints it, without a layout, and
whose editing keys keep their place among typed characters (``key_order``).

Textual's ``Input`` sets its virtual width to its text's width on every change,
and ``virtual_size`` asks for a layout of the screen when it changes: one
whole-screen reflow per typed character (profiled: a reflow arranges
every widget, and every scroll view on screen then repaints its scrollbar). The
box's size comes from the stylesheet (full width, 3 rows), never from its text,
and the virtual width is only read to scroll a long query sideways, which reads
the value itself. So here a new virtual width is stored and repainted, not laid
out.
"""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input

from tui.widgets.key_order import run_own_binding


class SearchInput(Input):
    """``Input`` whose text width never reflows the screen (its size is fixed by CSS)."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    async def _on_key(self, event: events.Key) -> None:
        if not await run_own_binding(self, event):  # in the order typed (key_order)
            await super()._on_key(event)
