"""Remappable keys: every memdeck ``Binding`` has an id, and the ``keymap`` object
in memdeck's settings file maps ids to new keys (``{"search.focus": "ctrl+l"}``).

The keymap is validated before it reaches ``App.set_keymap``: an unknown id, a
malformed key or a key that collides with another binding or with the editor's
own keys is reported (once, naming both) and ignored, so a remap never silently
disables a key. The same table drives the help screen, which therefore
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
    ("Everywhere", "ctrl+c", "Copy the selection in a text field; elsewhere quit (asks first)"),
    ("Memory tree", "↑ ↓ ← →", "Move; fold and unfold groups"),
    ("Memory tree", "space", "Fold or unfold the group under the cursor"),
    ("Editor", "ctrl+z / ctrl+y", "Undo / redo"),
    ("Editor", "escape", "Leave the editor (focus moves on)"),
    ("Editor", "ctrl+x / ctrl+c / ctrl+v", "Cut / copy / paste"),
    ("Editor", "ctrl+k / ctrl+u / ctrl+w", "Delete to line end / to line start / word left"),
    ("Results", "↑ ↓ pgup pgdn", "Move through results and dropped candidates"),
    ("Results", "enter", "Open the result in the editor at its line"),
)

#: Keys that act while a text field has focus whatever its widget would do with them.
_RESERVED_IN_TEXT = {
    "tab": "moving focus (tab)",
    "shift+tab": "moving focus (shift+tab)",
    "escape": "leaving the text field (escape)",
    "enter": "the text field's enter",
}
_NOT_PRINTABLE = {
    "escape", "enter", "tab", "backspace", "delete", "insert", "home", "end", "pageup",
    "pagedown", "up", "down", "left", "right",
}  # fmt: skip


@dataclass(frozen=True)
class KeySection:
    """A group of bindings and where its keys are live.

    ``screen`` is the screen the keys act on ("*" for the app's priority keys,
    which act on every screen and before any widget); ``widget`` marks bindings of
    a focusable widget, live only while it has focus (so two widgets' keys never
    meet); ``in_text_field`` marks keys that must act while a text field (the
    editor, the search box, the entry box) has focus, so they may neither be a
    key that field uses nor a key that types a character.
    """

    name: str
    source: type
    screen: str = "main"
    widget: bool = False
    in_text_field: bool = False

    def overlaps(self, other: KeySection) -> bool:
        if self.screen == "*" or other.screen == "*":
            return True
        if self.screen != other.screen:
            return False
        return self is other or not (self.widget and other.widget)


def text_field_keys() -> dict[str, str]:
    """key → what the editor or the search box does with it (never given away)."""
    from textual.widgets import Input, TextArea

    out: dict[str, str] = {}
    for owner, cls in (("editor", TextArea), ("search box", Input)):
        for b in bindings_of(cls):
            for key in _normalize_key_list(b.key).split(","):
                out.setdefault(key, f"the {owner}'s {b.description.lower()!r} key")
    for key, what in _RESERVED_IN_TEXT.items():
        out.setdefault(key, f"needed for {what}")
    return out


def is_printable(key: str) -> bool:
    """True when ``key`` types a character into a text field (no ctrl/alt, not F-keys)."""
    *mods, base = key.split("+")
    if any(m in ("ctrl", "alt", "super", "meta", "hyper") for m in mods):
        return False
    return base not in _NOT_PRINTABLE and not re.fullmatch(r"f\d{1,2}", base)


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
    keymap: Mapping[str, str], sections: Iterable[KeySection]
) -> tuple[dict[str, str], list[str]]:
    """The usable part of ``keymap`` and one problem string per rejected entry.

    Refused, each with a sentence naming both sides: unknown ids, malformed keys,
    a key another binding already uses where both are live (``search.fusion: f2``
    would leave mode switching without a key), and, for keys that act inside text
    fields, a key the editor or search box uses (``ctrl+k`` deletes a line) or a key
    that types a character. A refused entry keeps its default key.
    """
    sections = list(sections)
    section_of: dict[str, KeySection] = {}
    defaults: dict[str, str] = {}
    described: dict[str, str] = {}
    for section in sections:
        for b in bindings_of(section.source):
            if b.id and b.id not in section_of:
                section_of[b.id] = section
                defaults[b.id] = _normalize_key_list(b.key)
                described[b.id] = b.description or b.action
    problems: list[str] = []
    clean: dict[str, str] = {}
    for binding_id, keys in keymap.items():
        if binding_id not in section_of:
            problems.append(f"keymap: unknown binding id {binding_id!r}")
            continue
        error = validate_keys(keys)
        if error:
            problems.append(f"keymap.{binding_id}: {error}")
            continue
        clean[binding_id] = _normalize_key_list(",".join(p.strip() for p in keys.split(",")))
    in_text = text_field_keys()
    refused: dict[str, str] = {}
    while True:  # refusing one entry restores its default, which may collide anew
        effective = {**defaults, **clean}
        found: dict[str, str] = {}
        for binding_id, keys in clean.items():
            section = section_of[binding_id]
            kept = display_keys(defaults[binding_id])
            for key in keys.split(","):
                if section.in_text_field and key in in_text:
                    found[binding_id] = (
                        f"keymap.{binding_id}: {display_keys(key)} is {in_text[key]}; "
                        f"{binding_id} keeps {kept}"
                    )
                    break
                if section.in_text_field and re.fullmatch(r"alt\+.", key):
                    found[binding_id] = (
                        f"keymap.{binding_id}: {display_keys(key)} reaches the app as Esc "
                        f"then a character (alt+1 arrives as '¡'), so it would type; "
                        f"{binding_id} keeps {kept}"
                    )
                    break
                if section.in_text_field and is_printable(key):
                    found[binding_id] = (
                        f"keymap.{binding_id}: {display_keys(key)} would type into the editor "
                        f"and the search box, where {binding_id} must work; "
                        f"{binding_id} keeps {kept}"
                    )
                    break
                other = next(
                    (
                        other_id
                        for other_id, other_keys in effective.items()
                        if other_id != binding_id
                        and key in other_keys.split(",")
                        and section.overlaps(section_of[other_id])
                    ),
                    None,
                )
                if other is not None:
                    found[binding_id] = (
                        f"keymap.{binding_id}: {display_keys(key)} is already the key of "
                        f"{other} ({described[other]}); {binding_id} keeps {kept}"
                    )
                    break
        if not found:
            break
        for binding_id, problem in found.items():
            refused.setdefault(binding_id, problem)
            del clean[binding_id]
    problems.extend(refused.values())
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


def key_rows(sections: Iterable[KeySection], keymap: Mapping[str, str]) -> list[KeyRow]:
    """Every memdeck binding, with the key currently in force."""
    rows: list[KeyRow] = []
    for section in sections:
        for b in bindings_of(section.source):
            if b.id is None:
                continue
            keys = keymap.get(b.id, b.key)
            rows.append(KeyRow(section.name, b.id, display_keys(keys), b.description, b.tooltip))
    return rows


def all_ids(sections: Iterable[KeySection]) -> list[str]:
    return [b.id for s in sections for b in bindings_of(s.source) if b.id]
