"""Several real processes on one index: two writers at once and a reader throughout.

Writer 1 is ``memdeck watch`` (the background sync service behind the CLI),
writer 2 a script alternating full reindexes and incremental syncs, while this
test edits, adds and deletes files and a third process searches without pause.
The single-writer lock serialises the writers, WAL keeps the reader reading,
and the index must come out uncorrupted and equal to the files.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

from engine.core import Engine
from engine.index.store import Store
from engine.workspace.files import sha256_bytes
from tests.engine_fixtures import write
from tests.integration.sync_support import spawn_python, wait_until

WRITER = """
import json, sys
from engine.config.loader import load_settings
from engine.core import Engine
from engine.index.store import Store
from engine.workspace.files import sha256_bytes
settings = load_settings(config_path=sys.argv[3], workspace=sys.argv[1],
                         env={"OPENCLAW_STATE_DIR": sys.argv[2], "HOME": sys.argv[2]})
engine = Engine(settings)
engine.lock_timeout = 120
import os
i = 0
while not os.path.exists(sys.argv[4]):
    done = engine.sync(reason="manual", force=i % 2 == 0)
    print(json.dumps({"i": i, "full": done.full, "indexed": done.files_indexed}), flush=True)
    i += 1
engine.close()
"""

READER = """
import json, os, sys, time
from engine.config.loader import load_settings
from engine.core import Engine
from engine.index.store import Store
from engine.workspace.files import sha256_bytes
settings = load_settings(config_path=sys.argv[3], workspace=sys.argv[1],
                         env={"OPENCLAW_STATE_DIR": sys.argv[2], "HOME": sys.argv[2]})
engine = Engine(settings)
options = engine.default_options().with_(min_score=0)
stats = {"searches": 0, "errors": [], "missed": 0, "slowest_ms": 0.0}
print("ready", flush=True)
while not os.path.exists(sys.argv[4]):
    started = time.perf_counter()
    try:
        results = engine.search("quokka", options).results
        if [r.path for r in results] != ["MEMORY.md"]:
            stats["missed"] += 1
        stats["searches"] += 1
    except Exception as exc:
        stats["errors"].append(f"{type(exc).__name__}: {exc}")
    stats["slowest_ms"] = max(stats["slowest_ms"], (time.perf_counter() - started) * 1000)
engine.close()
print(json.dumps(stats), flush=True)
"""


def test_two_writers_and_a_reader_never_corrupt_the_index(
    make_settings, workspace_dir, state_dir, tmp_path
):
    config = tmp_path / "openclaw.json"
    config.write_text(
        json.dumps({"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}),
        encoding="utf-8",
    )
    write(workspace_dir, "MEMORY.md", "sentinel quokka lives here\n")
    for i in range(150):
        write(workspace_dir, f"memory/notes/n{i:03d}.md", f"note {i} about topic{i % 9}\n" * 30)
    settings = make_settings()
    first = Engine(settings, provider=None)
    first.sync()
    first.close()

    env = {**os.environ, "OPENCLAW_STATE_DIR": str(state_dir), "HOME": str(state_dir)}

    common = [str(workspace_dir), str(state_dir), str(config)]
    stop_file = tmp_path / "stop-reader"
    reader = spawn_python("-c", READER, *common, str(stop_file), env=env)
    assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    cli = ["-m", "engine.cli.main", "watch", "--json", "--config", str(config)]
    watcher = spawn_python(*cli, "--workspace", str(workspace_dir), env=env)
    writer_stop = tmp_path / "stop-writer"
    writer = spawn_python("-c", WRITER, *common, str(writer_stop), env=env)
    try:
        rng = random.Random(7)
        added: list[Path] = []
        serial = 0
        until = time.monotonic() + 6.0
        while time.monotonic() < until:  # edit, add and delete files while both write
            n = rng.randrange(150)
            target = workspace_dir / "memory" / "notes" / f"n{n:03d}.md"
            target.write_text(f"note {n} rewritten edit{rng.randrange(10**6)}\n" * 20)
            if rng.random() < 0.3:
                serial += 1
                added.append(write(workspace_dir, f"memory/new/a{serial}.md", "added\n"))
            if added and rng.random() < 0.1:
                added.pop(rng.randrange(len(added))).unlink()
            time.sleep(0.05)
        writer_stop.touch()
        out, _ = writer.communicate(timeout=120)
        assert writer.returncode == 0, out
        runs = [json.loads(line) for line in out.splitlines()]
        assert len(runs) >= 4 and sum(r["full"] for r in runs) >= 2

        # Only the watching process is left: it must pick up this last edit.
        write(workspace_dir, "memory/last.md", "the final marmot edit\n")
        wait_until(
            lambda: _index_matches_disk(settings.index_path, workspace_dir),
            timeout=120,
            interval=0.5,
            what="the watching process caught up with the edits",
        )
    finally:
        watcher.send_signal(signal.SIGTERM)
        w_out, _ = watcher.communicate(timeout=60)
        stop_file.touch()
        r_out, _ = reader.communicate(timeout=60)
        writer_stop.touch()
        writer.kill()
    assert watcher.returncode == 0
    events = [json.loads(line) for line in w_out.splitlines()]
    kinds = [e["event"] for e in events]
    # Under lock contention the start sync and the watch syncs may merge into one run,
    # so the count is not pinned; the catch-up on the last edit above (made after the
    # writer stopped, so only the watcher could index it) is what proves watching.
    assert kinds.count("SyncDone") >= 1 and "SyncFailed" not in kinds
    assert "start" in {e["reason"] for e in events if e["event"] == "SyncStarted"}

    stats = json.loads(r_out.strip().splitlines()[-1])
    assert stats["errors"] == [] and stats["missed"] == 0
    assert stats["searches"] >= 20

    eng = Engine(settings, provider=None)
    try:
        assert eng.db_integrity() == "ok"
        # FTS and chunks agree row for row.
        chunks = eng.store.db.scalar("select count(*) from chunks")
        fts = eng.store.db.scalar("select count(*) from chunks_fts")
        assert chunks == fts > 0
        assert set(eng.store.files()) == set(_files_on_disk(workspace_dir))
        assert eng.sync().files_indexed == 0  # nothing left behind
        debris = [p.name for p in settings.index_path.parent.iterdir() if ".reindex-" in p.name]
        assert debris == []
    finally:
        eng.close()


def _files_on_disk(root: Path) -> list[str]:
    out = ["MEMORY.md"]
    out += [p.relative_to(root).as_posix() for p in (root / "memory").rglob("*.md")]
    return out


def _index_matches_disk(index: Path, root: Path) -> bool:
    store = Store(index)
    try:
        indexed = {path: rec.hash for path, rec in store.files().items()}
    finally:
        store.close()
    disk = {rel: sha256_bytes((root / rel).read_bytes()) for rel in _files_on_disk(root)}
    return indexed == disk
