"""The app on a live index: the real MiniLM model, the file watcher, the settings file."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from engine.index.sync_service import SyncService
from tests.engine_fixtures import write
from tests.tui.conftest import drive, search, wait_for


@pytest.mark.model
def test_semantic_search_with_the_real_model(engine_factory, make_app, minilm_gguf) -> None:
    """No query word appears in the hit: only the MiniLM vectors can find it."""
    from engine.embeddings.local import LocalProvider

    engine = engine_factory(LocalProvider(minilm_gguf))
    app = make_app(engine)

    async def go(pilot: Pilot) -> None:
        assert "local all-MiniLM-L6-v2 384d" in str(app.query_one("#topbar").content)
        await search(pilot, "feline medication pill")
        out = app.search_pane.outcome
        assert out.mode == "hybrid"
        # the best candidate, returned or (a semantic-only match below the
        # calibrated default's minScore) listed in why-not with its reason
        top = out.candidates[0]
        assert top.final_rank == 1 or (top.dropped or "").startswith("score ")
        assert top.path == "MEMORY.md"  # "The cat Miso takes half a methimazole tablet"
        # its best unit is the closest unit of any candidate by MiniLM cosine; the
        # 27-line chunk's own vector, pooled from all its lines, need not be the
        # closest chunk
        assert top.best_line is not None and top.line_cosine is not None
        best = top.text.split("\n")[top.best_line - top.start_line]
        assert "methimazole" in best
        assert top.line_cosine == max(c.line_cosine or 0.0 for c in out.candidates)
        assert top.line_cosine > top.vector_score
        # rounded to the 4 decimals the breakdown prints
        assert top.vector_score == round(dict(out.retrieval.vector_hits)[top.chunk_id], 4)
        assert out.retrieval.fts_hits == []  # no chunk contains a query word
        await pilot.press("f2")  # FTS-only: nothing to show
        assert app.search_pane.outcome.results == []

    drive(app, go)


def test_files_written_outside_appear_indexed_and_searchable(
    engine_factory, make_app, demo_dir
) -> None:
    engine = engine_factory(None, **{"sync.on_session_start": False})
    service = SyncService(engine, debounce=0.2, poll_interval=0.2)
    app = make_app(engine, sync_service=service)

    async def go(pilot: Pilot) -> None:
        tree = app.memory_tree
        await wait_for(pilot, lambda: service.state.watching)
        write(demo_dir, "memory/people/ines.md", "# Inês\n\nLoves kayaking on the Tagus.\n")
        # the watcher marks the index dirty, syncs, and the tree follows
        await wait_for(pilot, lambda: "memory/people/ines.md" in tree.states)
        await wait_for(pilot, lambda: tree.states["memory/people/ines.md"].state == "indexed")
        assert tree.states["memory/people/ines.md"].chunks == 1
        await search(pilot, "kayaking")
        assert [c.path for c in app.search_pane.outcome.results] == ["memory/people/ines.md"]

    drive(app, go)


def test_a_broken_settings_file_gives_one_notice(fts_engine, make_app, tmp_path) -> None:
    home = tmp_path / "mdh"
    home.mkdir()
    (home / "settings.json").write_text(
        '{theme: "memdeck-light", keymap: {"nope": "x"}, layout: {treeWidth: 500}}',
        encoding="utf-8",
    )
    app = make_app(fts_engine, ui_settings=None, env={"MEMDECK_HOME": str(home)})

    async def go(pilot: Pilot) -> None:
        assert app.theme == "memdeck-light"  # the valid part is used
        notices = [n for n in app._notifications if n.title == "memdeck settings"]
        assert len(notices) == 1
        assert "layout.treeWidth: expected an integer 16–80, got 500" in notices[0].message
        assert "keymap: unknown binding id 'nope'" in notices[0].message
        assert app.memory_tree.styles.width.value == 34

    drive(app, go)
