"""The ``openclaw`` profile's own index: the workspace chunked as OpenClaw 2026.9.6
chunks it, in an in-memory FTS5 table, with its file listing and chunk ids.

Kept apart from memdeck's index (whose chunks differ); see
:mod:`engine.openclaw.profile` for the ranking that reads it.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.index.db import Database, DatabaseError
from engine.openclaw.chunking import (
    OPENCLAW_CHUNKING_VERSION,
    chunk_entries,
    is_per_entry_file,
    strip_annotation_carriers,
)
from engine.workspace.files import MAX_INDEX_BYTES
from engine.workspace.safe_open import open_beneath

#: keyword candidates per FTS5 query (OpenClaw's limit)
CANDIDATE_LIMIT = 200
_IMPORTANCE = re.compile(r"<!--\s*(trigger|importance|project)\s*:", re.I)
_SCHEMA = (
    "create table chunks (id text primary key, path text, source text, start_line integer,"
    " end_line integer, text text, importance integer, mtime_ms real)",
    "create virtual table chunks_fts using fts5(text, id unindexed, path unindexed,"
    " source unindexed, model unindexed, start_line unindexed, end_line unindexed)",
    "create virtual table paths_fts using fts5(path, source unindexed)",
)


@dataclass(frozen=True)
class ProfileChunk:
    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    importance: int | None
    mtime_ms: float


def chunk_id(source: str, path: str, start: int, end: int, digest: str, model: str) -> str:
    key = f"{source}:{path}:{start}:{end}:{digest}:{model}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _importance(lines: Sequence[str]) -> int | None:
    """Highest ``<!-- importance: N -->`` (1–10) on lines that end with ``-->``."""
    best: int | None = None
    for line in lines:
        if not line.rstrip().endswith("-->"):
            continue
        for match in _IMPORTANCE.finditer(line):
            closing = line.find("-->", match.end())
            if closing < 0:
                break
            value = line[match.end() : closing].strip()
            if match.group(1).lower() == "importance" and value.isascii() and value.isdigit():
                number = int(value)
                if 1 <= number <= 10:
                    best = number if best is None else max(best, number)
    return best


def list_openclaw_files(root: Path, extra_dirs: Iterable[Path] = ()) -> list[tuple[str, Path]]:
    """(relative path, absolute path) of every file 2026.9.6 indexes as memory."""
    out: list[tuple[str, Path]] = []
    seen: set[str] = set()

    def add(path: Path) -> None:
        try:
            if path.is_symlink() or not path.is_file() or not path.name.endswith(".md"):
                return
            key = os.path.realpath(path)
        except OSError:
            return
        if key in seen:
            return
        seen.add(key)
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            rel = os.path.relpath(path, root).replace(os.sep, "/")
        out.append((rel, path))

    add(root / "MEMORY.md")
    add(root / "USER.md")
    memory = root / "memory"
    for folder in (memory, *extra_dirs):
        if folder.is_symlink() or not folder.exists():
            continue
        if folder.is_file():
            add(folder)
            continue
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            dirnames[:] = [
                d
                for d in dirnames
                if d != ".openclaw-repair" and not (Path(dirpath) / d).is_symlink()
            ]
            found += [Path(dirpath) / n for n in filenames if n.endswith(".md")]
        for path in sorted(found, key=lambda p: str(p)):
            add(path)
    return out


class OpenClawIndex:
    """An in-memory FTS5 index of a workspace chunked the way 2026.9.6 chunks it.

    Kept apart from memdeck's own index (whose chunks differ) and never written
    to disk; it is rebuilt when a file's content or mtime changes. Its key
    includes :data:`OPENCLAW_CHUNKING_VERSION`, the profile's part of the index
    fingerprint.
    """

    def __init__(self, model: str = "fts-only"):
        self.model = model
        # the same SQLite (apsw) as memdeck's own index, in memory
        self.db = Database(":memory:")
        for statement in _SCHEMA:
            self.db.execute(statement)
        self.chunks: dict[str, ProfileChunk] = {}
        self.fingerprint: tuple[Any, ...] = ()
        self.lock = threading.Lock()

    def load(self, files: Sequence[tuple[str, str, float]]) -> None:
        """(relative path, content, mtime in ms) for every memory file."""
        digests = tuple(
            (rel, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), mtime)
            for rel, text, mtime in files
        )
        key = (OPENCLAW_CHUNKING_VERSION, self.model, *digests)
        with self.lock:
            if key == self.fingerprint:
                return
            for table in ("chunks", "chunks_fts", "paths_fts"):
                self.db.execute(f"delete from {table}")
            self.chunks = {}
            rows = []
            for rel, text, mtime in files:
                lines = text.replace("\r\n", "\n").split("\n")
                per_entry = is_per_entry_file(rel)
                for chunk, span in chunk_entries(
                    strip_annotation_carriers(text), per_entry=per_entry
                ):
                    cid = chunk_id(
                        "memory", rel, chunk.start_line, chunk.end_line, chunk.hash, self.model
                    )
                    start, end = span or (chunk.start_line, chunk.end_line)
                    importance = _importance(lines[start - 1 : end]) if rel == "MEMORY.md" else None
                    pc = ProfileChunk(
                        cid,
                        rel,
                        "memory",
                        chunk.start_line,
                        chunk.end_line,
                        chunk.text,
                        importance,
                        mtime,
                    )
                    if cid not in self.chunks:
                        self.chunks[cid] = pc
                        rows.append(pc)
            self.db.executemany(
                "insert into chunks values (?,?,?,?,?,?,?,?)",
                [
                    (
                        c.id,
                        c.path,
                        c.source,
                        c.start_line,
                        c.end_line,
                        c.text,
                        c.importance,
                        c.mtime_ms,
                    )
                    for c in rows
                ],
            )
            self.db.executemany(
                "insert into chunks_fts values (?,?,?,?,?,?,?)",
                [
                    (c.text, c.id, c.path, c.source, self.model, c.start_line, c.end_line)
                    for c in rows
                ],
            )
            self.db.executemany(
                "insert into paths_fts values (?, ?)",
                [(rel, "memory") for rel, _, _ in files if any(c.path == rel for c in rows)],
            )
            self.fingerprint = key

    def load_workspace(self, root: Path, extra_dirs: Iterable[Path] = ()) -> None:
        files = []
        for rel, path in list_openclaw_files(root, extra_dirs):
            # Read from the descriptor that was checked (no symlink followed, a
            # regular file) and never a file over memdeck's 10 MiB limit, whose
            # size comes from fstat before a byte is read. (OpenClaw reads any
            # size; a multi-GB note is memdeck's one departure from its ranking.)
            inside = path.is_relative_to(root)
            base, name = (root, rel) if inside else (path.parent, path.name)
            try:
                with open_beneath(base, name, shown=rel) as fh:
                    data = fh.read_all(MAX_INDEX_BYTES)
                    mtime = fh.mtime * 1000
            except (OSError, ValueError):  # refused, too large, vanished
                continue
            files.append((rel, data.decode("utf-8", errors="replace"), mtime))
        self.load(files)

    # -- retrieval ------------------------------------------------------------------
    def body_hits(self, match: str, limit: int = CANDIDATE_LIMIT) -> list[tuple[str, float]]:
        try:
            rows = self.db.execute(
                "select id, bm25(chunks_fts) as rank from chunks_fts where chunks_fts match ?"
                " order by rank asc limit ?",
                (match, limit),
            )
        except DatabaseError:
            return []
        return [(cid, rank) for cid, rank in rows if cid in self.chunks]

    def path_hits(self, match: str, limit: int = CANDIDATE_LIMIT) -> list[tuple[str, float]]:
        """(first chunk id of the path, bm25 rank) for paths matching *match*."""
        try:
            rows = self.db.execute(
                "select path, bm25(paths_fts) as rank from paths_fts where paths_fts match ?"
                " order by rank asc, path asc limit ?",
                (match, limit),
            )
        except DatabaseError:
            return []
        out = []
        for path, rank in rows:
            first = self.db.execute(
                "select id from chunks where path = ? order by start_line, end_line, id limit 1",
                (path,),
            )
            if first:
                out.append((first[0][0], rank))
        return out
