"""Sync, reindex and recovery on real SQLite files (FTS5 + sqlite-vec)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from engine.core import Engine
from engine.index.store import Store
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import write
from tests.integration.sync_support import kill_9, spawn_python


def paths_of(outcome) -> list[str]:
    return [c.path for c in outcome.results]


def test_incremental_sync_skips_unchanged_and_handles_edits_and_deletes(make_engine, workspace_dir):
    write(workspace_dir, "MEMORY.md", "The cat Miso likes tuna.\n")
    a = write(workspace_dir, "memory/2026-03-01.md", "Train to Porto booked.\n")
    provider = ConceptEmbedder()
    eng = make_engine(provider=provider)
    first = eng.sync()
    assert first.full and first.files_indexed == 2 and first.chunks_embedded == 2
    again = eng.sync()
    assert not again.full and again.files_indexed == 0 and again.chunks_embedded == 0

    a.write_text("Train to Porto booked.\nCoffee beans bought.\n", encoding="utf-8")
    edit = eng.sync()
    assert edit.files_indexed == 1 and edit.chunks_embedded == 1
    assert (
        paths_of(eng.search("coffee", eng.default_options().with_(min_score=0)))[0]
        == a.relative_to(workspace_dir).as_posix()
    )

    os.utime(a, (time.time() + 5, time.time() + 5))  # touch only: hash unchanged
    touched = eng.sync()
    assert touched.files_indexed == 0

    a.unlink()
    gone = eng.sync()
    assert gone.files_removed == 1
    assert eng.status().files == 1
    assert "memory/2026-03-01.md" not in paths_of(
        eng.search("porto", eng.default_options().with_(min_score=0))
    )


def test_cache_survives_a_full_reindex(make_engine, workspace_dir):
    write(workspace_dir, "MEMORY.md", "cat\n\nother paragraph about coffee\n")
    provider = ConceptEmbedder()
    eng = make_engine(provider=provider)
    eng.sync()
    embedded = provider.texts_embedded
    forced = eng.sync(force=True)
    assert forced.full and forced.chunks_embedded == 0 and forced.cache_hits >= 1
    assert provider.texts_embedded == embedded


def test_fingerprint_change_forces_one_atomic_full_reindex(make_settings, workspace_dir):
    write(workspace_dir, "MEMORY.md", "line\n" * 200)
    eng = Engine(make_settings(), provider=None)
    eng.sync()
    chunks_before = eng.status().chunks
    eng.close()
    eng2 = Engine(
        make_settings(
            **{
                "chunking": __import__("engine.config.settings", fromlist=["x"]).ChunkingSettings(
                    tokens=50, overlap=0
                )
            }
        ),
        provider=None,
    )
    try:
        st = eng2.status()
        assert st.needs_full_reindex and st.dirty
        done = eng2.sync()
        assert done.full
        assert eng2.status().chunks > chunks_before
        assert not eng2.status().needs_full_reindex
        assert not eng2.sync().full
    finally:
        eng2.close()


def test_bad_files_are_reported_and_never_stop_the_sync(make_engine, workspace_dir):
    write(workspace_dir, "memory/good.md", "alpha bravo\n")
    (workspace_dir / "memory" / "latin1.md").write_bytes("caf\xe9 gamma".encode("latin-1"))
    (workspace_dir / "memory" / "binary.md").write_bytes(b"\x00\x01\x02PNG" * 100)
    big = workspace_dir / "memory" / "big.md"
    with open(big, "wb") as fh:
        fh.write(b"delta line of text\n" * (50 * 1024 * 1024 // 19))
    eng = make_engine(provider=None)
    done = eng.sync()
    errors = eng.status().file_errors
    assert "binary" in errors["memory/binary.md"]
    assert "indexing limit" in errors["memory/big.md"]
    assert any("not valid UTF-8" in e for e in done.errors)
    opts = eng.default_options().with_(min_score=0)
    assert paths_of(eng.search("gamma", opts)) == ["memory/latin1.md"]
    assert paths_of(eng.search("bravo", opts)) == ["memory/good.md"]
    assert big.stat().st_size > 50_000_000  # nothing touched


def test_corrupt_index_is_rebuilt_and_files_untouched(make_settings, workspace_dir):
    memory = write(workspace_dir, "MEMORY.md", "unique keyword zanzibar\n")
    settings = make_settings()
    eng = Engine(settings, provider=None)
    eng.sync()
    eng.close()
    index = settings.index_path
    for suffix in ("-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    index.write_bytes(b"this is not a sqlite database" * 100)
    eng = Engine(settings, provider=None)
    try:
        assert eng.recovered and "rebuilt" in eng.recovered
        assert eng.search("zanzibar", eng.default_options().with_(min_score=0)).results
        assert memory.read_text() == "unique keyword zanzibar\n"
        assert index.with_name(index.name + ".corrupt").exists()
    finally:
        eng.close()


REINDEX_SCRIPT = """
import sys
from engine.config.loader import load_settings
from engine.core import Engine
env = {"OPENCLAW_STATE_DIR": sys.argv[2], "HOME": sys.argv[2]}
settings = load_settings(workspace=sys.argv[1], env=env)
engine = Engine(settings, provider=None)
print("ready", flush=True)
engine.sync(force=True)
print("done", flush=True)
"""


def test_kill_9_during_full_reindex_leaves_the_old_index_answering(
    make_settings, workspace_dir, state_dir
):
    for i in range(400):
        write(workspace_dir, f"memory/notes/n{i:04d}.md", f"note {i} about topic{i % 7}\n" * 40)
    write(workspace_dir, "MEMORY.md", "sentinel word quokka\n")
    settings = make_settings()
    eng = Engine(settings, provider=None)
    eng.sync()
    eng.close()
    index = settings.index_path
    for delay in (0.05, 0.3, 0.8):
        proc = spawn_python("-c", REINDEX_SCRIPT, str(workspace_dir), str(state_dir))
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        kill_9(proc)
        store = Store(index)
        try:
            hits = store.fts_search('"quokka"', 5, ["memory"])
            assert hits, f"old index must still answer after kill at {delay}s"
        finally:
            store.close()
    eng = Engine(settings, provider=None)
    try:
        debris = [p.name for p in index.parent.iterdir() if ".reindex-" in p.name]
        assert debris == [], debris
        assert eng.search("quokka", eng.default_options().with_(min_score=0)).results
        assert eng.db_integrity() == "ok"
    finally:
        eng.close()
