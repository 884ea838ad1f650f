"""The background sync service with a real ``watchfiles`` watcher on real folders.

Every wait polls with a generous deadline (``wait_until``) instead of sleeping a
fixed time, so a loaded 2-core CI machine only makes these tests slower.
Most tests use a short debounce to stay fast; the coalescing test uses the
real 1.5 s default.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config.paths import sessions_dir
from engine.config.settings import ChunkingSettings, SessionSyncSettings, SyncSettings
from engine.core import Engine
from engine.events import SyncDone, SyncFailed, SyncProgress, SyncStarted, SyncStatus
from engine.index.lock import writer_lock
from engine.index.sync_service import DEBOUNCE_S, SyncService
from engine.workspace.files import Workspace
from tests.engine_fixtures import write
from tests.integration.sync_support import EventLog, HashEmbedder, wait_until

# real watchers and debounce waits: seconds of waiting per test
pytestmark = pytest.mark.slow

NO_SEARCH_SYNC = SyncSettings(on_search=False)


@pytest.fixture
def watched(make_engine) -> Iterator[Callable[..., tuple[Engine, SyncService, EventLog]]]:
    """Start a service on a fresh engine and wait until its start-up sync is done."""
    services: list[SyncService] = []

    def start(
        engine: Engine | None = None, *, idle: bool = True, **service_args: Any
    ) -> tuple[Engine, SyncService, EventLog]:
        eng = engine or make_engine(provider=None, sync=NO_SEARCH_SYNC)
        log = EventLog()
        eng.bus.subscribe(log)
        service_args.setdefault("debounce", 0.3)
        service_args.setdefault("poll_interval", 0.2)
        svc = SyncService(eng, **service_args)
        services.append(svc)
        svc.start()
        if idle:
            assert svc.wait_watching(30)
            wait_until(lambda: svc.state.syncs_done >= 1, what="start-up sync")
            assert svc.wait_idle(60)
        return eng, svc, log

    yield start
    for svc in services:
        assert svc.stop(timeout=30)


def indexed(eng: Engine) -> set[str]:
    return set(eng.store.files())


def hits(eng: Engine, word: str, sources: tuple[str, ...] = ("memory",)) -> list[Any]:
    options = eng.default_options().with_(min_score=0, sources=sources)
    return eng.search(word, options).results


def hit_paths(eng: Engine, word: str) -> set[str]:
    return {h.path for h in hits(eng, word)}


def reasons(log: EventLog) -> list[str]:
    return [e.reason for e in log.of(SyncStarted)]


# -- files ------------------------------------------------------------------------------
def test_create_modify_delete_and_rename_files_while_watching(watched, workspace_dir):
    eng, svc, log = watched()
    assert svc.state.watching and svc.state.watched_dirs == 2  # workspace root + memory/
    log.clear()

    a = write(workspace_dir, "memory/notes.md", "The kiwi orchard opens in May.\n")
    wait_until(lambda: hit_paths(eng, "kiwi") == {"memory/notes.md"}, what="created file")

    a.write_text("Now it is about the mango harvest.\n", encoding="utf-8")
    wait_until(lambda: hit_paths(eng, "mango") == {"memory/notes.md"}, what="modified file")
    assert hit_paths(eng, "kiwi") == set()

    a.rename(workspace_dir / "memory" / "harvest.md")
    wait_until(lambda: indexed(eng) == {"memory/harvest.md"}, what="renamed file")
    assert hit_paths(eng, "mango") == {"memory/harvest.md"}

    (workspace_dir / "memory" / "harvest.md").rename(workspace_dir / "memory" / "harvest.txt")
    wait_until(lambda: indexed(eng) == set(), what="renamed to a non-Markdown name")

    write(workspace_dir, "MEMORY.md", "Curated: the papaya rule.\n")
    wait_until(lambda: hit_paths(eng, "papaya") == {"MEMORY.md"}, what="MEMORY.md created")
    (workspace_dir / "MEMORY.md").unlink()
    wait_until(lambda: indexed(eng) == set(), what="MEMORY.md deleted")

    assert svc.wait_idle(60)
    assert reasons(log) and set(reasons(log)) == {"watch"}
    assert svc.state.errors == () and svc.state.last_error is None
    assert not svc.state.dirty


def test_directories_appearing_renamed_and_vanishing(watched, workspace_dir):
    eng, svc, _ = watched()

    # A new nested folder and a file inside it, written before the watcher re-plans.
    write(workspace_dir, "memory/projects/deep/plan.md", "Project quartz milestones.\n")
    wait_until(lambda: hit_paths(eng, "quartz") == {"memory/projects/deep/plan.md"})
    # ...and a file written into the new folder after the re-plan is seen too.
    wait_until(lambda: svc.state.watched_dirs == 4, what="new folders watched")
    write(workspace_dir, "memory/projects/deep/later.md", "Later: topaz review.\n")
    wait_until(lambda: hit_paths(eng, "topaz") == {"memory/projects/deep/later.md"})

    (workspace_dir / "memory" / "projects").rename(workspace_dir / "memory" / "archive")
    expected = {"memory/archive/deep/plan.md", "memory/archive/deep/later.md"}
    wait_until(lambda: indexed(eng) == expected, what="renamed folder")

    shutil.rmtree(workspace_dir / "memory" / "archive")
    wait_until(lambda: indexed(eng) == set(), what="deleted folder")

    shutil.rmtree(workspace_dir / "memory")  # memory/ itself vanishes...
    wait_until(lambda: svc.state.watched_dirs == 1, what="memory/ unwatched")
    write(workspace_dir, "memory/2026-03-02.md", "Back again: opal.\n")  # ...and comes back
    wait_until(lambda: hit_paths(eng, "opal") == {"memory/2026-03-02.md"})
    assert svc.state.errors == ()


def test_a_workspace_created_after_start_is_picked_up(watched, make_engine, workspace_dir):
    shutil.rmtree(workspace_dir)
    eng, svc, _ = watched(make_engine(provider=None, sync=NO_SEARCH_SYNC))
    assert not svc.state.watching and svc.state.watch_error is None
    write(workspace_dir, "MEMORY.md", "Late workspace about garnet.\n")
    wait_until(lambda: hit_paths(eng, "garnet") == {"MEMORY.md"}, what="late workspace")
    wait_until(lambda: svc.state.watching, what="watcher armed on the new folder")


def test_ignored_dirs_symlinks_and_other_files_never_trigger_a_sync(
    watched, workspace_dir, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace_dir / "memory" / "linked")
    for ignored in (".git", "node_modules", ".venv", "__pycache__"):
        (workspace_dir / "memory" / ignored).mkdir()
    eng, svc, log = watched()
    assert svc.state.watched_dirs == 2  # neither the ignored folders nor the symlink
    log.clear()

    for i in range(5):
        write(workspace_dir, f"memory/.git/objects{i}.md", "ignored\n")
        write(workspace_dir, f"memory/node_modules/pkg{i}.md", "ignored\n")
        write(outside, f"through-link{i}.md", "ignored\n")
        write(workspace_dir, f"memory/scratch{i}.txt", "not markdown\n")
        write(workspace_dir, f"notes{i}.md", "not a memory file\n")
    # Wait several debounce periods: a wrongly watched change would have started a sync.
    time.sleep(svc.debounce * 4 + 0.5)
    assert reasons(log) == [] and not svc.state.dirty
    assert indexed(eng) == set()

    # The watcher is alive: a real change right after is seen.
    write(workspace_dir, "memory/real.md", "a real amber note\n")
    wait_until(lambda: hit_paths(eng, "amber") == {"memory/real.md"})


def test_extra_paths_are_watched(watched, make_engine, workspace_dir, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    single = tmp_path / "single.md"
    single.write_text("start\n", encoding="utf-8")
    eng = make_engine(provider=None, sync=NO_SEARCH_SYNC, extra_paths=(str(notes), str(single)))
    eng, _svc, _ = watched(eng)
    write(notes, "sub/idea.md", "An idea about jade.\n")
    wait_until(lambda: hit_paths(eng, "jade") == {(notes / "sub" / "idea.md").as_posix()})
    single.write_text("now about onyx\n", encoding="utf-8")
    wait_until(lambda: hit_paths(eng, "onyx") == {single.as_posix()})


# -- coalescing -------------------------------------------------------------------------
def test_a_burst_of_500_writes_is_coalesced_into_few_syncs(watched, workspace_dir):
    eng, svc, log = watched(debounce=DEBOUNCE_S)  # the real 1.5 s debounce
    log.clear()
    for i in range(500):  # 100 files, each written 5 times
        n = i % 100
        write(workspace_dir, f"memory/burst/f{n:03d}.md", f"file {n} version {i // 100} w{i}\n")
    assert svc.wait_idle(120)
    wait_until(lambda: len(indexed(eng)) == 100, what="all burst files indexed")
    assert svc.wait_idle(120)
    watch_syncs = [r for r in reasons(log) if r == "watch"]
    assert 1 <= len(watch_syncs) <= 3, reasons(log)
    assert len(reasons(log)) <= 3
    # The index holds the last version of every file.
    assert hit_paths(eng, "w499") == {"memory/burst/f099.md"}
    assert hit_paths(eng, "w100") == set()
    assert sum(d.files_indexed for d in log.of(SyncDone)) <= 200


# -- transcripts ------------------------------------------------------------------------
def message(role: str, text: str) -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": text}})


def append_lines(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


def test_a_transcript_growing_past_the_thresholds_becomes_searchable(
    watched, make_engine, state_dir
):
    folder = sessions_dir(state_dir, "main")
    folder.mkdir(parents=True)
    transcript = folder / "chat-1.jsonl"
    append_lines(transcript, [json.dumps({"type": "session"}), message("user", "hello there")])
    sync = SyncSettings(on_search=False, sessions=SessionSyncSettings(1_000_000, 5))
    eng = make_engine(provider=None, sync=sync, session_memory=True, sources=("memory", "sessions"))
    eng, svc, log = watched(eng)
    assert {h.source for h in hits(eng, "hello", ("memory", "sessions"))} == {"sessions"}
    assert svc.state.watched_dirs == 3  # root, memory/, the transcripts folder

    done_before = len(log.of(SyncDone))
    append_lines(transcript, [message("user", f"note {i} about pelicans") for i in range(3)])
    # The watcher runs a sync for the growth, which defers the transcript (3 < 5 lines).
    wait_until(lambda: len(log.of(SyncDone)) > done_before, what="sync after growth")
    assert svc.wait_idle(60)
    assert log.of(SyncDone)[-1].files_indexed == 0
    assert hits(eng, "pelicans", ("memory", "sessions")) == []

    append_lines(transcript, [message("assistant", "pelicans noted"), "{torn line"])
    found = wait_until(lambda: hits(eng, "pelicans", ("memory", "sessions")), what="past delta")
    assert {(h.path, h.source) for h in found} == {("sessions/chat-1.jsonl", "sessions")}
    # chunk lines are JSONL line numbers: the pelican messages are lines 3-6
    assert min(h.start_line for h in found) >= 2 and max(h.end_line for h in found) == 6
    assert hits(eng, "pelicans", ("memory",)) == []

    # A brand-new transcript is indexed at once, whatever its size.
    append_lines(folder / "chat-2.jsonl", [message("user", "a new chat about ibises")])
    wait_until(lambda: hits(eng, "ibises", ("memory", "sessions")), what="new transcript")
    (folder / "sessions.json").write_text("{}", encoding="utf-8")  # not a transcript
    assert svc.wait_idle(60)
    assert set(indexed(eng)) == {"sessions/chat-1.jsonl", "sessions/chat-2.jsonl"}


def test_a_transcripts_folder_created_after_start_is_watched(watched, make_engine, state_dir):
    eng = make_engine(
        provider=None, sync=NO_SEARCH_SYNC, session_memory=True, sources=("memory", "sessions")
    )
    eng, svc, _ = watched(eng)
    assert svc.state.watched_dirs == 2
    folder = sessions_dir(state_dir, "main")
    folder.mkdir(parents=True)
    append_lines(folder / "first.jsonl", [message("user", "the very first chat: armadillo")])
    wait_until(lambda: hits(eng, "armadillo", ("memory", "sessions")), what="new folder")
    wait_until(lambda: svc.state.watched_dirs == 3, what="transcripts folder watched")


# -- other triggers ---------------------------------------------------------------------
def test_search_on_a_dirty_index_syncs_in_the_background(watched, make_engine, workspace_dir):
    write(workspace_dir, "MEMORY.md", "stable words\n")
    provider = HashEmbedder(delay=1.0)  # every embedding batch takes a second
    eng = make_engine(provider=provider, sync=SyncSettings(on_search=True))
    # A debounce far longer than the test: only the search can trigger the sync.
    eng, svc, log = watched(eng, debounce=600.0, max_wait=600.0)
    write(workspace_dir, "memory/new.md", "fresh walrus facts\n")
    wait_until(lambda: svc.state.dirty, what="watcher marks the index dirty")
    assert reasons(log) == ["missing"]  # a new index: built at start

    started = time.monotonic()
    first = {h.path for h in hits(eng, "walrus")}
    took = time.monotonic() - started
    assert "memory/new.md" not in first  # answered from the current index...
    assert not any(d.reason == "search" for d in log.of(SyncDone))  # ...before the sync ended
    assert took < 30
    wait_until(lambda: "memory/new.md" in hit_paths(eng, "walrus"), what="search-triggered sync")
    assert "search" in reasons(log)


def test_search_syncs_only_when_dirty_also_without_a_watcher(watched, make_engine, workspace_dir):
    eng = make_engine(provider=None, sync=SyncSettings(watch=False, on_search=True))
    eng, svc, log = watched(eng)
    hits(eng, "anything")  # clean index: the search asks for nothing
    assert svc.state.queued == () and not svc.state.running and reasons(log) == ["missing"]
    write(workspace_dir, "memory/saved.md", "saved by an editor: ocelot\n")
    eng.mark_dirty()  # what an editor's save reports when nothing watches
    assert hit_paths(eng, "ocelot") == set()
    wait_until(lambda: hit_paths(eng, "ocelot") == {"memory/saved.md"}, what="search sync")
    assert reasons(log) == ["missing", "search"]


def test_interval_sync_without_a_watcher(watched, make_engine, workspace_dir):
    eng = make_engine(provider=None, sync=SyncSettings(watch=False, interval_minutes=0.01))
    eng, svc, log = watched(eng)
    assert not svc.state.watching
    write(workspace_dir, "memory/slow.md", "found by the interval: lynx\n")
    wait_until(lambda: hit_paths(eng, "lynx") == {"memory/slow.md"}, what="interval sync")
    assert "interval" in reasons(log)


def test_a_deleted_index_file_is_rebuilt(watched, workspace_dir):
    write(workspace_dir, "MEMORY.md", "the heron returns\n")
    eng, svc, log = watched()
    assert hit_paths(eng, "heron") == {"MEMORY.md"}
    log.clear()
    for suffix in ("", "-wal", "-shm"):
        Path(str(eng.index_path) + suffix).unlink(missing_ok=True)
    wait_until(lambda: "missing" in reasons(log), what="sync for the missing index")
    assert svc.wait_idle(60)
    assert eng.index_path.exists()
    assert hit_paths(eng, "heron") == {"MEMORY.md"}
    assert eng.db_integrity() == "ok"


def test_state_is_published_as_events(watched, workspace_dir):
    eng, svc, log = watched()
    write(workspace_dir, "memory/x.md", "state events\n")
    wait_until(lambda: "memory/x.md" in indexed(eng))
    assert svc.wait_idle(60)
    statuses = log.of(SyncStatus)
    assert any(s.dirty for s in statuses) and any(s.running for s in statuses)
    last = wait_until(lambda: [s for s in log.of(SyncStatus) if not s.dirty and s.last_done])
    assert last[-1].watching and last[-1].syncs_done == svc.state.syncs_done
    assert last[-1].last_done.at <= time.time()
    phases = {p.phase for p in log.of(SyncProgress)}
    assert {"scan", "write"} <= phases


# -- cancellation and shutdown ----------------------------------------------------------
def test_stop_cancels_a_full_reindex_and_leaves_the_old_index(make_engine, workspace_dir):
    for i in range(120):
        write(workspace_dir, f"memory/n{i:03d}.md", f"note {i} about falcons and kestrels\n")
    old = make_engine(provider=None)
    old.sync()
    assert old.search("falcons", old.default_options().with_(min_score=0)).results
    old.close()

    # New chunking: the start-up sync is a full reindex, slowed down by the embedder.
    eng = make_engine(provider=HashEmbedder(delay=0.5), chunking=ChunkingSettings(50, 0))
    log = EventLog()
    eng.bus.subscribe(log)
    svc = SyncService(eng, debounce=0.3, poll_interval=0.2)
    svc.start()
    wait_until(lambda: any(p.phase == "embed" for p in log.of(SyncProgress)), what="embedding")
    assert svc.state.running and svc.state.running_reason == "start"
    # Readers keep reading the old build while the new one is written.
    assert hit_paths(eng, "falcons") and svc.state.running
    assert svc.stop(timeout=30)
    assert not svc.state.running and not svc.state.started

    debris = [p.name for p in eng.index_path.parent.iterdir() if ".reindex-" in p.name]
    assert debris == []
    failed = log.of(SyncFailed)
    assert failed and "cancelled" in failed[-1].error and log.of(SyncDone) == []
    assert svc.state.last_error is None and svc.state.errors == ()
    assert eng.needs_full_reindex()  # the old build is still the live one
    assert eng.store.fts_search('"falcons"', 5, ["memory"])
    assert eng.db_integrity() == "ok"


def test_stop_does_not_hang_behind_another_writer(watched, make_engine, workspace_dir):
    eng, svc, log = watched()
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:  # another writer: a separate lock file descriptor
        with writer_lock(eng.index_path, timeout=5):
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        svc.request_sync("manual")
        wait_until(lambda: svc.state.running, what="sync waiting for the lock")
        assert svc.stop(timeout=20)
        assert [d.reason for d in log.of(SyncDone)] == ["missing"]  # the manual one never ran
        assert svc.state.last_error is None
    finally:
        release.set()
        holder.join()


def test_a_sync_error_is_reported_and_retried(watched, make_engine, workspace_dir):
    write(workspace_dir, "MEMORY.md", "retry me\n")
    eng = make_engine(provider=None, sync=NO_SEARCH_SYNC)
    original = eng.sync
    calls: list[str] = []

    def flaky_sync(**kwargs: Any) -> SyncDone:
        calls.append(kwargs["reason"])
        if len(calls) == 1:
            raise OSError("disk unavailable")
        return original(**kwargs)

    eng.sync = flaky_sync  # type: ignore[method-assign]
    eng, svc, _ = watched(eng, idle=False, retry_min=0.2)
    wait_until(lambda: svc.state.syncs_done >= 1, what="retried sync")
    assert calls[:2] == ["missing", "missing"]
    assert any("disk unavailable" in e for e in svc.state.errors)
    assert svc.state.last_error is None  # cleared by the successful retry
    assert hit_paths(eng, "retry") == {"MEMORY.md"}


def test_a_watched_edit_syncs_only_the_reported_files(watched, workspace_dir, monkeypatch):
    """After one listing sync, the watcher's file list is all a sync looks at; a folder
    change (no complete file list) makes the next sync list the workspace again."""
    write(workspace_dir, "memory/old.md", "The quince tree.\n")
    eng, svc, log = watched()
    assert [d.listed for d in log.of(SyncDone)] == [True]  # the start-up sync lists
    log.clear()

    calls: list[int] = []
    original = Workspace.list_files

    def counting(self):
        calls.append(1)
        return original(self)

    monkeypatch.setattr(Workspace, "list_files", counting)
    write(workspace_dir, "memory/new.md", "The kumquat grove.\n")
    wait_until(lambda: hit_paths(eng, "kumquat") == {"memory/new.md"}, what="new file")
    assert svc.wait_idle(60)
    done = log.of(SyncDone)
    assert done and not any(d.listed for d in done), done
    assert calls == []
    assert indexed(eng) == {"memory/old.md", "memory/new.md"}

    log.clear()
    write(workspace_dir, "memory/sub/deeper.md", "The loquat hedge.\n")  # a new folder
    wait_until(lambda: hit_paths(eng, "loquat") == {"memory/sub/deeper.md"}, what="new folder")
    assert svc.wait_idle(60)
    assert any(d.listed for d in log.of(SyncDone)) and calls
