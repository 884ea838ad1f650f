"""The index is checked at the moments it is cheap: when the last
writer died holding the lock, and after a query failed.

A writer process is really killed with SIGKILL in the middle of a sync. The
lock file still holds its pid (a clean release empties it), so the next writer
to take the lock knows and runs ``pragma quick_check`` before anything else.
Damage is real too: the leaf pages of the ``chunks`` table are overwritten on
disk (page type 0, which is no b-tree page), the kind of damage a disk that lied
about a flush leaves. A damaged file is moved aside and rebuilt from the
Markdown; a sound one is left as it is and the sync carries on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from engine.config.settings import Settings
from engine.core import Engine
from engine.index.db import Database
from engine.index.lock import lock_holder
from tests.engine_fixtures import write
from tests.integration.sync_support import HashEmbedder, kill_9, spawn_python

# An incremental sync that embeds slowly and says how far it got.
WRITER = """
import json, sys
from engine.config.loader import load_settings
from engine.core import Engine
from engine.events import SyncProgress
from tests.integration.sync_support import HashEmbedder

env = {"OPENCLAW_STATE_DIR": sys.argv[2], "HOME": sys.argv[2]}
engine = Engine(load_settings(workspace=sys.argv[1], env=env), provider=HashEmbedder(delay=0.05))
def report(event):
    if isinstance(event, SyncProgress) and event.phase == "embed":
        print(json.dumps({"embedded": event.chunks_embedded}), flush=True)
engine.bus.subscribe(report)
engine.sync(reason="watch")
print(json.dumps({"done": True}), flush=True)
"""

NOTES = 120


def _notes(ws: Path, start: int, stop: int) -> None:
    for i in range(start, stop):
        write(ws, f"memory/n{i:03d}.md", f"# Note {i}\n\nnote {i} about topic{i % 7}\n" * 3)


def damage_leaf_pages(index: Path, table: str) -> int:
    """Overwrite the page-type byte of every leaf page of ``table`` in the file itself
    (after folding the WAL in, so SQLite reads these pages from the main file)."""
    db = Database(index)
    try:
        db.execute("pragma wal_checkpoint(TRUNCATE)")
        size = int(db.scalar("pragma page_size"))
        pages = [
            int(r[0])
            for r in db.execute(
                "select pageno from dbstat where name = ? and pagetype = 'leaf'", (table,)
            )
        ]
    finally:
        db.close()
    with open(index, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * size)
            fh.write(b"\x00" * 8)
    return len(pages)


def kill_a_writer_mid_sync(settings: Settings, ws: Path, state: Path) -> int:
    """An index of a few notes, then many new ones and a writer killed while it
    embeds them; returns the dead writer's pid."""
    _notes(ws, 0, 10)
    write(ws, "MEMORY.md", "# Memory\n\nsentinel word quokka\n")
    first = Engine(settings, provider=HashEmbedder())
    first.sync()
    first.close()
    _notes(ws, 10, NOTES)
    proc = spawn_python("-c", WRITER, str(ws), str(state))
    assert proc.stdout is not None
    embedded = 0
    for line in proc.stdout:
        embedded = json.loads(line).get("embedded", 0)
        if embedded >= 20:
            break
    assert embedded >= 20, "the sync ended before it could be killed"
    assert lock_holder(settings.index_path) == proc.pid  # it was writing
    kill_9(proc)
    return proc.pid


def test_a_writer_killed_mid_sync_is_noticed_and_the_index_checked(
    make_settings: Callable[..., Settings], workspace_dir: Path, state_dir: Path
) -> None:
    settings = make_settings()
    pid = kill_a_writer_mid_sync(settings, workspace_dir, state_dir)
    index = settings.index_path
    assert lock_holder(index) == pid  # the kernel dropped the flock; the pid stays
    engine = Engine(settings, provider=HashEmbedder())
    try:
        note = engine.integrity_check
        assert note is not None
        assert re.fullmatch(
            rf"the last writer \(pid {pid}\) died while writing: index checked in [0-9.]+ s, ok",
            note,
        ), note
        assert engine.status().integrity_check == note
        assert engine.recovered is None and not index.with_name(index.name + ".corrupt").exists()
        done = engine.sync()
        assert not done.full  # a sound index: the sync carries on where the dead one stopped
        assert engine.status().files == NOTES + 1
        assert engine.search("quokka").results[0].path == "MEMORY.md"
    finally:
        engine.close()
    assert lock_holder(index) is None  # released cleanly this time
    again = Engine(settings, provider=HashEmbedder())
    try:
        assert again.integrity_check is None  # nothing to check after a clean shutdown
    finally:
        again.close()


def test_a_killed_writer_and_damaged_pages_rebuild_from_the_markdown(
    make_settings: Callable[..., Settings], workspace_dir: Path, state_dir: Path
) -> None:
    settings = make_settings()
    pid = kill_a_writer_mid_sync(settings, workspace_dir, state_dir)
    index = settings.index_path
    assert damage_leaf_pages(index, "chunks") >= 1
    engine = Engine(settings, provider=HashEmbedder())
    try:
        note = engine.integrity_check or ""
        assert note.startswith(f"the last writer (pid {pid}) died while writing: index damaged (")
        assert note.endswith("rebuilt from the Markdown"), note
        assert "quick_check" in (engine.recovered or "") and "moved to" in (engine.recovered or "")
        assert index.with_name(index.name + ".corrupt").exists()
        done = engine.sync()
        assert done.full and engine.status().files == NOTES + 1
        assert engine.db_integrity() == "ok"
        assert engine.search("quokka").results[0].path == "MEMORY.md"
    finally:
        engine.close()


def test_a_damaged_page_found_by_a_failed_query_is_rebuilt_and_answered(
    make_settings: Callable[..., Settings], workspace_dir: Path
) -> None:
    """No crash: the damage is met by a search, which checks the file, rebuilds it
    from the Markdown and answers the same search."""
    _notes(workspace_dir, 0, 30)
    write(workspace_dir, "MEMORY.md", "# Memory\n\nsentinel word quokka\n")
    settings = make_settings()
    first = Engine(settings, provider=HashEmbedder())
    first.sync()
    first.close()
    index = settings.index_path
    assert damage_leaf_pages(index, "chunks") >= 1
    engine = Engine(settings, provider=HashEmbedder())
    try:
        assert engine.integrity_check is None  # a clean shutdown: not checked at open
        assert engine.quick_check() != "ok"  # ... but the damage is real
        out = engine.search("quokka")
        assert out.results and out.results[0].path == "MEMORY.md"
        assert out.mode == "hybrid"
        recovered = engine.recovered or ""
        assert "quick_check" in recovered and "moved to" in recovered, recovered
        assert engine.quick_check() == "ok" and engine.status().files == 31
    finally:
        engine.close()
