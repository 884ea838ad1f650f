"""Reads outside the memory files, performed for real.

Each test carries out the attack on a real filesystem: a thread swapping a file
and a symlink while the indexer and memory_get run, a real hard link, a real
FIFO, a folder swapped for a link under the editor's save, qmd paths outside a
collection's pattern. What is asserted is that the outside text is never
indexed, served or written, and that the refusal names the reason.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config.loader import load_settings
from engine.core import Engine
from engine.index.indexer import Indexer, memory_source_files
from engine.tools import memory_get
from engine.workspace.files import PathRefused, Workspace
from engine.workspace.safe_open import open_beneath
from tests.cli_process import cli_env, run_cli

SECRET = "OUTSIDEZEBRA private text that must never be indexed"
INSIDE = "insidealpha ordinary memory note that is fine to index"


def indexed_text(engine: Engine) -> str:
    rows = engine.store.db.execute("select text from chunks")
    return "\n".join(str(r[0]) for r in rows)


def _same_size(text: str, size: int) -> bytes:
    data = text.encode()
    return (data + b" " * size)[:size]


@pytest.mark.slow
def test_symlink_swap_racing_the_indexer_and_memory_get(
    make_engine: Callable[..., Engine], workspace_dir: Path, tmp_path: Path
) -> None:
    """A thread swaps memory/race-x.md between a regular file and a symlink to an
    outside file (same size, same mtime when regular) for a bounded time while
    syncs and memory_get run; the outside text is never indexed nor served."""
    outside = tmp_path / "outside" / "secret.md"
    outside.parent.mkdir()
    outside.write_bytes(SECRET.encode())
    size = len(SECRET.encode())
    target = workspace_dir / "memory" / "race-x.md"
    target.write_bytes(_same_size(INSIDE, size))
    mtime = target.stat().st_mtime
    engine = make_engine()
    engine.sync()
    stop = threading.Event()
    swaps = [0]

    def swapper() -> None:
        link_tmp = target.with_name(".race-link")
        file_tmp = target.with_name(".race-file")
        while not stop.is_set():
            with_link = link_tmp
            if with_link.exists() or with_link.is_symlink():
                with_link.unlink()
            os.symlink(outside, with_link)
            os.replace(with_link, target)
            file_tmp.write_bytes(_same_size(INSIDE, size))
            os.utime(file_tmp, (mtime, mtime))
            os.replace(file_tmp, target)
            swaps[0] += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    syncs = gets = 0
    served: list[str] = []
    deadline = time.monotonic() + 4.0
    try:
        while time.monotonic() < deadline:
            engine.sync()
            syncs += 1
            assert "OUTSIDEZEBRA" not in indexed_text(engine)
            for _ in range(5):
                answer = memory_get(engine, "memory/race-x.md")
                gets += 1
                served.append(answer.get("text", "") + answer.get("error", ""))
    finally:
        stop.set()
        thread.join(10)
    assert swaps[0] > 20 and syncs > 3 and gets > 15  # the race really ran
    assert not any("OUTSIDEZEBRA" in s for s in served)
    # refusals name the reason (some reads met the symlink)
    assert any("symlinks are not followed" in s for s in served)
    # after the race, with the regular file back (same size and mtime), syncs
    # converge on the inside text and never serve the outside one
    engine.sync()
    engine.sync()
    assert "OUTSIDEZEBRA" not in indexed_text(engine)
    assert "insidealpha" in indexed_text(engine)
    hits = engine.search("OUTSIDEZEBRA").results
    assert all("OUTSIDEZEBRA" not in h.text for h in hits)


def test_file_swapped_for_a_symlink_after_listing_is_refused(
    make_engine: Callable[..., Engine], workspace_dir: Path, tmp_path: Path
) -> None:
    """The race made deterministic: the listing sees a regular file, then the file
    becomes a symlink before the indexer reads it."""
    outside = tmp_path / "secret.md"
    outside.write_text(SECRET)
    target = workspace_dir / "memory" / "late.md"
    target.write_text(INSIDE)
    engine = make_engine()
    listing = memory_source_files(engine.workspace)  # lstat: a regular file
    target.unlink()
    os.symlink(outside, target)
    done = Indexer(engine.store, None, engine.ms).sync(listing)
    assert "OUTSIDEZEBRA" not in indexed_text(engine)
    assert any("late.md: symlinks are not followed" in e for e in done.errors)
    assert engine.store.files()["memory/late.md"].error.endswith("(memory/late.md)")


def test_hard_link_to_an_outside_file_is_not_read(
    make_engine: Callable[..., Engine], workspace_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text(SECRET)
    os.link(outside, workspace_dir / "memory" / "hard.md")
    (workspace_dir / "MEMORY.md").write_text(INSIDE)
    engine = make_engine()
    engine.sync()
    assert "OUTSIDEZEBRA" not in indexed_text(engine)
    assert "insidealpha" in indexed_text(engine)
    err = engine.store.files()["memory/hard.md"].error
    assert err is not None and "2 hard links" in err
    answer = memory_get(engine, "memory/hard.md")
    assert answer["text"] == "" and "2 hard links" in answer["error"]


def test_fifo_never_blocks(make_engine: Callable[..., Engine], workspace_dir: Path) -> None:
    fifo = workspace_dir / "memory" / "fifo.md"
    os.mkfifo(fifo)
    (workspace_dir / "MEMORY.md").write_text(INSIDE)
    engine = make_engine()
    answers: list[dict] = []
    stale = [
        f.__class__(
            "memory/fifo.md", fifo, "memory", 0, 0.0, base=workspace_dir
        )  # a listing that saw a regular file there a moment ago
        for f in memory_source_files(engine.workspace)[:1]
    ]
    done: list[object] = []

    def work() -> None:
        answers.append(memory_get(engine, "memory/fifo.md"))
        done.append(Indexer(engine.store, None, engine.ms).sync(stale))
        engine.sync()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(30)  # the guard: a blocking open would hang here, not forever
    if thread.is_alive():  # unblock the reader so the test process can end
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("reading a FIFO blocked")
    assert "is a FIFO" in answers[0]["error"]
    assert any("is a FIFO" in e for e in done[0].errors)  # type: ignore[attr-defined]


def test_get_refuses_bad_paths_with_an_error_not_an_exception(
    make_engine: Callable[..., Engine], workspace_dir: Path
) -> None:
    (workspace_dir / "memory" / "dir.md").mkdir()
    (workspace_dir / "memory" / "bin.md").write_bytes(b"\x00\x01\x02binary")
    engine = make_engine()
    cases = {
        "memory/a\x00b.md": "NUL byte",
        "memory/dir.md": "is a folder",
        "memory/bin.md": "looks binary",
        "memory/" + "n" * 300 + ".md": "the limit is 255",
        "memory/missing.md": "no such memory file",
    }
    for path, reason in cases.items():
        answer = memory_get(engine, path)
        assert reason in answer["error"], (path, answer)
        assert answer["text"] == ""


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("memory/dir.md", "is a folder"),
        ("memory/bin.md", "looks binary"),
        ("memory/" + "n" * 300 + ".md", "the limit is 255"),
        ("memory/fifo.md", "is a FIFO"),
    ],
)
def test_cli_get_bad_paths_exit_1(tmp_path: Path, path: str, reason: str) -> None:
    ws = tmp_path / "ws"
    (ws / "memory" / "dir.md").mkdir(parents=True)
    (ws / "memory" / "bin.md").write_bytes(b"\x00\x01binary")
    os.mkfifo(ws / "memory" / "fifo.md")
    state = tmp_path / "state"
    state.mkdir()
    proc = run_cli("get", path, "--workspace", str(ws), env=cli_env(state))
    assert proc.returncode == 1, proc.stderr
    assert reason in proc.stderr


def test_editor_save_never_writes_through_a_swapped_folder(
    workspace_dir: Path, tmp_path: Path
) -> None:
    """Between open and save, memory/sub becomes a symlink to an outside folder:
    the save refuses and the outside folder is untouched."""
    sub = workspace_dir / "memory" / "sub"
    sub.mkdir()
    (sub / "note.md").write_text("hello\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "note.md").write_text("hello\n")
    ws = Workspace(workspace_dir)
    doc = ws.read(ws.resolve("memory/sub/note.md"))
    (sub / "note.md").unlink()
    sub.rmdir()
    os.symlink(outside, sub)
    with pytest.raises(PathRefused, match="symlinks are not followed"):
        ws.save(doc, "overwritten\n")
    assert (outside / "note.md").read_text() == "hello\n"
    assert sorted(p.name for p in outside.iterdir()) == ["note.md"]  # no temp file left


def test_editor_save_and_append_stay_in_the_workspace(workspace_dir: Path) -> None:
    ws = Workspace(workspace_dir)
    path = ws.resolve("memory/topic.md")
    doc = ws.read(path)
    assert not doc.exists
    saved = ws.save(doc, "first\n")
    assert path.read_text() == "first\n" and saved.exists
    with pytest.raises(Exception, match="changed on disk"):
        ws.save(doc, "stale\n")
    import datetime as dt

    now = dt.datetime(2026, 3, 15, 9, 30)
    p, line = ws.append_entry("one", now)
    p2, line2 = ws.append_entry("two", now)
    assert p == p2 and p.read_text() == "# 2026-03-15\n\n## 09:30\n\none\n\n## 09:30\n\ntwo\n"
    assert (line, line2) == (3, 7)
    assert p.read_text().splitlines()[line2 - 1] == "## 09:30"


def test_append_refuses_a_symlinked_daily_log(workspace_dir: Path, tmp_path: Path) -> None:
    import datetime as dt

    outside = tmp_path / "outside.md"
    outside.write_text("outside\n")
    os.symlink(outside, workspace_dir / "memory" / "2026-03-15.md")
    ws = Workspace(workspace_dir)
    with pytest.raises(PathRefused, match="symlinks are not followed"):
        ws.append_entry("x", dt.datetime(2026, 3, 15, 9, 30))
    assert outside.read_text() == "outside\n"


def test_open_beneath_refuses_a_symlinked_folder_component(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x.md").write_text(SECRET)
    os.symlink(tmp_path / "out", base / "link")
    with pytest.raises(PathRefused, match=r"symlinks are not followed \(link\)"):
        open_beneath(base, "link/x.md")


def _qmd_engine(root: Path) -> Engine:
    ws = root / "ws"
    (ws / "memory" / "x").mkdir(parents=True)
    (ws / "notes").mkdir()
    (ws / "MEMORY.md").write_text("root memory\n")
    (ws / "AGENTS.md").write_text(SECRET)
    (ws / "notes" / "private.md").write_text(SECRET)
    (ws / "memory" / "x" / "ok.md").write_text("deep note\n")
    state = root / "state"
    state.mkdir()
    config = state / "openclaw.json"
    block = {"command": str(root / "not-installed" / "qmd"), "update": {"onBoot": False}}
    config.write_text(json.dumps({"memory": {"backend": "qmd", "qmd": block}}))
    env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(root / "home"), "PATH": "/usr/bin:/bin"}
    settings = load_settings(config_path=config, workspace=ws, env=env)
    return Engine(settings, provider=None, env=env)


def test_qmd_paths_obey_the_collection_pattern_and_memory_rules(tmp_path: Path) -> None:
    """qmd is not installed: the qmd/<collection>/<path> form still refuses files
    its collection does not index."""
    engine = _qmd_engine(tmp_path)
    try:
        refused = {
            "qmd/memory-root/AGENTS.md": "pattern is 'MEMORY.md'",
            "qmd/memory-dir/notes/private.md": "pattern is 'memory/**/*.md'",
            "qmd/memory-alt/MEMORY.md": "pattern is 'memory.md'",
        }
        for path, reason in refused.items():
            answer = memory_get(engine, path)
            assert reason in answer["error"], (path, answer)
            assert "OUTSIDEZEBRA" not in answer["text"]
        assert memory_get(engine, "qmd/memory-root/MEMORY.md")["text"] == "root memory"
        assert memory_get(engine, "qmd/memory-dir/memory/x/ok.md")["text"] == "deep note"
    finally:
        engine.close()


def test_dreaming_and_promotion_read_like_the_indexer(
    make_engine: Callable[..., Engine], workspace_dir: Path, tmp_path: Path
) -> None:
    """Dreaming's readers use the checked descriptor and the size limit too: a 3 GB
    daily log is skipped from its size (not read into memory), and promotion
    refuses to rewrite a MEMORY.md that is a symlink to an outside file (it would
    otherwise copy the outside text into the workspace)."""
    import datetime as dt

    from engine.memory.dreaming.config import DreamingSettings
    from engine.memory.dreaming.entries import Entry
    from engine.memory.dreaming.light import Candidate
    from engine.memory.dreaming.promotion import PromotionError, preview
    from engine.memory.dreaming.service import Dreamer

    memory = workspace_dir / "memory"
    (memory / "2026-03-03.md").write_text(f"- {INSIDE}\n")
    with open(memory / "2026-03-02.md", "wb") as fh:  # 3 GB by size, a few bytes of text
        fh.write(b"- huge entry at the start of a 3 GB log\n")
        fh.truncate(3 * 2**30)
    dreamer = Dreamer(make_engine(None), config=DreamingSettings(timezone="UTC"))
    texts = [e.text for e in dreamer.daily_entries()]
    assert any("insidealpha" in t for t in texts), texts
    assert not any("huge entry" in t for t in texts)
    outside = tmp_path / "outside.md"
    outside.write_text(f"# Outside\n\n{SECRET}\n")
    (workspace_dir / "MEMORY.md").symlink_to(outside)
    entry = Entry("memory/2026-03-03.md", "daily", 1, 1, INSIDE, dt.date(2026, 3, 3))
    with pytest.raises(PromotionError, match="symlinks are not followed"):
        preview(workspace_dir, Candidate(entry, [entry]), dt.date(2026, 3, 4))
    assert outside.read_text() == f"# Outside\n\n{SECRET}\n"


def test_append_writes_text_only(workspace_dir: Path) -> None:
    """Line ends become ``\\n``; a control character is refused before anything is
    written (a NUL makes the whole log look binary); a folder where today's log goes
    is refused by name."""
    import datetime as dt

    ws = Workspace(workspace_dir)
    at = dt.datetime(2026, 3, 15, 9, 30)
    log = workspace_dir / "memory" / "2026-03-15.md"
    ws.append_entry("first\r\nsecond\rthird", at)
    before = log.read_bytes()
    assert before.endswith(b"\n\nfirst\nsecond\nthird\n") and b"\r" not in before
    for text, code in (("a\x00b", "U+0000"), ("\x1b[31mred", "U+001B")):
        with pytest.raises(ValueError, match=re.escape(f"control character ({code})")):
            ws.append_entry(text, at)
    assert log.read_bytes() == before
    log.unlink()
    log.mkdir()
    with pytest.raises(PathRefused, match="is a folder, not a memory file"):
        ws.append_entry("x", at)


def test_an_editor_save_keeps_the_files_bom_and_a_recreated_file_is_readable(
    workspace_dir: Path,
) -> None:
    """``read`` drops a UTF-8 byte-order mark from the text; ``save`` keeps it in the
    file. A memory file deleted since it was opened and saved again ("overwrite") gets
    a new file's usual mode, not the temp file's 0600."""
    ws = Workspace(workspace_dir)
    path = workspace_dir / "memory" / "bom.md"
    path.write_bytes(b"\xef\xbb\xbf# BOM\nline two\n")
    doc = ws.read(path)
    assert not doc.text.startswith("\ufeff")
    ws.save(doc, doc.text.replace("line two", "line two, edited"))
    assert path.read_bytes() == b"\xef\xbb\xbf# BOM\nline two, edited\n"
    mem = workspace_dir / "MEMORY.md"
    mem.write_text("# Memory\n")
    old = ws.read(mem)
    mem.unlink()
    gone = ws.read(mem)
    ws.save(gone, old.text + "- kept\n")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(mem.stat().st_mode) == 0o666 & ~umask
