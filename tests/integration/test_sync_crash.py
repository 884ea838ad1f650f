"""A reindex killed with SIGKILL: the old index answers, the next start cleans up and resumes."""

from __future__ import annotations

import json
import time

from engine.core import Engine
from engine.index.lock import lock_holder, writer_lock
from engine.index.store import Store
from tests.engine_fixtures import write
from tests.integration.sync_support import HashEmbedder, kill_9, spawn_python

# A full reindex (FTS-only index -> hash embeddings) that reports each embedded batch.
REINDEX = """
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
engine.sync(reason="start")
print(json.dumps({"done": True}), flush=True)
"""


def test_killed_reindex_keeps_the_old_index_and_resumes_on_next_start(
    make_settings, workspace_dir, state_dir
):
    for i in range(150):
        body = "".join(
            f"Note {i}.{j} on topic{j % 11}: " + "words " * 60 + "\n\n" for j in range(8)
        )
        write(workspace_dir, f"memory/topics/t{i:03d}.md", body)
    write(workspace_dir, "MEMORY.md", "sentinel word quokka\n")
    settings = make_settings()
    old = Engine(settings, provider=None)  # the live index: FTS-only
    old.sync()
    chunks = old.status().chunks
    old.close()
    index = settings.index_path

    proc = spawn_python("-c", REINDEX, str(workspace_dir), str(state_dir))
    assert proc.stdout is not None
    embedded = 0
    for line in proc.stdout:  # kill once a good part of the embeddings is paid for
        embedded = json.loads(line).get("embedded", 0)
        if embedded >= 160:
            break
    assert embedded >= 160, "the reindex ended before it could be killed"
    assert lock_holder(index) == proc.pid  # it held the writer lock
    kill_9(proc)

    # The old index still answers, and the killed build left its temp file behind.
    store = Store(index)
    try:
        assert store.fts_search('"quokka"', 5, ["memory"])
        assert store.dims is None  # still the FTS-only build
    finally:
        store.close()
    debris = [p for p in index.parent.iterdir() if ".reindex-" in p.name]
    assert debris, "expected the killed build's temp file"
    # flock died with the process: the lock is free at once (no stale lock).
    with writer_lock(index, timeout=0):
        pass

    # Next start: the debris goes, and the embeddings it held are kept.
    provider = HashEmbedder()
    eng = Engine(settings, provider=provider)
    try:
        main_file = next(p.name for p in debris if p.name.endswith(".tmp"))
        assert main_file in {p.name for p in eng.debris_removed}
        assert [p for p in index.parent.iterdir() if ".reindex-" in p.name] == []
        done = eng.sync(reason="start")
        assert done.full
        assert done.cache_hits >= embedded  # every batch it reported is kept
        assert done.chunks_embedded <= chunks - done.cache_hits
        assert provider.texts_embedded == done.chunks_embedded < chunks
        assert eng.status().embedded_chunks == chunks
        assert eng.search("quokka", eng.default_options().with_(min_score=0)).results
        assert eng.db_integrity() == "ok"
        assert not eng.needs_full_reindex()
    finally:
        eng.close()


SWAP_KILL = """
import sys
from engine.config.loader import load_settings
from engine.core import Engine
from engine.events import SyncProgress
from tests.integration.sync_support import HashEmbedder

env = {"OPENCLAW_STATE_DIR": sys.argv[2], "HOME": sys.argv[2]}
engine = Engine(load_settings(workspace=sys.argv[1], env=env), provider=HashEmbedder())
def report(event):
    if isinstance(event, SyncProgress) and event.phase == "swap" and event.files_done == 0:
        print("swap", flush=True)  # the copy into the live index starts now
engine.bus.subscribe(report)
engine.sync(reason="start")
print("done", flush=True)
"""


def test_kill_during_the_swap_leaves_one_whole_index(make_settings, workspace_dir, state_dir):
    for i in range(300):
        write(workspace_dir, f"memory/big/b{i:03d}.md", f"entry {i} " + "filler text " * 800)
    write(workspace_dir, "MEMORY.md", "sentinel word quokka\n")
    settings = make_settings()
    old = Engine(settings, provider=None)
    old.sync()
    chunks = old.status().chunks
    old.close()
    index = settings.index_path
    for delay in (0.0, 0.03, 0.1):  # before, during or after the copy
        proc = spawn_python("-c", SWAP_KILL, str(workspace_dir), str(state_dir))
        assert proc.stdout is not None and proc.stdout.readline().strip() == "swap"
        time.sleep(delay)
        kill_9(proc)

        # Whatever the moment, the live index is one whole build: the old FTS-only
        # one, or the new one with every chunk embedded; never a mix, never damaged.
        store = Store(index)
        try:
            assert store.db.scalar("pragma integrity_check") == "ok"
            counts = store.counts()
            assert counts["chunks"] == chunks
            assert counts["embedded"] == (0 if store.dims is None else chunks)
            assert store.fts_search('"quokka"', 5, ["memory"])
            if store.dims is not None:
                break  # the new build is in: a later kill would test nothing new
        finally:
            store.close()
    eng = Engine(settings, provider=HashEmbedder())
    try:
        eng.sync()
        assert eng.status().embedded_chunks == chunks
        assert eng.db_integrity() == "ok"
        assert [p for p in index.parent.iterdir() if ".reindex-" in p.name] == []
    finally:
        eng.close()


def test_debris_of_a_live_writer_is_left_alone(make_settings, workspace_dir):
    write(workspace_dir, "MEMORY.md", "x\n")
    settings = make_settings()
    index = settings.index_path
    index.parent.mkdir(parents=True, exist_ok=True)
    # A temp file named for a live process other than us (pid 1 always exists).
    live = index.with_name(index.name + ".reindex-1.tmp")
    live.write_bytes(b"")
    dead = index.with_name(index.name + ".reindex-999999999.tmp")
    dead.write_bytes(b"")
    with writer_lock(index, timeout=0):  # someone is writing: only dead pids are debris
        eng = Engine(settings, provider=None)
    try:
        assert live.exists() and not dead.exists()
    finally:
        eng.close()
    eng = Engine(settings, provider=None)  # nobody writes: every temp file is debris
    try:
        assert not live.exists()
    finally:
        eng.close()
