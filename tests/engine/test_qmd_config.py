"""memory.qmd.* settings, scope rules and the wanted collections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config.loader import ConfigError, load_settings
from engine.qmd.collections import DEFAULT_MEMORY, desired_collections
from engine.qmd.config import (
    QmdSettings,
    ScopeRule,
    ScopeSettings,
    load_qmd_settings,
    parse_duration_ms,
)
from engine.qmd.scope import check_scope, parse_session_key


def _load(tmp_path: Path, qmd: object, workspace: Path | None = None) -> QmdSettings:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    ws = workspace or tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    cfg = state / "openclaw.json"
    cfg.write_text(json.dumps({"memory": {"backend": "qmd", "qmd": qmd}}), encoding="utf-8")
    env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(tmp_path)}
    settings = load_settings(config_path=cfg, workspace=ws, env=env)
    assert settings.backend == "qmd"
    return load_qmd_settings(settings, env)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("5m", 300_000),
        ("30s", 30_000),
        ("500ms", 500),
        ("1h", 3_600_000),
        ("1.5s", 1500),
        ("2", 120_000),
        (2, 120_000),
        (0, 0),
        ("0", 0),
        ("1d", 86_400_000),
    ],
)
def test_durations(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("bad", ["5 minutes", "-1m", "m", ""])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration_ms(bad)


def test_defaults(tmp_path):
    qs = _load(tmp_path, {})
    assert qs == QmdSettings()
    assert (qs.command, qs.search_mode, qs.include_default_memory) == ("qmd", "search", True)
    assert qs.update.interval_ms == 300_000 and qs.update.debounce_ms == 15_000
    assert qs.update.on_boot and not qs.update.wait_for_boot_sync
    assert (qs.limits.max_results, qs.limits.timeout_ms) == (6, 4000)
    assert qs.scope.default == "deny"
    assert qs.scope.rules == (ScopeRule("allow", chat_type="direct"),)


def test_the_documented_full_example(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    qs = _load(
        tmp_path,
        {
            "includeDefaultMemory": True,
            "searchMode": "vsearch",
            "update": {
                "interval": "10m",
                "debounceMs": 500,
                "waitForBootSync": True,
                "embedInterval": "1h",
                "commandTimeoutMs": 2000,
                "updateTimeoutMs": 9000,
                "embedTimeoutMs": 60000,
            },
            "limits": {
                "maxResults": 3,
                "maxSnippetChars": 200,
                "maxInjectedChars": 500,
                "timeoutMs": 1500,
            },
            "scope": {
                "default": "deny",
                "rules": [
                    {"action": "allow", "match": {"chatType": "direct"}},
                    {"action": "allow", "match": {"keyPrefix": "Discord:Channel:42"}},
                ],
            },
            "paths": [{"name": "docs", "path": str(notes), "pattern": "**/*.md"}, "rel/dir"],
            "sessions": {"enabled": True, "retentionDays": 7},
        },
    )
    assert qs.search_mode == "vsearch"
    assert qs.update.interval_ms == 600_000 and qs.update.debounce_ms == 500
    assert qs.update.wait_for_boot_sync and qs.update.embed_interval_ms == 3_600_000
    assert (qs.update.command_timeout_ms, qs.update.update_timeout_ms) == (2000, 9000)
    assert qs.limits.max_results == 3 and qs.limits.max_injected_chars == 500
    assert qs.scope.rules[1].key_prefix == "discord:channel:42"  # lower-cased
    assert qs.paths[0].name == "docs" and qs.paths[0].path == notes
    assert qs.paths[1].path == tmp_path / "ws" / "rel" / "dir"  # workspace-relative
    assert qs.sessions.enabled and qs.sessions.retention_days == 7
    assert qs.warnings == ()


def test_bad_values_name_the_key(tmp_path):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, {"searchMode": "fuzzy"})
    assert info.value.key == "memory.qmd.searchMode"
    assert "search" in str(info.value) and "fuzzy" in str(info.value)
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, {"paths": [{"pattern": "*.md"}]})
    assert info.value.key == "memory.qmd.paths[0].path"
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, {"update": {"interval": "soon"}})
    assert info.value.key == "memory.qmd.update.interval"
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, {"scope": {"rules": [{"action": "allow", "match": {"chatType": "dm"}}]}})
    assert info.value.key == "memory.qmd.scope.rules[0].match.chatType"


def test_unknown_keys_and_clamped_numbers_warn(tmp_path):
    qs = _load(tmp_path, {"limitz": {}, "limits": {"maxResults": 1000, "timeoutMs": 5}})
    assert qs.limits.max_results == 100 and qs.limits.timeout_ms == 100
    text = "\n".join(qs.warnings)
    assert "memory.qmd.limitz" in text and "limits" in text  # suggestion
    assert "memory.qmd.limits.maxResults" in text


@pytest.mark.parametrize(
    ("key", "chat_type", "channel", "normalized"),
    [
        (None, "direct", None, ""),
        ("agent:main:main", "direct", None, "main"),
        ("agent:main:telegram:group:123", "group", "telegram", "telegram:group:123"),
        ("agent:ops:discord:channel:42", "channel", "discord", "discord:channel:42"),
        ("agent:main:whatsapp:direct:+1555", "direct", "whatsapp", "whatsapp:direct:+1555"),
        ("Slack:DM:U1", "direct", "slack", "slack:dm:u1"),
    ],
)
def test_session_keys(key, chat_type, channel, normalized):
    s = parse_session_key(key)
    assert (s.chat_type, s.channel, s.key) == (chat_type, channel, normalized)


def test_default_scope_allows_direct_only():
    scope = ScopeSettings()
    assert check_scope(scope, None).allowed
    assert check_scope(scope, "agent:main:main").allowed
    denied = check_scope(scope, "agent:main:telegram:group:123")
    assert not denied.allowed
    assert "chatType group" in denied.reason and "default deny" in denied.reason


def test_first_matching_rule_wins_with_every_field():
    scope = ScopeSettings(
        default="allow",
        rules=(
            ScopeRule(
                "deny", channel="discord", chat_type="channel", key_prefix="discord:channel:9"
            ),
            ScopeRule("allow", raw_key_prefix="agent:ops:"),
            ScopeRule("deny", chat_type="group"),
        ),
    )
    assert not check_scope(scope, "agent:main:discord:channel:99").allowed
    assert check_scope(scope, "agent:main:discord:channel:12").allowed  # prefix differs
    assert check_scope(scope, "agent:ops:telegram:group:1").allowed  # rule 1 before rule 2
    assert not check_scope(scope, "agent:main:telegram:group:1").allowed
    assert "rule 2 says deny" in check_scope(scope, "agent:main:telegram:group:1").reason


def test_desired_collections(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    notes = tmp_path / "My Notes"
    notes.mkdir()
    single = tmp_path / "one.md"
    single.write_text("x", encoding="utf-8")
    qs = _load(
        tmp_path,
        {
            "paths": [
                {"path": str(notes)},
                {"path": str(single)},
                {"path": str(tmp_path / "missing")},
                {"path": str(notes), "name": "again"},  # same folder and pattern: skipped
                {"path": str(tmp_path), "name": "memory-root", "pattern": "*.txt"},  # name taken
            ]
        },
        workspace=ws,
    )
    sessions = tmp_path / "export"
    colls, warnings = desired_collections(qs, ws, sessions)
    got = [(c.name, c.path, c.pattern, c.kind) for c in colls]
    assert got[:3] == [(n, ws, p, "memory") for n, p in DEFAULT_MEMORY]
    assert got[3:] == [
        ("sessions", sessions, "**/*.md", "sessions"),
        ("my-notes", notes, "**/*.md", "path"),
        ("one", tmp_path, "one.md", "path"),
        ("memory-root-2", tmp_path, "*.txt", "path"),
    ]
    text = "\n".join(warnings)
    assert "paths[2]" in text and "does not exist" in text
    assert "paths[3]" in text and "already a collection" in text
    assert "'memory-root' is taken" in text


def test_no_default_memory_and_missing_workspace(tmp_path):
    qs = _load(tmp_path, {"includeDefaultMemory": False})
    assert desired_collections(qs, tmp_path / "ws", None) == ([], [])
    qs = _load(tmp_path, {})
    colls, warnings = desired_collections(qs, tmp_path / "nope", None)
    assert colls == [] and "does not exist" in warnings[0]
