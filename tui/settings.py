"""The app's part of memdeck's own settings file: theme, keymap, layout.

The file (``<memdeck home>/settings.json``) is read once by
``engine.config.memdeck_settings``; this module validates the app's keys. A
broken file never stops the app: the defaults are used and the problems are
reported once, with the file name and the key.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import json5

from engine.config.memdeck_settings import (
    KNOWN_KEYS,
    SETTINGS_FILENAME,
    memdeck_settings_path,
    read_memdeck_settings,
)

PANES = ("tree", "editor", "search", "monitor")


@dataclass(frozen=True)
class Layout:
    tree_width: int = 34
    start_pane: str = "search"


@dataclass(frozen=True)
class UISettings:
    """What ``settings.json`` asked for, plus what was wrong with it."""

    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    layout: Layout = field(default_factory=Layout)
    path: Path | None = None
    problems: tuple[str, ...] = ()


def settings_path(env: Mapping[str, str] = os.environ) -> Path:
    return memdeck_settings_path(env)


def parse_settings(data: object, name: str = SETTINGS_FILENAME) -> UISettings:
    """Validate parsed settings; invalid entries are skipped and reported."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        return UISettings(problems=(f"{name}: expected an object at the top level",))
    for key in sorted(set(data) - set(KNOWN_KEYS)):
        problems.append(f"{name}: {key}: unknown key (known: {', '.join(KNOWN_KEYS)})")
    theme = data.get("theme")
    if theme is not None and not isinstance(theme, str):
        problems.append(f"{name}: theme: expected a theme name, got {theme!r}")
        theme = None
    keymap: dict[str, str] = {}
    raw_keymap = data.get("keymap", {})
    if not isinstance(raw_keymap, Mapping):
        problems.append(f"{name}: keymap: expected an object of binding id → keys")
    else:
        for binding_id, keys in raw_keymap.items():
            if not isinstance(keys, str) or not keys.strip():
                problems.append(f"{name}: keymap.{binding_id}: expected a key string like 'ctrl+s'")
                continue
            keymap[str(binding_id)] = keys.strip()
    layout = Layout()
    raw_layout = data.get("layout", {})
    if not isinstance(raw_layout, Mapping):
        problems.append(f"{name}: layout: expected an object")
    else:
        width = raw_layout.get("treeWidth", layout.tree_width)
        if not isinstance(width, int) or isinstance(width, bool) or not 16 <= width <= 80:
            problems.append(f"{name}: layout.treeWidth: expected an integer 16–80, got {width!r}")
            width = layout.tree_width
        pane = raw_layout.get("startPane", layout.start_pane)
        if pane not in PANES:
            problems.append(
                f"{name}: layout.startPane: expected one of {', '.join(PANES)}, got {pane!r}"
            )
            pane = layout.start_pane
        for key in sorted(set(raw_layout) - {"treeWidth", "startPane"}):
            problems.append(f"{name}: layout.{key}: unknown key")
        layout = Layout(tree_width=width, start_pane=pane)
    return UISettings(theme=theme, keymap=keymap, layout=layout, problems=tuple(problems))


def load_ui_settings(path: Path) -> UISettings:
    """Read ``path`` if it exists; a missing file is simply the defaults."""
    read = read_memdeck_settings(path)
    if not read.exists:
        return UISettings(path=path)
    if read.messages("file"):  # unreadable, not JSON5, not an object: all defaults
        return UISettings(path=path, problems=read.messages("file"))
    parsed = parse_settings(dict(read.ui), path.name)
    return UISettings(
        theme=parsed.theme,
        keymap=parsed.keymap,
        layout=parsed.layout,
        path=path,
        problems=read.messages("file", "ui") + parsed.problems,
    )


class SettingsWriteError(ValueError):
    """The settings file cannot be updated safely; the message says why."""


def save_theme(path: Path, theme: str) -> None:
    """Set ``theme`` in the settings file, changing nothing else in it.

    The file is JSON5 that people edit (comments, unquoted keys, trailing commas),
    so it is not re-serialised: the value of the top-level ``theme`` key is replaced
    in place, or a ``theme`` line is inserted after the opening brace. The result
    must parse to the old object with only ``theme`` changed, or nothing is
    written; the write is atomic (temporary file + rename), so a crash leaves the
    old file or the new one, never half of one.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsWriteError(f"{path}: cannot read ({exc})") from None
    literal = json.dumps(theme)
    if not raw.strip():
        new = "{\n  // set by memdeck when you pick a theme (ctrl+t or the palette)\n"
        new += f"  theme: {literal},\n}}\n"
    else:
        try:
            old = json5.loads(raw)
        except ValueError as exc:
            raise SettingsWriteError(f"{path}: not valid JSON5 ({exc}); theme not saved") from None
        if not isinstance(old, dict):
            raise SettingsWriteError(f"{path}: expected an object at the top level")
        span = _top_level_value_span(raw, "theme")
        if span is not None:
            new = raw[: span[0]] + literal + raw[span[1] :]
        else:
            brace = _top_level_brace(raw)
            rest = raw[brace + 1 :]
            sep = "" if rest.startswith(("\n", "\r\n")) else "\n  "
            new = raw[: brace + 1] + f"\n  theme: {literal}," + sep + rest
        try:
            same = json5.loads(new) == {**old, "theme": theme}
        except ValueError:
            same = False
        if not same:  # e.g. theme is not a plain string: never write a changed meaning
            raise SettingsWriteError(f"{path}: could not set theme without changing more")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _skip_space(text: str, i: int) -> int:
    """Index of the next character that is not whitespace or a comment."""
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        else:
            return i
    return i


def _string_end(text: str, i: int) -> int:
    """Index just past the string literal starting at ``text[i]`` (a quote)."""
    quote = text[i]
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    raise SettingsWriteError("unterminated string in the settings file")


def _top_level_brace(text: str) -> int:
    i = _skip_space(text, 0)
    if i >= len(text) or text[i] != "{":
        raise SettingsWriteError("the settings file does not start with '{'")
    return i


def _scalar_end(text: str, i: int) -> int:
    """End of the value starting at ``i`` when it is a scalar (string, number, word)."""
    if text[i] in "\"'":
        return _string_end(text, i)
    j = i
    while j < len(text) and text[j] not in ",}]\n/" and not text[j].isspace():
        j += 1
    return j


def _top_level_value_span(text: str, key: str) -> tuple[int, int] | None:
    """(start, end) of the scalar value of top-level ``key``; None when absent."""
    i = _top_level_brace(text) + 1
    depth = 1
    expect_key = True
    while i < len(text) and depth > 0:
        i = _skip_space(text, i)
        if i >= len(text):
            break
        c = text[i]
        if c in "\"'":
            end = _string_end(text, i)
            name = json5.loads(text[i:end])
            j = _skip_space(text, end)
            if depth == 1 and expect_key and j < len(text) and text[j] == ":":
                start = _skip_space(text, j + 1)
                if name == key:
                    return start, _scalar_end(text, start)
                i, expect_key = start, False
                continue
            i = end
        elif c in "{[":
            depth += 1
            i += 1
        elif c in "}]":
            depth -= 1
            i += 1
        elif c == ",":
            if depth == 1:
                expect_key = True
            i += 1
        elif c == ":":
            i += 1
        elif c.isalpha() or c in "_$":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            k = _skip_space(text, j)
            if depth == 1 and expect_key and k < len(text) and text[k] == ":":
                start = _skip_space(text, k + 1)
                if text[i:j] == key:
                    return start, _scalar_end(text, start)
                i, expect_key = start, False
                continue
            i = j
        else:
            i += 1
    return None
