"""Monitor, help, command palette, themes, keymap and shutdown, driven by Pilot."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Label, ProgressBar, RichLog, Sparkline, Static

from engine.events import FileError, SearchTimed, SyncDone, SyncProgress, SyncStarted
from engine.index.sync_service import SyncService
from engine.qmd.backend import QmdBackend
from engine.qmd.config import QmdSettings
from engine.status import EngineStatus
from tests.engine.test_qmd_runner import script
from tests.tui.conftest import SIZE, drive, ready, search, wait_for
from tui.actions import key_sections
from tui.keymap import all_ids
from tui.screens.help import HelpScreen
from tui.settings import UISettings
from tui.themes import BUNDLED_THEMES_DIR


def plain(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_monitor_shows_index_facts_and_live_progress(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("escape", "4")
        monitor = app.monitor
        facts = plain(monitor.query_one("#monitor-facts", Static).content)
        st = fts_engine.status()
        assert "provider   none  (FTS-only)" in facts
        assert f"{st.files} indexed / {st.files_on_disk} on disk" in facts
        assert f"binding    {st.binding} · SQLite {st.sqlite_version}" in facts
        assert "~/state/memory/main.memdeck.sqlite" in facts
        assert "fts5 (unicode61)" in facts
        assert "not in use (memory.backend = builtin)" in plain(
            monitor.query_one("#monitor-qmd", Static).content
        )
        # events from a worker thread reach the widgets through messages
        bus = fts_engine.bus
        done = threading.Event()

        def publish() -> None:
            bus.publish(SyncStarted(reason="reindex", full=True))
            bus.publish(
                SyncProgress(
                    "embed",
                    3,
                    10,
                    250,
                    1000,
                    cache_hits=40,
                    rate=125.0,
                    eta_seconds=6.0,
                    kb_per_s=12.5,
                )
            )
            bus.publish(FileError("memory/bad.md", "looks binary (NUL bytes), not indexed"))
            bus.publish(SearchTimed("x", "fts", 12.5))
            bus.publish(SearchTimed("y", "fts", 30.0))
            done.set()

        threading.Thread(target=publish).start()
        await wait_for(pilot, done.is_set)
        await wait_for(pilot, lambda: monitor.progress is not None and len(monitor.search_ms))
        await wait_for(pilot, lambda: len(monitor.search_ms) == 2)
        bar = monitor.query_one("#monitor-progress", ProgressBar)
        assert (bar.total, bar.progress) == (1000, 250)
        label = str(monitor.query_one("#monitor-progress-label", Label).content)
        assert label == (
            "embedding 250/1000 chunks · 125 chunks/s · 12.5 KB/s · ETA 6.0 s · 40 cache hits"
        )
        assert monitor.query_one("#spark-search", Sparkline).data == [12.5, 30.0]
        errors = monitor.query_one("#monitor-errors", RichLog)
        assert any("memory/bad.md: looks binary" in line.text for line in errors.lines)
        assert "⟳ syncing" in plain(app.query_one("#topbar", Static).content)
        bus.publish(SyncDone("reindex", True, 10, 0, 1000, 40, 2.5, at=1_700_000_000.0))
        await wait_for(pilot, lambda: monitor.progress is None and monitor.sync_durations)
        assert list(monitor.sync_durations) == [2.5]
        assert (bar.total, bar.progress) == (1, 1)

    drive(app, go)


def test_monitor_shows_qmd_backend_and_fallback(fts_engine, make_app, tmp_path) -> None:
    """The qmd block is drawn from a real ``QmdStatus``: a renamed field fails here."""
    failing = script(tmp_path, "qmd-failing", 'echo "qmd: disk on fire" >&2; exit 3\n')
    backend = QmdBackend(
        fts_engine.settings,
        fts_engine.workspace,
        qmd_settings=QmdSettings(command=str(failing)),
        embed_model=None,
    )
    assert backend.refresh("manual") is False  # the real failure path records the fallback
    fts_engine.qmd = backend
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        status = fts_engine.status()
        assert status.qmd is not None and status.fallback == "builtin"
        app.monitor.show_status(status)
        text = plain(app.monitor.query_one("#monitor-qmd", Static).content)
        assert f"serving from builtin: {status.fallback_reason}" in text
        assert "qmd: disk on fire" in text
        assert f"{failing} · mode search" in text
        assert "0 (0 fell back)" in text
        names = [c.name for c in status.qmd.collections]
        assert names and all(name in text for name in names)
        step = status.qmd.last_update
        assert step is not None and step.ok is False
        clock = step.at.split("T")[-1]
        assert f"{clock} · failed · 0.00 s · manual: " in text  # read as a person reads it
        assert "duration_s" not in text and "at=" not in text
        assert "last embed    not yet" in text

    try:
        drive(app, go)
    finally:
        fts_engine.qmd = None
        backend.close()


def test_help_lists_every_key_with_remaps(fts_engine, make_app) -> None:
    ui = UISettings(keymap={"search.focus": "ctrl+l", "search.mode": "f12", "bogus.id": "x"})
    app = make_app(fts_engine, ui_settings=ui)

    async def go(pilot: Pilot) -> None:
        # one notification names the bad keymap entry
        assert app.startup_notice == "keymap: unknown binding id 'bogus.id'"
        await pilot.press("escape")  # to the tree
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one("#help-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        ids = {r[3] for r in rows}
        assert set(all_ids(key_sections())) <= ids
        by_id = {r[3]: r for r in rows}
        assert by_id["search.focus"][1] == "ctrl+l"
        assert by_id["search.focus"][0] == "Everywhere"
        assert by_id["search.slash"][0] == "Outside text fields"
        assert by_id["search.mode"][1] == "f12"
        assert by_id["editor.save"][1] == "ctrl+s"
        assert by_id["app.help"][1] == "f1" and by_id["app.help_key"][1] == "?"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))
        # the remapped keys work, the old one no longer does
        await pilot.press("ctrl+f")
        assert app.focused is app.memory_tree
        await pilot.press("ctrl+l")
        assert app.focused is app.search_pane.query_one("#search-input", Input)
        await search(pilot, "invoice cron")
        await pilot.press("f12")
        assert app.search_pane.options.mode == "fts" and app.search_pane.outcome.mode == "fts"
        toggles = plain(app.search_pane.query_one("#search-toggles", Static).content)
        assert toggles.startswith("F12")

    drive(app, go)


def test_command_palette_runs_state_aware_commands(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        from tui.commands import MemdeckCommands, palette_commands

        titles = [c.title for c in palette_commands(app)]
        assert "Search: MMR on" in titles and "Search: switch mode to FTS-only" in titles
        assert "Open: MEMORY.md" in titles
        assert not any(t.startswith("Editor: save") for t in titles)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"MMR on")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.search_pane.options.mmr_enabled)
        titles = [c.title for c in palette_commands(app)]
        assert "Search: MMR off" in titles
        app.open_location("memory/2026-03-15.md")
        await pilot.pause()
        titles = [c.title for c in palette_commands(app)]
        assert "Editor: allow editing memory/2026-03-15.md" in titles
        assert "Editor: save memory/2026-03-15.md" in titles
        # the palette finds it by what it does, as docs/app.md calls it
        for words in ("unlock", "daily"):
            hits = [h async for h in MemdeckCommands(app.screen).search(words)]
            assert any("allow editing memory/2026-03-15.md" in str(h.text) for h in hits), words

    drive(app, go)


def test_themes_from_files_with_one_notice_for_bad_ones(fts_engine, make_app, tmp_path) -> None:
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "broken.toml").write_text('name = "broken"\nprimary = "notacolour"\n')
    (themes / "bad2.toml").write_text("name = \n")
    (themes / "sea.toml").write_text(
        'name = "sea"\ndark = true\nprimary = "#2288aa"\n[variables]\nscore-vector = "#00ffaa"\n'
    )
    ui = UISettings(theme="sea")
    app = make_app(fts_engine, ui_settings=ui, themes_from=[BUNDLED_THEMES_DIR, themes])

    async def go(pilot: Pilot) -> None:
        assert app.theme == "sea"
        assert app.theme_variables["score-vector"] == "#00ffaa"
        assert app.theme_variables["score-text"]  # default filled in
        notices = [n for n in app._notifications if n.title == "memdeck settings"]
        assert len(notices) == 1
        assert "broken.toml: primary" in notices[0].message
        assert "bad2.toml: not valid TOML" in notices[0].message
        await pilot.press("escape", "ctrl+t")
        assert app.theme == "memdeck-light"
        await pilot.press("ctrl+t")
        assert app.theme == "memdeck-dark"

    drive(app, go)


def test_missing_theme_falls_back_to_textual(fts_engine, make_app, tmp_path: Path) -> None:
    app = make_app(fts_engine, ui_settings=UISettings(theme="memdeck-dark"), themes_from=[])

    async def go(pilot: Pilot) -> None:
        assert app.theme == "textual-dark"
        assert app.theme_variables["score-final"] == "#e5c07b"
        assert "theme 'memdeck-dark' not found" in app.startup_notice

    drive(app, go)


def test_quit_stops_the_sync_service_and_workers(engine_factory, make_app) -> None:
    engine = engine_factory(None)
    service = SyncService(engine, debounce=0.1)
    app = make_app(engine, sync_service=service)

    threads: list[threading.Thread] = []

    async def go(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: service.state.watching)
        threads.extend(service._threads)
        assert threads and all(t.is_alive() for t in threads)
        await pilot.press("ctrl+q")

    drive(app, go)
    assert app.return_code == 0
    assert not service.started
    assert not any(t.is_alive() for t in threads)
    assert app.bridge._unsubscribers == []


def test_other_screens_open_from_the_palette_and_block_pane_keys(fts_engine, make_app) -> None:
    from tui.screens.promotion_queue import PromotionQueueScreen
    from tui.screens.sessions_view import SessionsViewScreen

    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("escape")  # focus the tree
        app.action_promotion_queue()
        await wait_for(pilot, lambda: isinstance(app.screen, PromotionQueueScreen))
        assert app.check_action("focus_search", ()) is False
        await pilot.press("slash", "2")
        assert app.query_one("#panes").active == "pane-search"  # untouched underneath
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        app.action_sessions_view()
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsViewScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.default_screen)
        assert app.check_action("focus_search", ()) is True

    drive(app, go)


def test_a_status_load_that_finishes_while_the_screen_is_torn_down_is_dropped(
    fts_engine, make_app, monkeypatch
) -> None:
    """A status load still running when the app is torn down (a slow PostgreSQL status
    after a reindex; on the CI rehearsal the test left ``run_test`` without quitting)
    finishes after Textual began the teardown: its result must not reach the panes
    being removed (NoMatches for #monitor) nor be taken as the app's status."""
    started = threading.Event()
    real_status = fts_engine.status
    app = make_app(fts_engine)

    def slow_status(*, load_provider: bool = True) -> EngineStatus:
        started.set()
        deadline = time.monotonic() + 10
        while app.is_running and time.monotonic() < deadline:
            time.sleep(0.001)
        return real_status(load_provider=load_provider)  # as the screen is torn down

    shown: list[EngineStatus | None] = []

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            shown.append(app.status)
            monkeypatch.setattr(fts_engine, "status", slow_status)
            app.refresh_status()
            await wait_for(pilot, started.is_set)
            # leave without quitting: run_test tears the screen down at once

    asyncio.run(main())
    assert app.status is shown[0]  # the late load was never shown


def test_nothing_is_posted_once_the_app_began_to_exit(fts_engine, make_app) -> None:
    """Quitting detaches the bridge before the screen goes: an engine event or a
    service state published afterwards (by a sync thread) is not posted."""
    app = make_app(fts_engine)
    counts: list[int] = []

    async def go(pilot: Pilot) -> None:
        app.exit(0)
        counts.append(app.bridge.posted)
        fts_engine.bus.publish(SyncStarted(reason="late", full=False))
        counts.append(app.bridge.posted)
        app.refresh_status()  # e.g. the handler of a SyncDone queued before the exit
        app.refresh_tree()
        loads = [w for w in app.workers if w.group in ("status", "tree")]
        assert all(w.is_cancelled for w in loads)

    drive(app, go)
    assert counts[0] == counts[1]
