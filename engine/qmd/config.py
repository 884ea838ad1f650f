"""``memory.qmd.*``: the QMD backend's settings, read from ``Settings.raw``.

``engine.config.loader`` leaves this section to the qmd package (it only knows that
the key exists), so the defaults and the validation live next to the code that
uses them. The same reader as the rest of the config is used, so a bad value
gets the same precise error (file, key path, expectation, finding) and an
out-of-range number the same clamping-with-a-warning.

Durations (``update.interval``, ``update.embedInterval``) are OpenClaw-style
strings — ``"500ms"``, ``"30s"``, ``"5m"``, ``"1h"``, ``"1d"`` — or plain numbers
meaning minutes; ``0`` turns the schedule off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from engine.config import paths
from engine.config.blocks import block_reader, settings_reader
from engine.config.reader import MISSING, ConfigError, ConfigReader
from engine.config.settings import Settings

#: qmd's retrieval commands: BM25, vectors, or the structured query (expansion + rerank)
QmdSearchMode = Literal["search", "vsearch", "query"]
SEARCH_MODES: tuple[QmdSearchMode, ...] = get_args(QmdSearchMode)
SCOPE_ACTIONS = ("allow", "deny")
CHAT_TYPES = ("direct", "group", "channel")

_PATH_KEYS = dict.fromkeys(("name", "path", "pattern"))
_SCOPE_RULE_KEYS = {
    "action": None,
    "match": dict.fromkeys(("channel", "chatType", "keyPrefix", "rawKeyPrefix")),
}
_KNOWN: dict[str, Any] = {
    "command": None,
    "searchMode": None,
    "includeDefaultMemory": None,
    "paths": None,
    "sessions": dict.fromkeys(("enabled", "retentionDays", "exportDir")),
    "update": dict.fromkeys(
        (
            "interval",
            "debounceMs",
            "onBoot",
            "waitForBootSync",
            "embedInterval",
            "commandTimeoutMs",
            "updateTimeoutMs",
            "embedTimeoutMs",
        )
    ),
    "limits": dict.fromkeys(("maxResults", "maxSnippetChars", "maxInjectedChars", "timeoutMs")),
    "scope": {"default": None, "rules": None},
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.I)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True)
class QmdPath:
    """One extra collection: a folder (or file) and the glob qmd indexes in it."""

    path: Path
    pattern: str = "**/*.md"
    name: str | None = None


@dataclass(frozen=True)
class ScopeRule:
    action: str  # allow | deny
    channel: str | None = None
    chat_type: str | None = None
    key_prefix: str | None = None
    raw_key_prefix: str | None = None


@dataclass(frozen=True)
class ScopeSettings:
    """Which sessions may see QMD results. Default: direct chats only."""

    default: str = "deny"
    rules: tuple[ScopeRule, ...] = (ScopeRule("allow", chat_type="direct"),)


@dataclass(frozen=True)
class QmdSessions:
    enabled: bool = False
    retention_days: float | None = None
    export_dir: Path | None = None  # None = <qmd home>/sessions


@dataclass(frozen=True)
class QmdUpdate:
    interval_ms: int = 5 * 60_000
    debounce_ms: int = 15_000
    on_boot: bool = True
    wait_for_boot_sync: bool = False
    embed_interval_ms: int = 60 * 60_000
    command_timeout_ms: int = 30_000
    update_timeout_ms: int = 120_000
    embed_timeout_ms: int = 120_000


@dataclass(frozen=True)
class QmdLimits:
    max_results: int = 6
    max_snippet_chars: int = 700
    max_injected_chars: int = 4_000
    timeout_ms: int = 4_000


@dataclass(frozen=True)
class QmdSettings:
    command: str = "qmd"
    search_mode: QmdSearchMode = "search"
    include_default_memory: bool = True
    paths: tuple[QmdPath, ...] = ()
    sessions: QmdSessions = field(default_factory=QmdSessions)
    update: QmdUpdate = field(default_factory=QmdUpdate)
    limits: QmdLimits = field(default_factory=QmdLimits)
    scope: ScopeSettings = field(default_factory=ScopeSettings)
    warnings: tuple[str, ...] = ()


def parse_duration_ms(text: str | float | int) -> int:
    """``"5m"`` → 300000; a bare number is minutes (OpenClaw's default unit)."""
    if isinstance(text, bool):
        raise ValueError("expected a duration")
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError("a duration cannot be negative")
        return round(text * _UNIT_MS["m"])
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration like 500ms, 30s, 5m, 1h or 1d")
    return round(float(match[1]) * _UNIT_MS[(match[2] or "m").lower()])


def load_qmd_settings(settings: Settings, env: Mapping[str, str] = os.environ) -> QmdSettings:
    """Validate ``memory.qmd`` of *settings* (raises ConfigError, warns on the rest)."""
    root = settings_reader(settings, env)
    q = block_reader(root.obj(("memory", "qmd")), _KNOWN, "memory.qmd", root.ctx)
    d = QmdSettings()
    command = (q.string(("command",)) or d.command).strip() or d.command
    result = QmdSettings(
        command=command,
        search_mode=q.choice(("searchMode",), SEARCH_MODES, d.search_mode),
        include_default_memory=q.boolean(("includeDefaultMemory",), d.include_default_memory),
        paths=_paths(q, settings.workspace, env),
        sessions=_sessions(q, env),
        update=_update(q),
        limits=_limits(q),
        scope=_scope(q),
    )
    return replace(result, warnings=tuple(q.ctx.warnings))


def _resolve(text: str, workspace: Path, env: Mapping[str, str]) -> Path:
    """``~`` expanded; relative paths are workspace-relative, like extraPaths."""
    p = paths.expand_user(text.strip(), env)
    if not p.is_absolute():
        p = workspace / p
    return Path(os.path.normpath(p))


def _paths(q: ConfigReader, workspace: Path, env: Mapping[str, str]) -> tuple[QmdPath, ...]:
    raw = q.get(("paths",))
    if raw is MISSING:
        return ()
    where = q.where(("paths",))
    if not isinstance(raw, list):
        raise q.ctx.type_error(where, "an array of { path, name?, pattern? }", raw)
    out: list[QmdPath] = []
    for i, item in enumerate(raw):
        item_where = f"{where}[{i}]"
        if isinstance(item, str):
            item = {"path": item}
        if not isinstance(item, dict):
            raise q.ctx.type_error(item_where, "an object { path, name?, pattern? }", item)
        r = block_reader(item, _PATH_KEYS, item_where, q.ctx)
        text = r.string(("path",))
        if text is None or not text.strip():
            raise q.ctx.error(f"{item_where}.path", "expected a folder or file path, found nothing")
        name = r.string(("name",))
        if name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", name.strip()):
            raise q.ctx.error(
                f"{item_where}.name",
                f"expected a collection name of letters, digits, '-', '_' or '.', found {name!r}",
            )
        pattern = (r.string(("pattern",)) or "").strip() or "**/*.md"
        out.append(QmdPath(_resolve(text, workspace, env), pattern, name.strip() if name else None))
    return tuple(out)


def _sessions(q: ConfigReader, env: Mapping[str, str]) -> QmdSessions:
    retention: float | None = None
    if q.get(("sessions", "retentionDays")) is not MISSING:
        retention = q.number(("sessions", "retentionDays"), 0, lo=0)
    export = q.string(("sessions", "exportDir"))
    export_dir = None
    if export and export.strip():
        export_dir = Path(os.path.abspath(paths.expand_user(export.strip(), env)))
    return QmdSessions(
        enabled=q.boolean(("sessions", "enabled"), QmdSessions.enabled),
        retention_days=retention or None,
        export_dir=export_dir,
    )


def _duration(q: ConfigReader, keys: tuple[str, ...], default: int) -> int:
    value = q.get(keys)
    if value is MISSING:
        return default
    if isinstance(value, str):
        value = q.string(keys)
        if value is None:
            return default
    try:
        return parse_duration_ms(value)
    except (ValueError, TypeError) as exc:
        raise q.ctx.error(q.where(keys), str(exc)) from None


def _update(q: ConfigReader) -> QmdUpdate:
    d = QmdUpdate()
    k = "update"
    return QmdUpdate(
        interval_ms=_duration(q, (k, "interval"), d.interval_ms),
        debounce_ms=q.integer((k, "debounceMs"), d.debounce_ms, lo=0),
        on_boot=q.boolean((k, "onBoot"), d.on_boot),
        wait_for_boot_sync=q.boolean((k, "waitForBootSync"), d.wait_for_boot_sync),
        embed_interval_ms=_duration(q, (k, "embedInterval"), d.embed_interval_ms),
        command_timeout_ms=q.integer((k, "commandTimeoutMs"), d.command_timeout_ms, lo=100),
        update_timeout_ms=q.integer((k, "updateTimeoutMs"), d.update_timeout_ms, lo=100),
        embed_timeout_ms=q.integer((k, "embedTimeoutMs"), d.embed_timeout_ms, lo=100),
    )


def _limits(q: ConfigReader) -> QmdLimits:
    d = QmdLimits()
    return QmdLimits(
        max_results=q.integer(("limits", "maxResults"), d.max_results, lo=1, hi=100),
        max_snippet_chars=q.integer(("limits", "maxSnippetChars"), d.max_snippet_chars, lo=1),
        max_injected_chars=q.integer(("limits", "maxInjectedChars"), d.max_injected_chars, lo=1),
        timeout_ms=q.integer(("limits", "timeoutMs"), d.timeout_ms, lo=100),
    )


def _scope(q: ConfigReader) -> ScopeSettings:
    if q.get(("scope",)) is MISSING:
        return ScopeSettings()
    default = q.choice(("scope", "default"), SCOPE_ACTIONS, ScopeSettings.default)
    raw = q.get(("scope", "rules"))
    if raw is MISSING:
        return ScopeSettings(default=default, rules=())
    where = q.where(("scope", "rules"))
    if not isinstance(raw, list):
        raise q.ctx.type_error(where, "an array of { action, match }", raw)
    rules: list[ScopeRule] = []
    for i, item in enumerate(raw):
        item_where = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise q.ctx.type_error(item_where, "an object { action, match }", item)
        r = block_reader(item, _SCOPE_RULE_KEYS, item_where, q.ctx)
        action = r.choice(("action",), SCOPE_ACTIONS, "")
        if not action:
            raise q.ctx.error(f"{item_where}.action", 'expected "allow" or "deny", found nothing')
        chat = r.string(("match", "chatType"))
        if chat is not None and chat not in CHAT_TYPES:
            raise q.ctx.error(
                f"{item_where}.match.chatType",
                f'expected one of "direct", "group", "channel", found {chat!r}',
            )
        rules.append(
            ScopeRule(
                action=action,
                channel=_lower(r.string(("match", "channel"))),
                chat_type=chat,
                key_prefix=_lower(r.string(("match", "keyPrefix"))),
                raw_key_prefix=_lower(r.string(("match", "rawKeyPrefix"))),
            )
        )
    return ScopeSettings(default=default, rules=tuple(rules))


def _lower(text: str | None) -> str | None:
    return text.strip().lower() if text and text.strip() else None


__all__ = [
    "ConfigError",
    "QmdLimits",
    "QmdPath",
    "QmdSessions",
    "QmdSettings",
    "QmdUpdate",
    "ScopeRule",
    "ScopeSettings",
    "load_qmd_settings",
    "parse_duration_ms",
]
