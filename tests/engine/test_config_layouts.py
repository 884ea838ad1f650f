"""Both memory-search layouts: the seed ``agents.defaults.memorySearch`` and
OpenClaw 2026.9's ``memory.search`` / ``agents.list[].memory.search``.

Precedence, the status line, 2026.9's defaults, ``enabled: false``,
``{path, pattern}`` extraPaths and the warning naming what OpenClaw 2026.9.6
would refuse. (tests/openclaw/test_config_parity.py proves the resolved values
against OpenClaw itself.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config.loader import ConfigError, load_settings
from engine.config.settings import Settings
from engine.core import Engine
from engine.openclaw.config import ExtraPathPattern
from engine.tools import memory_search
from engine.workspace.files import PathRefused, Workspace
from engine.workspace.globs import matches_glob


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir()
    return {"HOME": str(tmp_path / "home"), "OPENCLAW_STATE_DIR": str(tmp_path / "state")}


def load(tmp_path: Path, env: dict[str, str], config: dict, **kwargs) -> Settings:
    path = tmp_path / "openclaw.json"
    path.write_text(json.dumps(config))
    return load_settings(config_path=path, env=env, **kwargs)


def test_seed_layout_keeps_seed_defaults_and_is_named_as_refused(tmp_path, env):
    s = load(tmp_path, env, {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}})
    h = s.memory_search.query.hybrid
    assert s.config_layout.startswith("agents.defaults.memorySearch (seed layout")
    assert (h.mmr.enabled, h.temporal_decay.enabled) == (False, False)
    assert s.memory_search.provider == "none"
    assert len(s.openclaw_rejections) == 1
    assert "agents.defaults.memorySearch: moved to memory.search" in s.openclaw_rejections[0]
    assert "OpenClaw 2026.9.6 would refuse" in s.openclaw_rejections[0]
    assert s.warnings == ()


def test_memory_search_layout_uses_2026_9_defaults(tmp_path, env):
    s = load(tmp_path, env, {"memory": {"search": {"query": {"maxResults": 4}}}})
    ms = s.memory_search
    assert s.config_layout == "memory.search (OpenClaw 2026.9 layout)"
    assert ms.provider == "openai"  # 2026.9's default, not auto-detection
    assert ms.query.max_results == 4
    assert (ms.query.hybrid.mmr.enabled, ms.query.hybrid.temporal_decay.enabled) == (True, True)
    assert (ms.chunking.tokens, ms.chunking.overlap) == (400, 80)
    assert ms.multimodal.max_file_bytes == 10485760
    assert s.openclaw_rejections == () and s.warnings == ()


def test_both_layouts_memory_search_wins_and_seed_fills_missing_keys(tmp_path, env):
    config = {
        "agents": {
            "defaults": {
                "memorySearch": {"provider": "none", "query": {"maxResults": 3, "minScore": 0.1}}
            }
        },
        "memory": {"search": {"query": {"maxResults": 9}}},
    }
    s = load(tmp_path, env, config)
    assert s.config_layout.startswith("memory.search (OpenClaw 2026.9 layout); keys it leaves")
    assert s.memory_search.query.max_results == 9  # memory.search wins
    assert s.memory_search.query.min_score == 0.1  # filled from the seed block
    assert s.memory_search.provider == "none"  # filled: not replaced by 2026.9's openai


def test_agent_memory_search_overrides_shared_block(tmp_path, env):
    config = {
        "memory": {"search": {"provider": "none", "query": {"maxResults": 2}}},
        "agents": {"list": [{"id": "ops", "memory": {"search": {"query": {"maxResults": 7}}}}]},
    }
    assert load(tmp_path, env, config, agent_id="ops").memory_search.query.max_results == 7
    assert load(tmp_path, env, config).memory_search.query.max_results == 2


def test_retired_knobs_are_honoured_but_named_as_refused(tmp_path, env):
    config = {
        "memory": {
            "search": {
                "provider": "auto",
                "chunking": {"tokens": 200},
                "query": {"hybrid": {"vectorWeight": 0.5, "textWeight": 0.5}},
                "store": {"path": str(tmp_path / "x.sqlite")},
            }
        }
    }
    s = load(tmp_path, env, config)
    ms = s.memory_search
    assert ms.provider == "openai"
    assert ms.chunking.tokens == 200
    assert ms.query.hybrid.vector_weight == 0.5
    text = "\n".join(s.openclaw_rejections)
    assert 'memory.search.provider: "auto" is legacy' in text
    assert "memory.search.chunking: retired in 2026.9: chunking is fixed at 400/80" in text
    assert "memory.search.query.hybrid: retired in 2026.9" in text
    assert "memory.search.store.path: retired in 2026.9" in text


def test_memory_keys_2026_9_does_not_know_are_said(tmp_path, env):
    """2026.9.6's ``memory`` block takes ``citations`` and ``search`` only (its schema
    is strict): ``memory.backend``/``memory.qmd``, which memdeck still serves, and any
    other key are named as keys it would refuse."""
    config = {"memory": {"backend": "qmd", "qmd": {}, "citations": "on", "extra": 1}}
    s = load(tmp_path, env, config)
    text = "\n".join(s.openclaw_rejections)
    assert "memory.backend: the QMD backend was removed in 2026.8.1" in text
    assert "memory.qmd: the QMD backend was removed in 2026.8.1" in text
    assert "memory.extra: not a key of 2026.9's memory block" in text
    assert "memory.citations" not in text and len(s.openclaw_rejections) == 3


def test_wrong_types_in_memory_search_name_the_2026_9_path(tmp_path, env):
    with pytest.raises(ConfigError) as info:
        load(tmp_path, env, {"memory": {"search": {"query": {"maxResults": "many"}}}})
    assert "memory.search.query.maxResults: expected a number" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load(tmp_path, env, {"memory": {"search": {"extraPaths": [{"pattern": "*.md"}]}}})
    assert "memory.search.extraPaths[0]: expected a string or a {path, pattern} object" in str(
        info.value
    )


def test_enabled_false_disables_memory_search_and_get(tmp_path, env):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("tea\n")
    s = load(
        tmp_path,
        env,
        {"memory": {"search": {"enabled": False, "provider": "none"}}},
        workspace=ws,
    )
    assert s.memory_search.enabled is False
    engine = Engine(s, provider=None)
    try:
        result = memory_search(engine, "tea")
        assert result["error"] == "memory search is disabled (memory.search.enabled = false)"
        assert result["results"] == []
    finally:
        engine.close()


def test_extra_path_patterns_select_files(tmp_path, env):
    ws = tmp_path / "ws"
    (ws / "kb" / "projects").mkdir(parents=True)
    for name in ("kb/a.md", "kb/b.md", "kb/projects/p.md"):
        (ws / name).write_text("x\n")
    config = {
        "memory": {
            "search": {
                "provider": "none",
                "extraPaths": [
                    {"path": "kb", "pattern": "projects/**"},
                    {"path": "kb", "pattern": "a.md"},
                ],
            }
        }
    }
    s = load(tmp_path, env, config, workspace=ws)
    assert s.memory_search.extra_path_patterns == (
        ExtraPathPattern("kb", "projects/**"),
        ExtraPathPattern("kb", "a.md"),
    )
    workspace = Workspace(ws, s.memory_search.extra_paths, s.memory_search.extra_path_patterns)
    assert [f.rel for f in workspace.list_files()] == ["kb/a.md", "kb/projects/p.md"]
    with pytest.raises(PathRefused):
        workspace.resolve("kb/b.md")
    assert workspace.resolve("kb/a.md") == ws / "kb" / "a.md"
    # a plain entry for the same folder keeps every file
    plain = Workspace(ws, ["kb"], s.memory_search.extra_path_patterns)
    assert len(plain.list_files()) == 3


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("a.md", "*.md", True),
        ("x/a.md", "*.md", False),
        ("x/a.md", "**/*.md", True),
        ("a.md", "**/*.md", True),
        ("x/y/z.md", "x/**", True),
        (".hidden.md", "*.md", False),
        ("b.md", "{a,b}.md", True),
        ("c.md", "[ab].md", False),
        ("c.md", "[!ab].md", True),
        ("a1.md", "a?.md", True),
    ],
)
def test_globs(path: str, pattern: str, expected: bool) -> None:
    assert matches_glob(path, pattern) is expected


def test_status_names_the_layout(tmp_path, env):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = load(tmp_path, env, {"memory": {"search": {"provider": "none"}}}, workspace=ws)
    engine = Engine(s, provider=None)
    try:
        st = engine.status()
    finally:
        engine.close()
    assert st.config_layout == "memory.search (OpenClaw 2026.9 layout)"
    assert st.to_json()["config_layout"] == st.config_layout


def test_no_file_has_no_rejections(env):
    s = load_settings(env=env)
    assert s.openclaw_rejections == ()
    assert s.config_layout == "no memory search block; seed defaults"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{memory: {search: {provider: 5}}}", "memory.search.provider: expected a string"),
        (
            "{agents: {defaults: {memorySearch: {provider: 5}}}}",
            "agents.defaults.memorySearch.provider: expected a string",
        ),
    ],
)
def test_a_wrong_type_is_refused_in_both_layouts(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_settings(config_path=cfg, workspace=tmp_path, env={})


@pytest.mark.parametrize(
    "text",
    [
        "{memory: {search: {query: {maxResults: 1e30}}}}",
        "{agents: {defaults: {memorySearch: {query: {maxResults: 1e30}}}}}",
    ],
)
def test_a_huge_number_is_clamped_with_its_range_named(tmp_path: Path, text: str) -> None:
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(text, encoding="utf-8")
    settings = load_settings(config_path=cfg, workspace=tmp_path, env={})
    assert settings.memory_search.query.max_results == 50
    assert any("maxResults: 1e+30 is out of range (1–50); using 50" in w for w in settings.warnings)
