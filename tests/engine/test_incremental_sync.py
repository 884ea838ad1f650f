"""Incremental sync from the watcher's list of changed files (no workspace listing).

``Workspace.memory_file`` must decide membership exactly as ``list_files`` does,
and ``Engine.sync(paths=...)`` must leave the index exactly as a listing sync
would, without calling ``list_files`` at all.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from watchfiles import Change

from engine.index.watch import _classify_all, build_watch_plan
from engine.openclaw.config import ExtraPathPattern
from engine.workspace.files import Workspace
from tests.engine_fixtures import write


def _tricky_workspace(root: Path, outside: Path) -> Workspace:
    for rel in (
        "MEMORY.md",
        "memory/2026-01-02.md",
        "memory/deep/er/note.MD",
        "memory/node_modules/pkg/readme.md",
        "memory/.git/x.md",
        "memory/deep/.venv/y.md",
        "memory/plain.txt",
        "notes.md",
        "kb/projects/a/plan.md",
        "kb/other/skip.md",
        "kb/a.md",
        "extra-file.md",
    ):
        write(root, rel, f"text of {rel}\n")
    write(outside, "linked/z.md", "outside\n")
    write(outside, "target.md", "outside file\n")
    os.symlink(outside / "linked", root / "memory" / "linkdir")
    os.symlink(outside / "target.md", root / "memory" / "link.md")
    os.symlink(outside / "linked", root / "kb" / "projects" / "viaLink")
    return Workspace(
        root,
        ["extra-file.md"],
        [ExtraPathPattern("kb", "projects/**"), ExtraPathPattern("kb", "a.md")],
    )


def _every_path(root: Path, outside: Path) -> list[Path]:
    out = []
    for top in (root, outside):
        for dirpath, dirnames, filenames in os.walk(top):  # follows no links
            for name in filenames + dirnames:
                out.append(Path(dirpath) / name)
    out += [root / "memory" / "linkdir" / "z.md", root / "kb/projects/viaLink/z.md"]
    out += [root / "memory" / "gone.md", root / "MEMORY.md" / "x.md"]
    return out


def test_memory_file_agrees_with_list_files_on_every_path(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    ws = _tricky_workspace(root, outside)
    listed = {f.abs: f for f in ws.list_files()}
    # the fixture really exercises the rules: some listed, some refused for each reason
    assert {f.rel for f in listed.values()} == {
        "MEMORY.md",
        "memory/2026-01-02.md",
        "memory/deep/er/note.MD",
        "kb/projects/a/plan.md",
        "kb/a.md",
        "extra-file.md",
    }
    checked = 0
    for path in _every_path(root, outside):
        one = ws.memory_file(path)
        assert one == listed.get(path), path
        checked += 1
    assert checked > 20


def test_watcher_reports_files_or_none_when_a_folder_changed(workspace_dir: Path) -> None:
    note = write(workspace_dir, "memory/a.md", "x")
    ws = Workspace(workspace_dir)
    plan = build_watch_plan(ws, None)
    relevant, replan, files = _classify_all(
        plan, [(Change.modified, str(note)), (Change.added, str(workspace_dir / "x.txt"))]
    )
    assert (relevant, replan, files) == (True, False, frozenset({note}))
    sub = workspace_dir / "memory" / "sub"
    sub.mkdir()
    relevant, replan, files = _classify_all(
        plan, [(Change.modified, str(note)), (Change.added, str(sub))]
    )
    assert (relevant, replan, files) == (True, True, None)


def _index_state(engine) -> tuple[dict, list]:
    files = {
        p: (r.hash, r.size, r.mtime, r.chunks, r.error) for p, r in engine.store.files().items()
    }
    chunks = engine.store.db.execute(
        "select path, start_line, end_line, hash, text from chunks order by path, start_line"
    )
    return files, chunks


def test_sync_with_paths_matches_a_listing_sync_and_lists_nothing(
    make_engine, workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = write(workspace_dir, "memory/a.md", "# A\nThe kiwi orchard opens in May.\n")
    b = write(workspace_dir, "memory/b.md", "# B\nMango notes.\n")
    write(workspace_dir, "memory/c.md", "# C\nUntouched papaya.\n")
    engine = make_engine(provider=None)
    first = engine.sync(reason="start")
    assert first.listed and first.files_indexed == 3

    a.write_text("# A\nNow it is about the lychee harvest.\n", encoding="utf-8")
    b.unlink()
    d = write(workspace_dir, "memory/d.md", "# D\nA new durian file.\n")
    txt = write(workspace_dir, "memory/e.txt", "not memory")

    def no_listing(self):  # the point of the feature: no walk over the workspace
        raise AssertionError("list_files called by an incremental sync")

    monkeypatch.setattr(Workspace, "list_files", no_listing)
    done = engine.sync(reason="watch", paths=[a, b, d])
    assert not done.listed
    assert (done.files_indexed, done.files_removed) == (2, 1)
    incremental = _index_state(engine)
    assert set(incremental[0]) == {"memory/a.md", "memory/c.md", "memory/d.md"}
    options = engine.default_options().with_(min_score=0)
    assert [r.path for r in engine.search("lychee", options).results] == ["memory/a.md"]
    assert engine.search("kiwi", options).results == []

    # a path that is not Markdown memory (here a .txt) cannot be judged alone: listing
    monkeypatch.undo()
    done = engine.sync(reason="watch", paths=[txt])
    assert done.listed and (done.files_indexed, done.files_removed) == (0, 0)
    # and the listing sync finds nothing the incremental one missed
    assert _index_state(engine) == incremental
