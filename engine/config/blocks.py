"""Typed readers over blocks of ``openclaw.json`` for the feature modules.

``engine.config.reader`` owns the reader and its rules (errors name the file and the
dotted key, unknown keys are warnings, null means unset). The compaction flush,
dreaming and QMD settings each read their own block of ``settings.raw`` after
that; these helpers are the one way they open a reader on it, so every block
reports against the same file and collects warnings the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.config.reader import ConfigContext, ConfigReader, warn_unknown
from engine.config.settings import Settings


def settings_reader(settings: Settings, env: Mapping[str, str] = os.environ) -> ConfigReader:
    """A reader over the whole raw config; its errors name ``settings.config_path`` and
    relative paths resolve beside that file (or the working directory without one)."""
    file = settings.config_path
    ctx = ConfigContext(file=file, base_dir=file.parent if file else Path.cwd(), env=env)
    return ConfigReader(settings.raw if isinstance(settings.raw, dict) else {}, {(): ""}, ctx)


def block_reader(data: Any, known: dict[str, Any], where: str, ctx: ConfigContext) -> ConfigReader:
    """A reader rooted at ``data``, the object found at dotted ``where``; keys that
    ``known`` does not list become warnings on ``ctx``."""
    warn_unknown(data, known, where, ctx)
    return ConfigReader(data, {(): where}, ctx)


__all__ = ["block_reader", "settings_reader"]
