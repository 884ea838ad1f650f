"""memdeck's own settings (theme, keymap, layout), kept apart from ``openclaw.json``.

OpenClaw validates its config strictly, so UI preferences live in
``<memdeck home>/settings.json`` (JSON5: comments and trailing commas allowed).
A broken file never stops the app: the defaults are used and the problems are
reported once, with the file name and the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import json5

from engine.config.paths import memdeck_home

SETTINGS_FILENAME = "settings.json"
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
    return memdeck_home(env) / SETTINGS_FILENAME


def parse_settings(data: object, name: str = SETTINGS_FILENAME) -> UISettings:
    """Validate parsed settings; invalid entries are skipped and reported."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        return UISettings(problems=(f"{name}: expected an object at the top level",))
    known = {"theme", "keymap", "layout"}
    for key in sorted(set(data) - known):
        problems.append(f"{name}: {key}: unknown key (known: theme, keymap, layout)")
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
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return UISettings(path=path)
    except OSError as exc:
        return UISettings(path=path, problems=(f"{path}: cannot read ({exc.strerror or exc})",))
    try:
        data = json5.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return UISettings(path=path, problems=(f"{path}: not UTF-8 text (byte {exc.start})",))
    except ValueError as exc:
        return UISettings(path=path, problems=(f"{path}: not valid JSON5 ({exc})",))
    parsed = parse_settings(data, path.name)
    return UISettings(
        theme=parsed.theme,
        keymap=parsed.keymap,
        layout=parsed.layout,
        path=path,
        problems=parsed.problems,
    )
