"""The app on the PostgreSQL store, driven by Pilot against the real server: the
monitor names the store (masked DSN intact, namespace, server version, tsvector),
the search pane answers with its breakdown, agent activity lists the searches, and
a full reindex switches generations without the app noticing anything but the sync.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from engine.tools import memory_search
from tests.engine.concept_embedder import ConceptEmbedder
from tests.pg_fixtures import engine_for, pg_env
from tests.tui.conftest import drive, search, settle, wait_for
from tests.tui.test_agent_activity import rows
from tests.tui.test_app_shell import plain
from tui.screens.agent_activity import AgentActivityScreen

pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")
SECRET = "Tui-Pw-Not-Shown-5"


def test_monitor_search_activity_and_reindex_on_postgres(
    tmp_path: Path, pg_dsn: str, demo_dir: Path, make_app
) -> None:
    dsn = pg_dsn.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@")
    engine = engine_for(
        demo_dir, pg_env(tmp_path / "pg-state", dsn, "team-notes"), ConceptEmbedder()
    )
    engine.sync(reason="start")
    memory_search(engine, "cat medication", client="claude-code")
    space = engine.store.current_space()  # type: ignore[attr-defined]
    app = make_app(engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press("escape", "4")
        facts = plain(app.monitor.query_one("#monitor-facts", Static).content)
        assert "postgresql://postgres:***@127.0.0.1:" in facts  # not shortened like a path
        assert "(namespace team-notes)" in facts and SECRET not in facts
        assert "· PostgreSQL 18." in facts and "SQLite" not in facts
        assert "tsvector (unicode61 terms, FTS5 bm25)" in facts
        assert "pgvector 0." in facts

        await search(pilot, "cat medicine")
        outcome = app.search_pane.outcome
        assert outcome is not None and outcome.results
        top = outcome.results[0]
        assert "methimazole" in top.text, [c.path for c in outcome.results]
        assert outcome.retrieval.fts_hits and outcome.retrieval.vector_hits
        await pilot.pause()
        breakdown = plain(app.search_pane.query_one("#breakdown-body", Static).content)
        assert f"#1 {top.path}:{top.start_line}-{top.end_line}" in breakdown
        assert "bm25" in breakdown and "cosine" in breakdown

        await pilot.press("escape", "f11")
        screen = app.screen
        assert isinstance(screen, AgentActivityScreen)
        await wait_for(pilot, lambda: len(screen.searches) >= 1)
        assert ["claude-code", "cat medication"] in [r[1:3] for r in rows(screen)]
        await pilot.press("escape")

        app.action_full_reindex()
        await wait_for(
            pilot,
            lambda: engine.store.current_space() != space,  # type: ignore[attr-defined]
            timeout=60,
        )
        # the reindex's end starts a status and a tree load (slow on PostgreSQL):
        # wait for all of them, so the test leaves an app with nothing in flight
        await asyncio.wait_for(settle(pilot), timeout=60)
        assert app.status is not None and app.status.chunks > 0

    try:
        drive(app, go)
        assert engine.status().chunks > 0 and engine.db_integrity() == "ok"
    finally:
        engine.close()
