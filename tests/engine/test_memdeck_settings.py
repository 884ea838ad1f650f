"""memdeck's own settings.json: one reader, one typed record, each part's policy.

The file is read and validated once (``engine.config.memdeck_settings``); the
MCP server and the PostgreSQL store refuse a mistake in their section, the
profile and the app carry on with defaults and list the problems.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config.memdeck_settings import (
    McpSection,
    StoreSection,
    load_memdeck_settings,
    read_memdeck_settings,
)
from engine.config.profile import resolve_profile
from engine.config.reader import ConfigError
from engine.index.pg_backend import load_store_backend
from engine.mcp.settings import load_mcp_settings
from tui.settings import load_ui_settings


def _home(tmp_path: Path, text: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(parents=True)
    (home / "settings.json").write_text(text, encoding="utf-8")
    return {"MEMDECK_HOME": str(home)}


def test_every_section_is_typed_from_one_read(tmp_path: Path) -> None:
    env = _home(
        tmp_path,
        """{
          // one file for every part
          profile: "openclaw",
          store: {backend: "postgres", dsnEnv: "TEAM_DSN", namespace: "team"},
          mcp: {allowAppend: true, token: "0123456789abcdef", allowedHosts: ["box:*"]},
          theme: "memdeck-light", layout: {treeWidth: 40},
        }""",
    )
    s = load_memdeck_settings(env)
    assert s.problems == ()
    assert s.profile == "openclaw"
    assert s.store == StoreSection("postgres", "TEAM_DSN", "team")
    assert s.mcp == McpSection(True, "0123456789abcdef", (), ("box:*",))
    assert dict(s.ui) == {"theme": "memdeck-light", "layout": {"treeWidth": 40}}
    assert resolve_profile(None, env) == ("openclaw", str(s.path))
    mcp = load_mcp_settings(env)
    assert (mcp.allow_append, mcp.token_source, mcp.allowed_hosts) == (
        True,
        str(s.path),
        ("box:*",),
    )
    selection = load_store_backend({**env, "TEAM_DSN": "postgresql://u:pw@h/db"})
    assert selection is not None and selection.namespace == "team"
    assert load_ui_settings(s.path).layout.tree_width == 40


def test_a_mistake_stops_its_own_part_only(tmp_path: Path) -> None:
    env = _home(tmp_path, '{mcp: {allowAppend: "yes"}, store: {backend: "mysql"}, zz: 1}')
    s = load_memdeck_settings(env)
    with pytest.raises(ConfigError, match=r"mcp\.allowAppend: expected true or false"):
        load_mcp_settings(env)
    with pytest.raises(ConfigError, match=r"store\.backend: expected 'sqlite' or 'postgres'"):
        load_store_backend(env)
    assert resolve_profile(None, env) == ("memdeck", "default")  # the profile is unaffected
    ui = load_ui_settings(s.path)
    assert any("zz: unknown key" in p for p in ui.problems)  # listed, never fatal
    assert s.problem("profile") is None


def test_an_unreadable_file_stops_mcp_and_store_and_the_app_lists_it(tmp_path: Path) -> None:
    env = _home(tmp_path, "{theme: ")
    for load in (load_mcp_settings, load_store_backend):
        with pytest.raises(ConfigError, match="JSON5 syntax error at line 1, column 9"):
            load(env)
    path = Path(env["MEMDECK_HOME"]) / "settings.json"
    assert "JSON5 syntax error" in load_ui_settings(path).problems[0]
    assert read_memdeck_settings(tmp_path / "absent.json").problems == ()


def test_a_short_token_is_refused_from_the_environment_as_from_the_file(tmp_path: Path) -> None:
    env = _home(tmp_path, "{}")
    with pytest.raises(ConfigError, match=r"\$MEMDECK_MCP_TOKEN is 1 characters; .* at least 16"):
        load_mcp_settings({**env, "MEMDECK_MCP_TOKEN": "x"})
    long = "a" * 16
    assert load_mcp_settings({**env, "MEMDECK_MCP_TOKEN": long}).token == long
    env = _home(tmp_path / "b", '{mcp: {token: "short"}}')
    with pytest.raises(ConfigError, match=r"mcp\.token: expected a string of at least 16"):
        load_mcp_settings(env)
