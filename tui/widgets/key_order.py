"""Keys that arrive together take effect in the order they were typed.

Textual 8's ``Input`` and ``TextArea`` insert a printable key in their own
``_on_key``, but a bound key (backspace, the arrows, ctrl+u, ctrl+w…) runs only
after its event has bubbled up to the app. Several keys read at once (fast
typing, a key macro, a slow ssh link) are therefore applied out of order:
"Misa", backspace, "o" became "Misa" (reported upstream, Textualize/textual#6605).
The text widgets here run their own non-priority bindings in ``_on_key`` instead,
which is where the app would have looked first anyway (the focused widget heads the
binding chain, and priority bindings never reach the widget), so what a key does is
unchanged; only its place in the sequence is kept.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget


async def run_own_binding(widget: Widget, event: events.Key) -> bool:
    """Run ``widget``'s own binding of ``event``'s key now, if it has one that
    handles it (True: the event is done)."""
    if event.is_printable:
        return False
    for binding in widget._bindings.key_to_bindings.get(event.key, ()):
        if binding.priority:
            continue
        if await widget.app.run_action(binding.action, widget):
            event.stop()
            event.prevent_default()
            return True
    return False
