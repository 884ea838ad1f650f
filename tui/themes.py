"""Theme files: colours are data in ``*.toml`` files, validated when the app starts.

A theme file that does not parse or names an unknown key must not stop the app
nor silently look wrong, so every problem is collected into one message (shown
as a single notification) and the app falls back to a built-in theme. The score
colours (``$score-vector``…) are custom theme variables: the app declares their
defaults in ``App.get_theme_variable_defaults`` so the stylesheet parses even
with a theme that does not set them.

memdeck's own themes are package data (``tui/theme_files/*.toml``), read through
``importlib.resources`` so that every kind of install carries them: a checkout, an
editable install and a wheel in site-packages alike.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import Theme

#: The bundled theme files, package data of ``tui`` (``tui/theme_files/``); users can
#: add their own in ``<memdeck home>/themes``.
BUNDLED_THEMES_DIR: Traversable = files("tui") / "theme_files"

DEFAULT_DARK = "memdeck-dark"
DEFAULT_LIGHT = "memdeck-light"
#: Used when the bundled theme files are missing or broken.
FALLBACK_DARK = "textual-dark"
FALLBACK_LIGHT = "textual-light"

_COLOR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "warning",
    "error",
    "success",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
_ALLOWED_KEYS = frozenset({"name", "dark", "variables", *_COLOR_KEYS})
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

#: Custom variables every theme gets; a theme file may override any of them.
SCORE_VARIABLES_DARK: dict[str, str] = {
    "score-final": "#e5c07b",
    "score-vector": "#61afef",
    "score-text": "#c678dd",
    "score-decay": "#56b6c2",
    "score-mmr": "#d19a66",
    "score-dropped": "#7f848e",
    "state-indexed": "#98c379",
    "state-dirty": "#e5c07b",
    "state-error": "#e06c75",
}
SCORE_VARIABLES_LIGHT: dict[str, str] = {
    "score-final": "#8a5a00",
    "score-vector": "#0057b7",
    "score-text": "#8e24aa",
    "score-decay": "#00796b",
    "score-mmr": "#b45309",
    "score-dropped": "#6b7280",
    "state-indexed": "#2e7d32",
    "state-dirty": "#a06800",
    "state-error": "#c0392b",
}
CUSTOM_VARIABLES = tuple(SCORE_VARIABLES_DARK)


class ThemeFileError(ValueError):
    """A theme file is unreadable or invalid; the message names the file and the key."""


@dataclass
class ThemeLoad:
    """The themes that loaded and what was wrong with the others."""

    themes: list[Theme] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return [t.name for t in self.themes]


def default_variables(dark: bool) -> dict[str, str]:
    return dict(SCORE_VARIABLES_DARK if dark else SCORE_VARIABLES_LIGHT)


def _check_color(path: Traversable, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(f"{path.name}: {key}: expected a colour string, got {value!r}")
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ThemeFileError(f"{path.name}: {key}: {value!r} is not a colour ({exc})") from None
    return value


def theme_from_mapping(data: Mapping[str, object], path: Traversable) -> Theme:
    """Validate one parsed theme file and build the Textual ``Theme``."""
    unknown = sorted(set(data) - _ALLOWED_KEYS)
    if unknown:
        raise ThemeFileError(
            f"{path.name}: unknown key(s) {', '.join(unknown)} "
            f"(allowed: {', '.join(sorted(_ALLOWED_KEYS))})"
        )
    name = data.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ThemeFileError(
            f"{path.name}: name: expected lowercase letters, digits, '-' or '_', got {name!r}"
        )
    if "primary" not in data:
        raise ThemeFileError(f"{path.name}: primary: required")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeFileError(f"{path.name}: dark: expected true or false, got {dark!r}")
    colors = {k: _check_color(path, k, data[k]) for k in _COLOR_KEYS if k in data}
    raw_vars = data.get("variables", {})
    if not isinstance(raw_vars, Mapping):
        raise ThemeFileError(f"{path.name}: variables: expected a table")
    variables = default_variables(dark)
    for key, value in raw_vars.items():
        if key in CUSTOM_VARIABLES:
            variables[key] = _check_color(path, f"variables.{key}", value)
        elif isinstance(value, str):
            variables[key] = value
        else:
            raise ThemeFileError(f"{path.name}: variables.{key}: expected a string")
    return Theme(name=name, dark=dark, variables=variables, **colors)  # type: ignore[arg-type]


def load_theme_file(path: Traversable) -> Theme:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ThemeFileError(f"{path.name}: cannot read ({exc.strerror or exc})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ThemeFileError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ThemeFileError(f"{path.name}: not valid TOML ({exc})") from None
    return theme_from_mapping(data, path)


def load_themes(dirs: Iterable[Traversable]) -> ThemeLoad:
    """Every ``*.toml`` theme in ``dirs`` (later folders override earlier names)."""
    result = ThemeLoad()
    by_name: dict[str, Theme] = {}
    for folder in dirs:
        if not folder.is_dir():
            continue
        toml_files = (p for p in folder.iterdir() if p.name.endswith(".toml") and p.is_file())
        for path in sorted(toml_files, key=lambda p: p.name):
            try:
                theme = load_theme_file(path)
            except ThemeFileError as exc:
                result.problems.append(str(exc))
                continue
            by_name[theme.name] = theme
    result.themes = list(by_name.values())
    return result


def theme_dirs(memdeck_home: Path | None) -> list[Traversable]:
    dirs: list[Traversable] = [BUNDLED_THEMES_DIR]
    if memdeck_home is not None:
        dirs.append(memdeck_home / "themes")
    return dirs


def choose_theme(requested: str | None, available: Iterable[str]) -> str:
    """The theme to start with: the requested one if it exists, else memdeck's dark
    theme, else Textual's own."""
    names = set(available)
    for name in (requested, DEFAULT_DARK):
        if name and name in names:
            return name
    return FALLBACK_DARK
