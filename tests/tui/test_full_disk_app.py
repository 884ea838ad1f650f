"""The app on a really full disk: it says "disk full" and keeps reading.

The state folder is a 2 MiB tmpfs filled to ENOSPC (``tests.full_disk``). The
app's engine opens the index read-only, the sync service's start-up sync fails
for want of space, and the real app — driven by Pilot — shows the problem in the
top bar and the monitor while searches keep answering from the index as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import RichLog, Static

from engine.config.loader import load_settings
from engine.core import Engine
from engine.index.sync_service import SyncService
from tests.full_disk import fill, small_tmpfs
from tests.tui.conftest import drive, search, wait_for
from tui.app import MemdeckApp

NOTE = "# Memory\n\nDana prefers flat white coffee.\n"


def plain(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_app_says_disk_full_and_keeps_serving_reads(
    tmp_path: Path, make_app: Callable[..., MemdeckApp]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text(NOTE)
    with small_tmpfs(tmp_path / "state") as state:
        env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(state)}
        settings = load_settings(workspace=ws, env=env)
        first = Engine(settings, provider=None, env=env)
        first.sync()
        first.close()
        fill(state)
        (ws / "memory").mkdir()
        (ws / "memory" / "tea.md").write_text("Tea on Fridays.\n")  # a change to write
        engine = Engine(settings, provider=None, env=env)
        service = SyncService(engine, debounce=0.2, poll_interval=0.2)
        app = make_app(engine, sync_service=service)

        async def go(pilot: Pilot) -> None:
            monitor = app.monitor
            errors = monitor.events_log  # what the monitor's error log holds
            # the start-up sync ran, failed for want of space, and said so
            await wait_for(
                pilot, lambda: any("sync (start) failed" in line.plain for line in errors)
            )
            failed = next(line.plain for line in errors if "sync (start) failed" in line.plain)
            assert f"cannot write the index {settings.index_path}" in failed
            assert f"the disk holding {settings.index_path.parent} is full" in failed
            assert "✗ disk full" in plain(app.query_one("#topbar", Static).content)
            facts = plain(monitor.query_one("#monitor-facts", Static).content)
            assert "writes     disk full — cannot write the index" in facts, facts
            assert "free space there" in facts
            # ... and reading goes on: a search answers from the index as it is
            await search(pilot, "flat white")
            outcome = app.search_pane.outcome
            assert outcome is not None
            assert [c.path for c in outcome.results] == ["MEMORY.md"]
            assert app.status is not None and app.status.write_problem is not None
            assert app.status.write_problem.kind == "disk full"
            # on the monitor's page the error log shows it too
            await pilot.press("escape", "4")
            log = monitor.query_one("#monitor-errors", RichLog)

            def shown() -> str:  # the log wraps long lines at spaces
                return " ".join(" ".join(ln.text.split()) for ln in log.lines)

            await wait_for(pilot, lambda: "is full; free space there" in shown())
            assert "sync (start) failed: cannot write the index" in shown()

        try:
            drive(app, go)
        finally:
            engine.close()
