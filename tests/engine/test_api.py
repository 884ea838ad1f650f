"""The embedding facade, used only through ``engine`` / ``engine.api`` as a program would.

No test here reaches past the facade: workspaces are plain folders written by the
test, state lives in ``env`` (never the developer's home), and every answer is
checked through the records the facade returns. The complete example of
docs/embedding.md runs as a script and must print what the page says it prints.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine import Memory, SearchFailed, WorkspaceError, open_memory
from engine.api import (
    ConfigError,
    MemoryGetError,
    QueryRefused,
    SearchAnswer,
    SyncDone,
)

REPO = Path(__file__).resolve().parents[2]
NOTES = {
    "MEMORY.md": "# Memory\n\n- Dana prefers flat white coffee.\n- Miso takes methimazole.\n",
    "memory/2026-03-01.md": "# 2026-03-01\n\n- Atlas rollback plan drafted.\n- Coffee with Ravi.\n",
    "memory/2026-03-02.md": "".join(f"line {i}\n" for i in range(1, 301)),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "OPENCLAW_STATE_DIR": str(tmp_path / "state")}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return _write(tmp_path / "notes", NOTES)


@pytest.fixture
def memory(notes: Path, home: dict[str, str]):
    with open_memory(notes, embeddings="off", env=home, client="pytest-api") as m:
        yield m


def test_search_get_status_through_the_facade(memory: Memory, notes: Path) -> None:
    assert isinstance(memory, Memory) and memory.workspace == notes
    answer = memory.search("rollback plan")  # the first search builds the index
    assert isinstance(answer, SearchAnswer) and answer.mode == "fts"
    top = answer.results[0]
    assert (top.path, top.start_line, top.end_line) == ("memory/2026-03-01.md", 1, 4)
    assert top.citation == "memory/2026-03-01.md#L1-L4"
    assert answer.to_json()["results"][0]["citation"] == top.citation

    page = memory.get(top.path, top.start_line, top.end_line - top.start_line + 1)
    assert page.text == NOTES[top.path].removesuffix("\n")
    assert (page.from_, page.lines, page.truncated) == (1, 4, None)

    long = memory.get("memory/2026-03-02.md", lines=50)
    assert (long.lines, long.truncated, long.next_from) == (50, True, 51)
    past = memory.get("memory/2026-03-02.md", from_line=301)
    assert (past.text, past.lines) == ("", 0)

    status = memory.status()
    assert (status.files, status.mode, status.dirty) == (3, "fts", False)
    assert status.chunks >= 3
    assert status.workspace == str(notes) and status.recall and status.recall.searches == 1

    explained = memory.search("coffee", max_results=1, min_score=0, explain=True)
    assert len(explained.results) == 1 and explained.results[0].breakdown is not None
    assert explained.explain is not None and "dropped" in explained.explain


def test_bad_arguments_and_refused_reads_raise(memory: Memory) -> None:
    with pytest.raises(QueryRefused):
        memory.search("x" * 4097)
    with pytest.raises(ValueError, match="max_results"):
        memory.search("coffee", max_results=0)
    with pytest.raises(ValueError, match="min_score"):
        memory.search("coffee", min_score=1.5)
    for kwargs in ({"from_line": 0}, {"lines": 0}, {"from_char": -1}):
        with pytest.raises(ValueError):
            memory.get("MEMORY.md", **kwargs)
    with pytest.raises(MemoryGetError) as refused:
        memory.get("../outside.md")
    assert refused.value.answer.error and refused.value.answer.text == ""
    with pytest.raises(MemoryGetError, match="no such memory file"):
        memory.get("memory/2026-02-30.md")


def test_sync_events_and_unsubscribe(memory: Memory, notes: Path) -> None:
    seen: list[object] = []
    unsubscribe = memory.subscribe(seen.append)
    done = memory.sync()
    assert isinstance(done, SyncDone) and done.files_indexed == 3
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "SyncStarted" and kinds[-1] == "SyncDone"
    unsubscribe()
    count = len(seen)
    _write(notes, {"memory/2026-03-03.md": "# 2026-03-03\n\n- Quokka sighting.\n"})
    assert memory.sync().files_indexed == 1
    assert len(seen) == count  # unsubscribed: nothing more arrives
    assert memory.search("quokka").results[0].path == "memory/2026-03-03.md"
    assert memory.sync(force=True).full


def test_watch_keeps_the_index_fresh(memory: Memory, notes: Path) -> None:
    synced = threading.Event()
    memory.subscribe(lambda e: synced.set() if type(e).__name__ == "SyncDone" else None)
    memory.watch()
    assert synced.wait(30)
    synced.clear()
    _write(notes, {"memory/2026-03-04.md": "# 2026-03-04\n\n- Platypus at the river.\n"})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if [h.path for h in memory.search("platypus").results] == ["memory/2026-03-04.md"]:
            break
        synced.wait(0.5)
        synced.clear()
    else:
        raise AssertionError("the watcher never indexed the new file")


def test_close_is_final_and_idempotent(notes: Path, home: dict[str, str]) -> None:
    memory = open_memory(notes, embeddings="off", env=home)
    memory.watch()
    memory.close()
    memory.close()
    assert memory.closed
    for call in (memory.status, memory.sync, lambda: memory.search("coffee")):
        with pytest.raises(RuntimeError, match="closed"):
            call()


def test_read_only_never_writes(notes: Path, home: dict[str, str], tmp_path: Path) -> None:
    with open_memory(notes, embeddings="off", env=home, read_only=True) as memory:
        with pytest.raises(SearchFailed) as failed:
            memory.search("coffee")
        assert "memdeck index" in failed.value.unavailable.error
        with pytest.raises(RuntimeError):
            memory.sync()
        with pytest.raises(RuntimeError, match="read_only"):
            memory.watch()
        assert memory.get("MEMORY.md").text.startswith("# Memory")
    assert not (tmp_path / "state").exists()
    with open_memory(notes, embeddings="off", env=home) as writer:
        writer.sync()
    with open_memory(notes, embeddings="off", env=home, read_only=True) as memory:
        assert memory.search("coffee").results


def test_opening_errors_name_the_problem(tmp_path: Path, home: dict[str, str]) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        open_memory(tmp_path / "nowhere", env=home)
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(WorkspaceError):
        open_memory(tmp_path / "a-file", env=home)
    bad = tmp_path / "openclaw.json"
    bad.write_text("{ agents: ,, }")
    with pytest.raises(ConfigError, match="JSON5 syntax error at line 1"):
        open_memory(tmp_path, config=bad, env=home)


def test_the_openclaw_profile(notes: Path, home: dict[str, str]) -> None:
    with open_memory(notes, embeddings="off", env=home, profile="openclaw") as memory:
        answer = memory.search("rollback plan")
        assert answer.profile == "openclaw"
        top = answer.results[0]
        # OpenClaw 2026.9.6's own numbering: its last chunk ends one past a final newline
        assert (top.path, top.start_line, top.end_line) == ("memory/2026-03-01.md", 1, 5)
        assert memory.get("memory/2026-03-02.md", from_line=400).to_json()["status"] == "ok"


def _documented_example() -> tuple[str, str]:
    page = (REPO / "docs" / "embedding.md").read_text(encoding="utf-8")
    section = page.split("## A complete example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    output = re.search(r"It prints:\n\n```text\n(.*?)```", section, re.S)
    assert code and output
    return code[1], output[1]


@pytest.mark.subprocess
def test_the_documented_example_runs_and_prints_what_the_page_says(
    tmp_path: Path, home: dict[str, str]
) -> None:
    code, expected = _documented_example()
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", **home}
    r = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected
