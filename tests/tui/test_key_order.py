"""Keys that reach a text widget in one burst take effect in the order they came.

Each key is posted to the app without waiting for the one before, as a terminal
delivers a fast burst (a key macro, ssh): Textual 8's own ``Input`` applies the
letters first and the editing keys after (reported upstream,
Textualize/textual#6605). The search box and the editor run their own bindings in
order (``tui.widgets.key_order``).
"""

from __future__ import annotations

import asyncio

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import Input, TextArea

from tui.widgets.editor import BudgetArea
from tui.widgets.search_input import SearchInput


def _key(name: str) -> events.Key:
    return events.Key(name, name if len(name) == 1 else None)


class OneWidget(App[None]):
    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def _burst(widget: Widget, keys: list[str]) -> None:
    async def go() -> None:
        app = OneWidget(widget)
        async with app.run_test() as pilot:
            widget.focus()
            await pilot.pause()
            for name in keys:  # no wait between keys
                app.post_message(_key(name))
            await pilot.pause()
            await pilot.pause()

    asyncio.run(go())


BURSTS = [
    (["M", "i", "s", "a", "backspace", "o"], "Miso"),
    (["a", "b", "c", "ctrl+w", "d", "e", "f"], "def"),
    (["a", "b", "home", "c"], "cab"),
    (["a", "b", "left", "c"], "acb"),
]


@pytest.mark.parametrize(("keys", "expected"), BURSTS)
def test_the_search_box_applies_a_burst_in_order(keys: list[str], expected: str) -> None:
    box = SearchInput()
    _burst(box, keys)
    assert box.value == expected


@pytest.mark.parametrize(("keys", "expected"), BURSTS[:1] + BURSTS[3:])
def test_the_editor_applies_a_burst_in_order(keys: list[str], expected: str) -> None:
    area = BudgetArea()
    _burst(area, keys)
    assert area.text == expected


def test_textuals_own_input_reorders_a_burst() -> None:
    """The upstream behaviour the widgets above work around; when this fails, Textual
    has fixed it and ``key_order`` can go."""
    box, area = Input(), TextArea()
    _burst(box, BURSTS[0][0])
    _burst(area, BURSTS[0][0])
    assert box.value != "Miso" and area.text != "Miso"
