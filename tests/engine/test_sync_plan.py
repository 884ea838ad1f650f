"""The watch plan: which folders are watched and which changes matter (no watcher runs)."""

from __future__ import annotations

import os
from pathlib import Path

from watchfiles import Change

from engine.index.watch import build_watch_plan, plan_signature
from engine.workspace.files import Workspace
from tests.engine_fixtures import write


def test_plan_watches_real_folders_only(workspace_dir: Path, tmp_path: Path) -> None:
    write(workspace_dir, "memory/a/b/c.md", "x")
    for ignored in (".git", "node_modules", "venv", ".tox"):
        (workspace_dir / "memory" / ignored / "inner").mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    os.symlink(outside, workspace_dir / "memory" / "link")
    extra_dir = tmp_path / "extra"
    (extra_dir / "sub").mkdir(parents=True)
    extra_file = tmp_path / "single.md"
    extra_file.write_text("y")
    ws = Workspace(workspace_dir, [str(extra_dir), str(extra_file), "missing-dir"])
    plan = build_watch_plan(ws, tmp_path / "sessions")
    mem = workspace_dir / "memory"
    assert plan.dirs == {
        workspace_dir,
        mem,
        mem / "a",
        mem / "a" / "b",
        extra_dir,
        extra_dir / "sub",
        tmp_path,  # the folder of the single extra file
    }
    assert plan.files >= {workspace_dir / "MEMORY.md", workspace_dir / "memory.md", extra_file}
    assert plan.sessions == tmp_path / "sessions"  # not watched: it does not exist yet
    assert tmp_path / "sessions" not in plan.dirs


def test_classify_says_what_matters(workspace_dir: Path, tmp_path: Path) -> None:
    write(workspace_dir, "memory/sub/note.md", "x")
    (workspace_dir / "memory" / "newdir").mkdir()
    os.symlink(tmp_path, workspace_dir / "memory" / "ln.md")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    plan = build_watch_plan(Workspace(workspace_dir), sessions)
    mem = workspace_dir / "memory"
    cases = {
        (Change.modified, mem / "sub" / "note.md"): (True, False),
        (Change.deleted, mem / "gone.md"): (True, False),  # deleted: judged by its name
        (Change.added, mem / "NOTES.MD"): (True, False),
        (Change.added, mem / "scratch.txt"): (False, False),
        (Change.added, mem / ".note.md.123.tmp"): (False, False),  # atomic-write temp file
        (Change.added, mem / "ln.md"): (False, False),  # symlinks are never followed
        (Change.added, mem / "newdir"): (True, True),  # a new folder: re-plan
        (Change.deleted, mem / "sub"): (True, True),  # a watched folder went away
        (Change.modified, mem / "sub"): (False, False),  # folder mtime only
        (Change.added, mem / ".git"): (False, False),
        (Change.modified, workspace_dir / "MEMORY.md"): (True, False),
        (Change.modified, workspace_dir / "README.md"): (False, False),
        (Change.deleted, mem): (True, True),
        (Change.added, sessions / "abc.jsonl"): (True, False),
        (Change.modified, sessions / "sessions.json"): (False, False),
        (Change.added, tmp_path / "elsewhere.md"): (False, False),
    }
    for (change, path), expected in cases.items():
        assert plan.classify(change, str(path)) == expected, (change, path)


def test_signature_changes_when_an_anchor_appears_or_is_replaced(workspace_dir: Path) -> None:
    ws = Workspace(workspace_dir)
    before = plan_signature(ws, None)
    assert before == plan_signature(ws, None)
    (workspace_dir / "memory").rmdir()
    gone = plan_signature(ws, None)
    assert gone != before
    (workspace_dir / "memory").mkdir()
    assert plan_signature(ws, None) != gone
