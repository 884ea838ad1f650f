"""Remappable keys: every memdeck ``Binding`` has an id, and the ``keymap`` object
in memdeck's settings file maps ids to new keys (``{"search.focus": "ctrl+k"}``).

The keymap is validated before it reaches ``App.set_keymap``: an unknown id or a
malformed key is reported (once, with the id) and ignored, so a typo never
silently disables a key. The same table drives the help screen, which therefore
shows the keys actually in force.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from textual.binding import Binding
from textual.keys import _normalize_key_list, format_key

_KEY_RE = re.compile(r"^(?:(?:ctrl|alt|shift|super|meta|hyper)\+)*(?:[a-z0-9_]+|.)$")

#: Keys the stock widgets bring with them (not remappable here, listed in help).
BUILTIN_KEYS: tuple[tuple[str, str, str], ...] = (
    ("Everywhere", "tab / shift+tab", "Move focus to the next / previous widget"),
    ("Everywhere", "ctrl+c", "Copy the selection (ctrl+q quits)"),
    ("Memory tree", "↑ ↓ ← →", "Move; fold and unfold groups"),
    ("Memory tree", "space", "Fold or unfold the group under the cursor"),
    ("Editor", "ctrl+z / ctrl+y", "Undo / redo"),
    ("Editor", "escape", "Leave the editor (focus moves on; then / searches)"),
    ("Editor", "ctrl+x / ctrl+v", "Cut / paste"),
    ("Results", "↑ ↓ pgup pgdn", "Move through results and dropped candidates"),
    ("Results", "enter", "Open the result in the editor at its line"),
)


@dataclass(frozen=True)
class KeyRow:
    section: str
    binding_id: str
    keys: str
    description: str
    tooltip: str


def validate_keys(keys: str) -> str | None:
    """None if ``keys`` is a valid comma-separated key list, else what is wrong."""
    parts = [p.strip() for p in keys.split(",")]
    for part in parts:
        if not part:
            return "empty key in list"
        if not _KEY_RE.match(part.lower() if len(part) > 1 else part):
            return f"{part!r} is not a key (examples: 'ctrl+s', 'f2', 'slash', 'k')"
    return None


def validate_keymap(
    keymap: Mapping[str, str], known_ids: Iterable[str]
) -> tuple[dict[str, str], list[str]]:
    """The usable part of ``keymap`` and one problem string per rejected entry."""
    known = set(known_ids)
    clean: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, keys in keymap.items():
        if binding_id not in known:
            problems.append(f"keymap: unknown binding id {binding_id!r}")
            continue
        error = validate_keys(keys)
        if error:
            problems.append(f"keymap.{binding_id}: {error}")
            continue
        clean[binding_id] = _normalize_key_list(",".join(p.strip() for p in keys.split(",")))
    return clean, problems


def bindings_of(cls: type) -> list[Binding]:
    out: list[Binding] = []
    for b in getattr(cls, "BINDINGS", []):
        if isinstance(b, Binding):
            out.append(b)
    return out


def display_keys(keys: str) -> str:
    """'slash,ctrl+f' → '/ ctrl+f' for people."""
    shown = []
    for key in keys.split(","):
        *mods, base = key.strip().split("+")
        shown.append("+".join([*mods, format_key(base)]))
    return " ".join(shown)


def key_rows(sections: Iterable[tuple[str, type]], keymap: Mapping[str, str]) -> list[KeyRow]:
    """Every memdeck binding, with the key currently in force."""
    rows: list[KeyRow] = []
    for section, cls in sections:
        for b in bindings_of(cls):
            if b.id is None:
                continue
            keys = keymap.get(b.id, b.key)
            rows.append(KeyRow(section, b.id, display_keys(keys), b.description, b.tooltip))
    return rows


def all_ids(sections: Iterable[tuple[str, type]]) -> list[str]:
    return [b.id for _, cls in sections for b in bindings_of(cls) if b.id]
