import datetime as dt
import os
from pathlib import Path

import pytest

from engine.workspace.files import (
    ExternalChangeError,
    PathRefused,
    UnreadableFile,
    Workspace,
    decode_text,
)
from tests.engine_fixtures import write


def test_lists_memory_files_and_ignores_the_rest(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "# m")
    write(tmp_path, "memory/2026-01-02.md", "day")
    write(tmp_path, "memory/gtd/NEXT.md", "next")
    write(tmp_path, "memory/node_modules/x.md", "ignored dir")
    write(tmp_path, "memory/notes.txt", "not markdown")
    write(tmp_path, "README.md", "not memory")
    ws = Workspace(tmp_path)
    files = {f.rel: f.kind for f in ws.list_files()}
    assert files == {
        "MEMORY.md": "memory",
        "memory/2026-01-02.md": "daily",
        "memory/gtd/NEXT.md": "note",
    }


def test_extra_paths_files_and_dirs_without_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "a.md", "a")
    write(outside, "sub/b.md", "b")
    write(tmp_path / "ws", "docs/c.md", "c")
    target = tmp_path / "secret"
    write(target, "s.md", "secret")
    os.symlink(target, outside / "link")
    os.symlink(target / "s.md", outside / "s-link.md")
    ws = Workspace(tmp_path / "ws", [str(outside), "docs/c.md"])
    rels = sorted(f.rel for f in ws.list_files())
    assert rels == sorted([str(outside / "a.md"), str(outside / "sub/b.md"), "docs/c.md"])
    assert all(f.kind == "extra" for f in ws.list_files())


def test_symlink_loop_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path, "memory/a.md", "a")
    os.symlink(tmp_path / "memory", tmp_path / "memory" / "loop")
    ws = Workspace(tmp_path)
    assert [f.rel for f in ws.list_files()] == ["memory/a.md"]


@pytest.mark.parametrize(
    "path",
    [
        "../etc/passwd.md",
        "memory/../../x.md",
        "/etc/hosts",
        "README.md",
        "memory/a.txt",
        "",
        "memory",
    ],
)
def test_resolve_refuses_non_memory_paths(tmp_path: Path, path: str) -> None:
    write(tmp_path, "README.md", "x")
    with pytest.raises(PathRefused):
        Workspace(tmp_path).resolve(path)


def test_resolve_refuses_symlink_out(tmp_path: Path) -> None:
    write(tmp_path, "elsewhere/secret.md", "s")
    (tmp_path / "memory").mkdir()
    os.symlink(tmp_path / "elsewhere" / "secret.md", tmp_path / "memory" / "s.md")
    with pytest.raises(PathRefused, match="symlink"):
        Workspace(tmp_path).resolve("memory/s.md")


def test_resolve_accepts_memory_files(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert ws.resolve("MEMORY.md") == tmp_path / "MEMORY.md"
    assert ws.resolve("memory/2026-01-01.md") == tmp_path / "memory" / "2026-01-01.md"
    assert ws.resolve(str(tmp_path / "memory" / "x" / "y.md")) == tmp_path / "memory/x/y.md"


def test_save_refuses_to_overwrite_an_external_change(tmp_path: Path) -> None:
    path = write(tmp_path, "MEMORY.md", "v1\n")
    ws = Workspace(tmp_path)
    doc = ws.read(path)
    path.write_text("changed elsewhere\n", encoding="utf-8")
    with pytest.raises(ExternalChangeError):
        ws.save(doc, "mine\n")
    assert path.read_text(encoding="utf-8") == "changed elsewhere\n"
    fresh = ws.read(path)
    saved = ws.save(fresh, "mine\n")
    assert path.read_text(encoding="utf-8") == "mine\n" and saved.sha256 != fresh.sha256


def test_append_entry_never_rewrites_earlier_content(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    now = dt.datetime(2026, 3, 15, 9, 5)
    path, line = ws.append_entry("first thing", now=now)
    assert path == tmp_path / "memory" / "2026-03-15.md"
    assert path.read_text().splitlines()[line - 1] == "## 09:05"
    before = path.read_bytes().rstrip(b"\n") + b"no newline at end"
    path.write_bytes(before)
    path2, line2 = ws.append_entry("second\nwith two lines", now=now.replace(hour=17, minute=30))
    data = path2.read_bytes()
    assert data.startswith(before)
    lines = data.decode().splitlines()
    assert lines[line2 - 1] == "## 17:30"
    assert lines[-2:] == ["second", "with two lines"]


def test_decode_reports_bad_utf8_and_binary() -> None:
    text, problem = decode_text("café".encode("latin-1"), "x.md")
    assert "\ufffd" in text and "not valid UTF-8" in (problem or "")
    with pytest.raises(UnreadableFile, match="binary"):
        decode_text(b"\x89PNG\x00\x00data", "img.md")
