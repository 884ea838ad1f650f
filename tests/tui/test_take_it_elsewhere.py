"""The theme is remembered; a ranking leaves the app by clipboard or file."""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from engine.search.explain import formula
from tests.tui.conftest import NOW, drive, search, wait_for
from tui.export import anchor
from tui.screens.dialogs import ConfirmScreen, ExportScreen
from tui.settings import load_ui_settings, save_theme


def test_theme_chosen_with_ctrl_t_survives_a_restart(fts_engine, make_app, tmp_path) -> None:
    env = {"HOME": str(tmp_path), "MEMDECK_HOME": str(tmp_path / "mdh")}
    settings = tmp_path / "mdh" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        '// mine\n{\n  keymap: {"search.mode": "f12"},  // my keys\n'
        "  layout: {treeWidth: 30},\n}\n",
        encoding="utf-8",
    )
    first = make_app(fts_engine, ui_settings=load_ui_settings(settings), env=env)

    async def switch(pilot: Pilot) -> None:
        assert first.theme == "memdeck-dark"
        await pilot.press("ctrl+t")
        assert first.theme == "memdeck-light"

    drive(first, switch)
    text = settings.read_text(encoding="utf-8")
    assert "// my keys" in text and "// mine" in text  # the user's comments stay
    loaded = load_ui_settings(settings)
    assert loaded.theme == "memdeck-light" and loaded.problems == ()
    assert loaded.keymap == {"search.mode": "f12"} and loaded.layout.tree_width == 30

    second = make_app(fts_engine, ui_settings=loaded, env=env)

    async def check(pilot: Pilot) -> None:
        assert second.theme == "memdeck-light"
        second.set_theme("textual-dark")  # the palette's "Theme: …" entries call this
        await pilot.pause()

    drive(second, check)
    assert load_ui_settings(settings).theme == "textual-dark"
    assert list(settings.parent.iterdir()) == [settings]  # no temporary file left


def test_save_theme_replaces_only_the_theme(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(
        "{\n  keymap: {theme: 'x'},  // a key named theme, nested\n"
        "  /* theme: 'no' */ 'theme': 'gruvbox', layout: {treeWidth: 40,},\n}\n",
        encoding="utf-8",
    )
    save_theme(path, "nord")
    assert path.read_text(encoding="utf-8") == (
        "{\n  keymap: {theme: 'x'},  // a key named theme, nested\n"
        "  /* theme: 'no' */ 'theme': \"nord\", layout: {treeWidth: 40,},\n}\n"
    )
    path.write_text("{theme: ", encoding="utf-8")
    try:
        save_theme(path, "nord")
    except ValueError as exc:
        assert "not valid JSON5" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a broken settings file must not be rewritten")
    assert path.read_text(encoding="utf-8") == "{theme: "


def test_copy_result_breakdown_and_whynot(hybrid_engine, make_app) -> None:
    app = make_app(hybrid_engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "cat medication")
        pane = app.search_pane
        top = pane.outcome.results[0]
        await pilot.press("ctrl+o")
        clip = app.clipboard
        assert clip.startswith(f"{anchor(top)}\n\n{top.text.rstrip()}\n")
        assert formula(top) in clip  # the breakdown follows
        assert anchor(top) == f"{top.path}#L{top.start_line}-L{top.end_line}"
        await pilot.press("f8")  # the why-not list
        await pilot.pause()
        await pilot.press("ctrl+o")
        lines = app.clipboard.splitlines()
        dropped = pane.outcome.dropped
        assert dropped and len(lines) == 2 + len(dropped)
        assert lines[0].startswith(f"Why not: {len(dropped)} dropped for 'cat medication'")
        first = dropped[0]
        assert lines[2].startswith(f"{first.path}:{first.start_line}")
        assert lines[2].endswith(first.dropped)

    drive(app, go)


def test_export_asks_path_refuses_overwrite_and_memory_tree(
    hybrid_engine, make_app, tmp_path, monkeypatch, demo_dir
) -> None:
    out_dir = tmp_path / "exports"
    out_dir.mkdir()
    monkeypatch.chdir(out_dir)
    app = make_app(hybrid_engine)

    async def export_to(pilot: Pilot, name: str) -> None:
        await pilot.press("f10")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        box = app.screen.query_one("#export-path", Input)
        assert box.value.startswith("memdeck-ranking-cat-medication-20260315-")
        box.value = name
        await pilot.press("enter")
        await pilot.pause()

    async def go(pilot: Pilot) -> None:
        await search(pilot, "cat medication")
        outcome = app.search_pane.outcome
        await export_to(pilot, "ranking.md")
        md = (out_dir / "ranking.md").read_text(encoding="utf-8")
        assert md.startswith("# memdeck ranking for “cat medication”\n")
        for c in outcome.results:
            assert f"| {c.final_rank} | {c.score:.3f} |" in md
            assert f"`{anchor(c)}`" in md
        assert f"## Why not ({len(outcome.dropped)} dropped)" in md
        # JSON: memdeck search --json --explain's shape plus the query
        await export_to(pilot, str(out_dir / "ranking.json"))
        doc = json.loads((out_dir / "ranking.json").read_text(encoding="utf-8"))
        assert doc["query"] == "cat medication"
        assert doc["exported_at"] == NOW.isoformat(timespec="seconds")
        assert [r["path"] for r in doc["results"]] == [c.path for c in outcome.results]
        assert len(doc["explain"]["dropped"]) == len(outcome.dropped)
        # an existing file is not replaced without a yes
        (out_dir / "ranking.md").write_text("keep me", encoding="utf-8")
        await export_to(pilot, "ranking.md")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#no")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        assert (out_dir / "ranking.md").read_text(encoding="utf-8") == "keep me"
        # inside the memory tree only when asked
        target = demo_dir / "memory" / "ranking.md"
        await export_to(pilot, str(target))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#no")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        assert not target.exists()
        await export_to(pilot, str(target))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#yes")
        await wait_for(pilot, target.exists)

    drive(app, go)
