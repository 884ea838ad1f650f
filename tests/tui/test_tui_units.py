"""The TUI's pure parts: toggles, theme files, settings, keymap, bars, file states."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config.settings import FUSIONS
from engine.index.store import FileRecord
from engine.search.model import SearchOptions
from engine.workspace.files import MemoryFile
from tui import toggles
from tui.format import bar_cells, short_path, signed_shift, stacked_bar
from tui.keymap import display_keys, validate_keymap, validate_keys
from tui.settings import load_ui_settings, parse_settings
from tui.themes import (
    BUNDLED_THEMES_DIR,
    CUSTOM_VARIABLES,
    ThemeFileError,
    choose_theme,
    load_theme_file,
    load_themes,
)
from tui.widgets.memory_tree import file_states


# -- toggles ---------------------------------------------------------------------
def test_mode_and_fusion_cycle_through_every_value() -> None:
    o = SearchOptions()
    seen = []
    for _ in range(3):
        seen.append(o.mode)
        o = toggles.cycle_mode(o)
    assert seen == ["hybrid", "fts", "vector"] and o.mode == "hybrid"
    o = SearchOptions(fusion=FUSIONS[0])
    visited = []
    for _ in FUSIONS:
        visited.append(o.fusion)
        o = toggles.cycle_fusion(o)
    assert visited == list(FUSIONS) and o.fusion == FUSIONS[0]


def test_weight_steps_land_on_tenths_and_stay_in_range() -> None:
    o = SearchOptions(vector_weight=0.7, text_weight=0.3)
    up = toggles.shift_weights(o, 0.1)
    assert (up.vector_weight, up.text_weight) == (0.8, 0.2)
    o2 = o
    for _ in range(12):
        o2 = toggles.shift_weights(o2, -0.1)
    assert (o2.vector_weight, o2.text_weight) == (0.0, 1.0)
    # Unnormalised weights (2, 2) are normalised first: 0.5 + 0.1.
    odd = toggles.shift_weights(SearchOptions(vector_weight=2, text_weight=2), 0.1)
    assert (odd.vector_weight, odd.text_weight) == (0.6, 0.4)


def test_toggle_descriptions() -> None:
    d = toggles.describe(SearchOptions(mmr_enabled=True, mmr_lambda=0.5, fusion="rrf"))
    assert d["mmr"] == "on λ=0.50"
    assert d["fusion"] == "rrf (k=60)"
    assert d["decay"] == "off"
    assert toggles.describe(toggles.toggle_decay(SearchOptions()))["decay"] == "on 30 d"


# -- bars and formatting -----------------------------------------------------------
def test_bar_cells_use_eighths() -> None:
    assert bar_cells(1.0, 4) == "████"
    assert bar_cells(0.0, 4) == "    "
    assert bar_cells(0.5, 4) == "██  "
    assert bar_cells(0.53125, 4) == "██▏ "  # 17/32 → 2 full + 1 eighth
    assert bar_cells(float("nan"), 3) == "   "
    assert bar_cells(7.0, 2) == "██"


def test_stacked_bar_segments_are_proportional() -> None:
    bar = stacked_bar([(0.5, "blue"), (0.25, "red")], 8)
    assert bar.plain == "██████  "
    spans = [(s.start, s.end, str(s.style)) for s in bar.spans if str(s.style)]
    assert spans == [(0, 4, "blue"), (4, 6, "red")]


def test_short_path_and_shift() -> None:
    home = Path("/home/u")
    assert short_path("/home/u/notes/MEMORY.md", home) == "~/notes/MEMORY.md"
    assert short_path("/elsewhere/x", home) == "/elsewhere/x"
    assert [signed_shift(2), signed_shift(-1), signed_shift(0)] == ["↑2", "↓1", "·"]


# -- theme files ---------------------------------------------------------------------
def test_bundled_themes_load_with_score_variables() -> None:
    loaded = load_themes([BUNDLED_THEMES_DIR])
    assert loaded.problems == []
    by_name = {t.name: t for t in loaded.themes}
    assert {"memdeck-dark", "memdeck-light"} <= set(by_name)
    assert by_name["memdeck-light"].dark is False
    for theme in by_name.values():
        assert set(CUSTOM_VARIABLES) <= set(theme.variables)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('name = "x"\nprimary = "#zzzzzz"\n', "primary: '#zzzzzz' is not a colour"),
        ('name = "x"\n', "primary: required"),
        ('name = "Bad Name"\nprimary = "#fff"\n', "name: expected lowercase"),
        ('name = "x"\nprimary = "#fff"\nsparkle = 1\n', "unknown key(s) sparkle"),
        (
            'name = "x"\nprimary = "#fff"\n[variables]\nscore-text = "nope"\n',
            "variables.score-text",
        ),
        ('name = "x"\nprimary = "#fff"\ndark = "yes"\n', "dark: expected true or false"),
        ("name = [unclosed\n", "not valid TOML"),
    ],
)
def test_bad_theme_files_are_rejected_with_the_key(tmp_path: Path, body: str, needle: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ThemeFileError) as err:
        load_theme_file(path)
    assert needle in str(err.value)
    assert str(err.value).startswith("t.toml:")


def test_load_themes_collects_problems_and_keeps_good_files(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('name = "good"\nprimary = "#123456"\n', encoding="utf-8")
    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe garbage")
    loaded = load_themes([tmp_path, tmp_path / "missing"])
    assert loaded.names() == ["good"]
    assert len(loaded.problems) == 1 and "bad.toml: not UTF-8" in loaded.problems[0]
    # defaults fill every custom variable the file did not set
    assert loaded.themes[0].variables["score-vector"]


def test_choose_theme_falls_back() -> None:
    assert choose_theme("memdeck-light", ["memdeck-light", "memdeck-dark"]) == "memdeck-light"
    assert choose_theme("nope", ["memdeck-dark"]) == "memdeck-dark"
    assert choose_theme(None, ["textual-dark"]) == "textual-dark"


# -- memdeck's own settings file ----------------------------------------------------------
def test_settings_file_json5(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(
        """{
          // comments are fine
          theme: "memdeck-light",
          keymap: {"search.focus": "ctrl+k"},
          layout: {treeWidth: 40, startPane: "monitor"},
        }""",
        encoding="utf-8",
    )
    s = load_ui_settings(path)
    assert s.problems == ()
    assert (s.theme, s.keymap, s.layout.tree_width, s.layout.start_pane) == (
        "memdeck-light",
        {"search.focus": "ctrl+k"},
        40,
        "monitor",
    )


def test_settings_problems_are_reported_and_defaults_kept(tmp_path: Path) -> None:
    s = parse_settings(
        {"theme": 3, "keymap": {"a": ""}, "layout": {"treeWidth": 3, "startPane": "x"}, "zz": 1}
    )
    text = "\n".join(s.problems)
    for needle in ("zz: unknown key", "theme: expected", "keymap.a", "treeWidth", "startPane"):
        assert needle in text
    assert s.layout.tree_width == 34 and s.layout.start_pane == "search" and s.theme is None
    broken = tmp_path / "settings.json"
    broken.write_text("{theme: ", encoding="utf-8")
    loaded = load_ui_settings(broken)
    assert loaded.problems and "JSON5 syntax error at line 1, column 9" in loaded.problems[0]
    assert load_ui_settings(tmp_path / "absent.json").problems == ()


# -- keymap ----------------------------------------------------------------------------
def test_keymap_validation() -> None:
    from tui.actions import key_sections

    clean, problems = validate_keymap(
        {"search.focus": "ctrl+l, f12", "nope.id": "x", "editor.save": "ctrl+"},
        key_sections(),
    )
    assert clean == {"search.focus": "ctrl+l,f12"}
    assert problems == [
        "keymap: unknown binding id 'nope.id'",
        "keymap.editor.save: 'ctrl+' is not a key (examples: 'ctrl+s', 'f2', 'slash', 'k')",
    ]
    assert validate_keys("f2") is None and validate_keys("a,,b") == "empty key in list"
    assert display_keys("slash,ctrl+f") == "/ ctrl+f"


# -- tree states ---------------------------------------------------------------------
def test_file_states_from_listing_and_index() -> None:
    def mf(rel: str, size: int = 10, mtime: float = 1.0, kind: str = "note") -> MemoryFile:
        return MemoryFile(rel, Path("/w") / rel, kind, size, mtime)

    def rec(path: str, size: int = 10, mtime: float = 1.0, chunks: int = 2, error=None):
        return FileRecord(path, "memory", "h", mtime, size, chunks, error)

    files = [
        mf("MEMORY.md", kind="memory"),
        mf("memory/2026-03-14.md", kind="daily"),
        mf("memory/a.md", size=11),
        mf("memory/bin.md"),
        mf("memory/latin1.md"),
    ]
    records = {
        "MEMORY.md": rec("MEMORY.md", chunks=3),
        "memory/a.md": rec("memory/a.md"),
        "memory/bin.md": rec("memory/bin.md", chunks=0, error="looks binary"),
        "memory/latin1.md": rec("memory/latin1.md", chunks=1, error="not valid UTF-8"),
    }
    got = {s.rel: (s.state, s.chunks) for s in file_states(files, records)}
    assert got == {
        "MEMORY.md": ("indexed", 3),
        "memory/2026-03-14.md": ("new", 0),
        "memory/a.md": ("dirty", 2),
        "memory/bin.md": ("error", 0),
        "memory/latin1.md": ("warning", 1),
    }


def test_weight_toggle_normalises_like_the_ranking() -> None:
    """The toggle starts from ``scoring.normalize_weights``: out-of-range weights clamp first."""
    from tui.toggles import shift_weights

    stepped = shift_weights(SearchOptions(vector_weight=3.0, text_weight=1.0), 0.1)
    assert (stepped.vector_weight, stepped.text_weight) == (0.6, 0.4)
    assert (
        shift_weights(SearchOptions(vector_weight=0.0, text_weight=0.0), 0.0).vector_weight == 0.7
    )


def test_the_store_section_is_the_engines_not_a_problem() -> None:
    """A workspace on PostgreSQL has ``store`` in settings.json: the app must not call
    it an unknown key (the engine validates it when it opens the store)."""
    parsed = parse_settings({"store": {"backend": "postgres", "namespace": "team"}, "zz": 1})
    assert parsed.problems == (
        "settings.json: zz: unknown key (known: theme, keymap, layout, profile, mcp, store)",
    )
