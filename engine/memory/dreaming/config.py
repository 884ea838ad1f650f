"""``plugins.entries.memory-core.config.dreaming``: every documented key and default.

The keys and defaults are OpenClaw's (its memory configuration reference). Two
are interpreted more cautiously by memdeck, on purpose:

* ``phases.deep.recovery.autoWriteMinConfidence`` only lets a candidate into
  ``MEMORY.md`` without review when the user *wrote the key* in the config.
  Its documented default (0.97) is kept and shown, but an absent key means
  "every promotion is reviewed" (``auto_write_configured`` is False).
* ``execution`` blocks are validated and kept for display; memdeck's phases are
  deterministic and call no model, so speed/thinking/budget/model change nothing.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from typing import Any

from croniter import croniter

from engine.config.blocks import block_reader, settings_reader
from engine.config.reader import MISSING, ConfigError, ConfigReader
from engine.config.settings import Settings

ROOT = ("plugins", "entries", "memory-core", "config", "dreaming")
ROOT_WHERE = "plugins.entries.memory-core.config.dreaming"
STORAGE_MODES = ("inline", "separate", "both")
LIGHT_SOURCES = ("daily", "sessions", "recall")
DEEP_SOURCES = ("daily", "memory", "sessions", "logs", "recall")
REM_SOURCES = ("memory", "daily", "deep")
SPEEDS = ("fast", "balanced", "slow")
THINKING = ("low", "medium", "high")
BUDGETS = ("cheap", "medium", "expensive")

_EXECUTION_KEYS = dict.fromkeys(
    ("speed", "thinking", "budget", "model", "maxOutputTokens", "temperature", "timeoutMs")
)
_PHASE_COMMON = {"enabled": None, "cron": None, "sources": None, "execution": _EXECUTION_KEYS}
_KEYS: dict[str, Any] = {
    "enabled": None,
    "timezone": None,
    "verboseLogging": None,
    "storage": {"mode": None, "separateReports": None},
    "execution": {"defaults": _EXECUTION_KEYS},
    "phases": {
        "light": {**_PHASE_COMMON, "lookbackDays": None, "limit": None, "dedupeSimilarity": None},
        "deep": {
            **_PHASE_COMMON,
            "limit": None,
            "minScore": None,
            "minRecallCount": None,
            "minUniqueQueries": None,
            "recencyHalfLifeDays": None,
            "maxAgeDays": None,
            "recovery": {
                "enabled": None,
                "triggerBelowHealth": None,
                "lookbackDays": None,
                "maxRecoveredCandidates": None,
                "minRecoveryConfidence": None,
                "autoWriteMinConfidence": None,
            },
        },
        "rem": {
            **_PHASE_COMMON,
            "lookbackDays": None,
            "limit": None,
            "minPatternStrength": None,
        },
    },
}


@dataclass(frozen=True)
class ExecutionSettings:
    speed: str = "balanced"
    thinking: str = "medium"
    budget: str = "medium"
    model: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    timeout_ms: int | None = None


@dataclass(frozen=True)
class LightSettings:
    enabled: bool = True
    cron: str = "0 */6 * * *"
    lookback_days: int = 2
    limit: int = 100
    dedupe_similarity: float = 0.9
    sources: tuple[str, ...] = ("daily", "sessions", "recall")
    execution: ExecutionSettings = field(default_factory=ExecutionSettings)


@dataclass(frozen=True)
class RecoverySettings:
    enabled: bool = True
    trigger_below_health: float = 0.35
    lookback_days: int = 30
    max_recovered_candidates: int = 20
    min_recovery_confidence: float = 0.9
    auto_write_min_confidence: float = 0.97
    auto_write_configured: bool = False  # True only when the key is in the config


@dataclass(frozen=True)
class DeepSettings:
    enabled: bool = True
    cron: str = "0 3 * * *"
    limit: int = 10
    min_score: float = 0.8
    min_recall_count: int = 3
    min_unique_queries: int = 3
    recency_half_life_days: float = 14.0
    max_age_days: int = 30
    sources: tuple[str, ...] = ("daily", "memory", "sessions", "logs", "recall")
    recovery: RecoverySettings = field(default_factory=RecoverySettings)
    execution: ExecutionSettings = field(default_factory=ExecutionSettings)


@dataclass(frozen=True)
class RemSettings:
    enabled: bool = True
    cron: str = "0 5 * * 0"
    lookback_days: int = 7
    limit: int = 10
    min_pattern_strength: float = 0.75
    sources: tuple[str, ...] = ("memory", "daily", "deep")
    execution: ExecutionSettings = field(default_factory=ExecutionSettings)


@dataclass(frozen=True)
class DreamingSettings:
    enabled: bool = True
    timezone: str | None = None
    verbose_logging: bool = False
    storage_mode: str = "inline"
    separate_reports: bool = False
    light: LightSettings = field(default_factory=LightSettings)
    deep: DeepSettings = field(default_factory=DeepSettings)
    rem: RemSettings = field(default_factory=RemSettings)
    execution: ExecutionSettings = field(default_factory=ExecutionSettings)
    warnings: tuple[str, ...] = ()

    @property
    def tz(self) -> zoneinfo.ZoneInfo | None:
        """The configured zone, or None for the machine's local time."""
        return zoneinfo.ZoneInfo(self.timezone) if self.timezone else None

    @property
    def inline(self) -> bool:
        """Reports go into DREAMS.md."""
        return self.storage_mode in ("inline", "both")

    @property
    def separate(self) -> bool:
        """Reports also go to ``memory/dreaming/<phase>/YYYY-MM-DD.md``."""
        return self.storage_mode in ("separate", "both") or self.separate_reports


def load_dreaming_settings(settings: Settings) -> DreamingSettings:
    """Validate and resolve the dreaming block of ``settings.raw``.

    Wrong types, unknown choices, bad cron expressions and unknown time zones
    are :class:`ConfigError`\\ s naming the key; unknown keys and clamped
    numbers are warnings on the result.
    """
    root = settings_reader(settings)
    r = block_reader(root.obj(ROOT), _KEYS, ROOT_WHERE, root.ctx)
    ctx = r.ctx
    d = DreamingSettings()
    timezone = r.string(("timezone",))
    if timezone is not None:
        timezone = timezone.strip() or None
    if timezone is not None:
        try:
            zoneinfo.ZoneInfo(timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ctx.error(
                f"{ROOT_WHERE}.timezone",
                f'unknown time zone "{timezone}" (expected an IANA name such as '
                '"Europe/Paris" or "UTC")',
            ) from None
    defaults_exec = _execution(r, ("execution", "defaults"), ExecutionSettings())
    return DreamingSettings(
        enabled=r.boolean(("enabled",), d.enabled),
        timezone=timezone,
        verbose_logging=r.boolean(("verboseLogging",), d.verbose_logging),
        storage_mode=r.choice(("storage", "mode"), STORAGE_MODES, d.storage_mode),
        separate_reports=r.boolean(("storage", "separateReports"), d.separate_reports),
        light=_light(r, defaults_exec),
        deep=_deep(r, defaults_exec),
        rem=_rem(r, defaults_exec),
        execution=defaults_exec,
        warnings=tuple(ctx.warnings),
    )


def _cron(r: ConfigReader, keys: tuple[str, ...], default: str) -> str:
    text = r.string(keys)
    if text is None or not text.strip():
        return default
    text = " ".join(text.split())
    if len(text.split()) != 5 or not croniter.is_valid(text):
        raise r.ctx.error(
            r.where(keys),
            f'"{text}" is not a 5-field cron expression (minute hour day month weekday, '
            'e.g. "0 3 * * *")',
        )
    return text


def _sources(
    r: ConfigReader, keys: tuple[str, ...], options: tuple[str, ...], default: tuple[str, ...]
) -> tuple[str, ...]:
    if r.get(keys) is MISSING:
        return default
    return tuple(dict.fromkeys(r.strings(keys, options)))


def _execution(
    r: ConfigReader, keys: tuple[str, ...], base: ExecutionSettings
) -> ExecutionSettings:
    def optional_int(name: str, current: int | None) -> int | None:
        if r.get((*keys, name)) is MISSING:
            return current
        return r.integer((*keys, name), 0, lo=1)

    temperature = base.temperature
    if r.get((*keys, "temperature")) is not MISSING:
        temperature = r.number((*keys, "temperature"), 1.0, lo=0.0, hi=2.0)
    return ExecutionSettings(
        speed=r.choice((*keys, "speed"), SPEEDS, base.speed),
        thinking=r.choice((*keys, "thinking"), THINKING, base.thinking),
        budget=r.choice((*keys, "budget"), BUDGETS, base.budget),
        model=r.string((*keys, "model")) or base.model,
        max_output_tokens=optional_int("maxOutputTokens", base.max_output_tokens),
        temperature=temperature,
        timeout_ms=optional_int("timeoutMs", base.timeout_ms),
    )


def _light(r: ConfigReader, exec_defaults: ExecutionSettings) -> LightSettings:
    p = ("phases", "light")
    d = LightSettings()
    return LightSettings(
        enabled=r.boolean((*p, "enabled"), d.enabled),
        cron=_cron(r, (*p, "cron"), d.cron),
        lookback_days=r.integer((*p, "lookbackDays"), d.lookback_days, lo=0),
        limit=r.integer((*p, "limit"), d.limit, lo=0),
        dedupe_similarity=r.number((*p, "dedupeSimilarity"), d.dedupe_similarity, lo=0, hi=1),
        sources=_sources(r, (*p, "sources"), LIGHT_SOURCES, d.sources),
        execution=_execution(r, (*p, "execution"), exec_defaults),
    )


def _deep(r: ConfigReader, exec_defaults: ExecutionSettings) -> DeepSettings:
    p = ("phases", "deep")
    q = (*p, "recovery")
    d = DeepSettings()
    rd = RecoverySettings()
    auto_given = r.get((*q, "autoWriteMinConfidence")) is not MISSING
    recovery = RecoverySettings(
        enabled=r.boolean((*q, "enabled"), rd.enabled),
        trigger_below_health=r.number(
            (*q, "triggerBelowHealth"), rd.trigger_below_health, lo=0, hi=1
        ),
        lookback_days=r.integer((*q, "lookbackDays"), rd.lookback_days, lo=0),
        max_recovered_candidates=r.integer(
            (*q, "maxRecoveredCandidates"), rd.max_recovered_candidates, lo=0
        ),
        min_recovery_confidence=r.number(
            (*q, "minRecoveryConfidence"), rd.min_recovery_confidence, lo=0, hi=1
        ),
        auto_write_min_confidence=r.number(
            (*q, "autoWriteMinConfidence"), rd.auto_write_min_confidence, lo=0, hi=1
        ),
        auto_write_configured=auto_given,
    )
    return DeepSettings(
        enabled=r.boolean((*p, "enabled"), d.enabled),
        cron=_cron(r, (*p, "cron"), d.cron),
        limit=r.integer((*p, "limit"), d.limit, lo=0),
        min_score=r.number((*p, "minScore"), d.min_score, lo=0, hi=1),
        min_recall_count=r.integer((*p, "minRecallCount"), d.min_recall_count, lo=0),
        min_unique_queries=r.integer((*p, "minUniqueQueries"), d.min_unique_queries, lo=0),
        recency_half_life_days=r.number(
            (*p, "recencyHalfLifeDays"), d.recency_half_life_days, lo=0.001
        ),
        max_age_days=r.integer((*p, "maxAgeDays"), d.max_age_days, lo=1),
        sources=_sources(r, (*p, "sources"), DEEP_SOURCES, d.sources),
        recovery=recovery,
        execution=_execution(r, (*p, "execution"), exec_defaults),
    )


def _rem(r: ConfigReader, exec_defaults: ExecutionSettings) -> RemSettings:
    p = ("phases", "rem")
    d = RemSettings()
    return RemSettings(
        enabled=r.boolean((*p, "enabled"), d.enabled),
        cron=_cron(r, (*p, "cron"), d.cron),
        lookback_days=r.integer((*p, "lookbackDays"), d.lookback_days, lo=0),
        limit=r.integer((*p, "limit"), d.limit, lo=0),
        min_pattern_strength=r.number(
            (*p, "minPatternStrength"), d.min_pattern_strength, lo=0, hi=1
        ),
        sources=_sources(r, (*p, "sources"), REM_SOURCES, d.sources),
        execution=_execution(r, (*p, "execution"), exec_defaults),
    )


__all__ = [
    "ConfigError",
    "DeepSettings",
    "DreamingSettings",
    "ExecutionSettings",
    "LightSettings",
    "RecoverySettings",
    "RemSettings",
    "load_dreaming_settings",
]
