"""The dreaming config surface (defaults from the configuration reference) and schedules."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from engine.config.loader import ConfigError
from engine.memory.dreaming.config import DreamingSettings, load_dreaming_settings
from engine.memory.dreaming.schedule import ScheduleState, due_phases, next_run, zone_now


def _config(state_dir, dreaming: dict) -> None:
    doc = {"plugins": {"entries": {"memory-core": {"config": {"dreaming": dreaming}}}}}
    (state_dir / "openclaw.json").write_text(json.dumps(doc), encoding="utf-8")


def test_defaults_match_the_reference(make_settings):
    d = load_dreaming_settings(make_settings())
    assert (d.enabled, d.timezone, d.verbose_logging) == (True, None, False)
    assert (d.storage_mode, d.separate_reports, d.inline, d.separate) == (
        "inline",
        False,
        True,
        False,
    )
    assert (d.light.cron, d.light.lookback_days, d.light.limit, d.light.dedupe_similarity) == (
        "0 */6 * * *",
        2,
        100,
        0.9,
    )
    assert d.light.sources == ("daily", "sessions", "recall")
    deep = d.deep
    assert (deep.cron, deep.limit, deep.min_score, deep.min_recall_count) == (
        "0 3 * * *",
        10,
        0.8,
        3,
    )
    assert (deep.min_unique_queries, deep.recency_half_life_days, deep.max_age_days) == (3, 14, 30)
    assert deep.sources == ("daily", "memory", "sessions", "logs", "recall")
    r = deep.recovery
    assert (r.enabled, r.trigger_below_health, r.lookback_days) == (True, 0.35, 30)
    assert (r.max_recovered_candidates, r.min_recovery_confidence) == (20, 0.9)
    assert (r.auto_write_min_confidence, r.auto_write_configured) == (0.97, False)
    assert (d.rem.cron, d.rem.lookback_days, d.rem.limit, d.rem.min_pattern_strength) == (
        "0 5 * * 0",
        7,
        10,
        0.75,
    )
    assert d.rem.sources == ("memory", "daily", "deep")
    assert (d.execution.speed, d.execution.thinking, d.execution.budget) == (
        "balanced",
        "medium",
        "medium",
    )


def test_overrides_inherit_execution_and_flag_auto_write(make_settings, state_dir):
    _config(
        state_dir,
        {
            "timezone": "America/New_York",
            "storage": {"mode": "both"},
            "execution": {"defaults": {"speed": "fast", "temperature": 0.3}},
            "phases": {
                "light": {"cron": "0 */4 * * *", "lookbackDays": 3},
                "deep": {
                    "minScore": 0.85,
                    "recencyHalfLifeDays": 21,
                    "recovery": {"autoWriteMinConfidence": 0.99},
                    "execution": {"budget": "cheap"},
                },
                "rem": {"lookbackDays": 14, "enabled": False},
            },
        },
    )
    d = load_dreaming_settings(make_settings())
    assert d.timezone == "America/New_York" and d.inline and d.separate
    assert (d.light.cron, d.light.lookback_days) == ("0 */4 * * *", 3)
    assert (d.deep.min_score, d.deep.recency_half_life_days) == (0.85, 21)
    assert (
        d.deep.recovery.auto_write_configured and d.deep.recovery.auto_write_min_confidence == 0.99
    )
    assert (d.deep.execution.speed, d.deep.execution.budget, d.deep.execution.temperature) == (
        "fast",
        "cheap",
        0.3,
    )
    assert d.rem.enabled is False and d.rem.lookback_days == 14
    assert d.warnings == ()


@pytest.mark.parametrize(
    ("dreaming", "key", "fragment"),
    [
        ({"phases": {"deep": {"cron": "every night"}}}, "phases.deep.cron", "5-field cron"),
        ({"timezone": "Mars/Olympus"}, "dreaming.timezone", "unknown time zone"),
        ({"storage": {"mode": "cloud"}}, "storage.mode", 'one of "inline"'),
        ({"phases": {"light": {"sources": ["daily", "web"]}}}, "sources[1]", '"web"'),
        ({"phases": {"deep": {"minScore": "high"}}}, "phases.deep.minScore", "a number"),
    ],
)
def test_bad_values_name_the_key(make_settings, state_dir, dreaming, key, fragment):
    _config(state_dir, dreaming)
    with pytest.raises(ConfigError) as err:
        load_dreaming_settings(make_settings())
    assert key in str(err.value) and fragment in str(err.value)


def test_unknown_keys_and_clamps_are_warnings(make_settings, state_dir):
    _config(state_dir, {"phases": {"deep": {"minScroe": 0.5, "minScore": 1.5}}})
    d = load_dreaming_settings(make_settings())
    assert d.deep.min_score == 1.0
    text = " | ".join(d.warnings)
    assert 'did you mean "minScore"' in text and "out of range" in text


def test_schedule_due_phases_in_the_dreaming_zone(tmp_path):
    settings = DreamingSettings(timezone="America/New_York")
    tz = settings.tz
    # First look: 2026-03-31 02:30 New York. Nothing is due yet (anchor = first look).
    start = dt.datetime(2026, 3, 31, 2, 30, tzinfo=tz)
    state = ScheduleState.load(tmp_path / "s.json", start)
    assert due_phases(settings, state, start) == []
    # 03:00 New York: deep ("0 3 * * *") is due; light ran at 00:00 next at 06:00: not yet.
    at3 = dt.datetime(2026, 3, 31, 3, 0, tzinfo=tz)
    assert due_phases(settings, state, at3) == ["deep"]
    # The same instant expressed in UTC (07:00Z) gives the same answer.
    assert due_phases(settings, state, at3.astimezone(dt.UTC)) == ["deep"]
    state.mark("deep", at3)
    reloaded = ScheduleState.load(tmp_path / "s.json", at3)
    assert due_phases(settings, reloaded, at3) == []
    # 06:00: light. REM is weekly on Sunday 05:00: 2026-04-05 is a Sunday.
    assert due_phases(settings, reloaded, dt.datetime(2026, 3, 31, 6, 0, tzinfo=tz)) == ["light"]
    sunday = dt.datetime(2026, 4, 5, 5, 0, tzinfo=tz)
    assert next_run("0 5 * * 0", start) == sunday
    assert "rem" in due_phases(settings, reloaded, sunday)
    # A disabled dreaming block is never due.
    off = DreamingSettings(timezone="America/New_York", enabled=False)
    assert due_phases(off, reloaded, sunday) == []
    assert zone_now(settings, dt.datetime(2026, 3, 31, 12, 0, tzinfo=dt.UTC)).hour == 8
