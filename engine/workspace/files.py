"""The Markdown files of one agent workspace: listing, safe paths, reads, writes.

The files are the source of truth; the index is derived. Everything here keeps
that promise: writes are atomic and refuse to overwrite a file that changed on
disk since it was read, appends never touch earlier content, and path checks
refuse anything outside the memory files (``../``, symlinks, other files).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.config.openclaw_2026_9 import ExtraPathPattern
from engine.workspace.dates import date_from_path
from engine.workspace.globs import matches_glob

IGNORED_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox"})
ROOT_MEMORY_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
#: Files larger than this are listed but not indexed (status shows why).
MAX_INDEX_BYTES = 10 * 1024 * 1024
_BINARY_SNIFF = 8192


class PathRefused(ValueError):
    """A path is not one of the workspace's memory files."""


class ExternalChangeError(RuntimeError):
    """The file changed on disk after it was read; saving would lose that change."""


class UnreadableFile(ValueError):
    """The file cannot be indexed as text (binary, too large)."""


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One indexable file. ``rel`` is the id used in the index and in results."""

    rel: str
    abs: Path
    kind: str  # "memory" (MEMORY.md), "daily", "note" (other memory/**), "extra"
    size: int
    mtime: float

    @property
    def date(self) -> dt.date | None:
        return date_from_path(self.rel) if self.kind == "daily" else None


@dataclass(frozen=True, slots=True)
class Document:
    """A file's text with what is needed to detect a later external change."""

    path: Path
    text: str
    sha256: str
    exists: bool
    decode_error: str | None = None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode_text(data: bytes, name: str = "") -> tuple[str, str | None]:
    """UTF-8 text of a file; invalid bytes become U+FFFD and are reported, never fatal."""
    if b"\x00" in data[:_BINARY_SNIFF]:
        raise UnreadableFile(f"{name or 'file'}: looks binary (NUL bytes), not indexed")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        return text, f"{name or 'file'}: not valid UTF-8 at byte {exc.start}; indexed with U+FFFD"


def _is_symlink(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


class Workspace:
    """A workspace folder plus the extra paths configured for it."""

    def __init__(
        self,
        root: Path,
        extra_paths: Sequence[str] = (),
        extra_patterns: Sequence[ExtraPathPattern] = (),
    ):
        self.root = Path(os.path.abspath(Path(root).expanduser()))
        plain = tuple(self._absolute(p) for p in extra_paths)
        #: folder -> globs its files must match (2026.9's {path, pattern} entries);
        #: a folder also listed as a plain path keeps all its files
        self.extra_patterns: dict[Path, tuple[str, ...]] = {}
        for entry in extra_patterns:
            folder = self._absolute(entry.path)
            if folder not in plain:
                self.extra_patterns[folder] = (*self.extra_patterns.get(folder, ()), entry.pattern)
        self.extra_paths: tuple[Path, ...] = plain + tuple(
            p for p in self.extra_patterns if p not in plain
        )

    def _absolute(self, text: str) -> Path:
        path = os.path.expanduser(text)
        return Path(os.path.abspath(path if os.path.isabs(path) else self.root / path))

    def _pattern_allows(self, extra: Path, path: str) -> bool:
        """A file found under *extra* passes that folder's globs (if it has any)."""
        globs = self.extra_patterns.get(extra)
        if not globs:
            return True
        rel = os.path.relpath(path, extra).replace(os.sep, "/")
        return any(matches_glob(rel, g) for g in globs)

    # -- naming ---------------------------------------------------------------
    def rel(self, path: Path) -> str:
        """Workspace-relative POSIX path when inside the workspace, else absolute."""
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return Path(path).as_posix()

    def classify(self, rel: str) -> str:
        if rel in ROOT_MEMORY_FILES:
            return "memory"
        if rel.startswith(MEMORY_DIR + "/"):
            return "daily" if date_from_path(rel) else "note"
        return "extra"

    # -- listing --------------------------------------------------------------
    def list_files(self) -> list[MemoryFile]:
        """All memory files, sorted, without following symlinks, deduplicated."""
        seen: set[str] = set()
        out: list[MemoryFile] = []
        root = str(self.root) + os.sep

        def add(path: str) -> None:
            # One lstat per file: a symlink's own mode is not S_ISREG, so links are
            # skipped without a second call. Plain strings until the file is kept,
            # which keeps a listing of 100k-chunk workspaces (18k files) cheap.
            if path in seen:
                return
            try:
                st = os.lstat(path)
            except OSError:
                return
            if not stat.S_ISREG(st.st_mode):
                return
            seen.add(path)
            if path.startswith(root):
                rel = path[len(root) :].replace(os.sep, "/")
            else:
                rel = self.rel(Path(path))
            out.append(MemoryFile(rel, Path(path), self.classify(rel), st.st_size, st.st_mtime))

        for name in ROOT_MEMORY_FILES:
            add(root + name)
        mem_dir = self.root / MEMORY_DIR
        if mem_dir.is_dir() and not _is_symlink(mem_dir):
            for path in _walk_markdown(mem_dir):
                add(path)
        for extra in self.extra_paths:
            if _is_symlink(extra) or any(_is_symlink(p) for p in _parents_below(extra, self.root)):
                continue
            if extra.is_dir():
                for path in _walk_markdown(extra):
                    if self._pattern_allows(extra, path):
                        add(path)
            elif extra.suffix.lower() == ".md" and extra.is_file():
                add(str(extra))
        out.sort(key=lambda f: f.rel)
        return out

    def list_extra_files(self, suffixes: tuple[str, ...]) -> list[MemoryFile]:
        """Files under extraPaths with one of ``suffixes`` (images/audio for multimodal
        indexing); same rules as Markdown: no symlinks, ignored dirs skipped."""
        wanted = tuple(s.lower() for s in suffixes)
        out: dict[Path, MemoryFile] = {}
        for extra in self.extra_paths:
            if _is_symlink(extra) or any(_is_symlink(p) for p in _parents_below(extra, self.root)):
                continue
            if extra.is_dir():
                found: list[Path] = []
                for dirpath, dirnames, filenames in os.walk(extra, followlinks=False):
                    dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
                    found += [Path(dirpath) / n for n in filenames if n.lower().endswith(wanted)]
            else:
                found = [extra] if extra.name.lower().endswith(wanted) else []
            for path in found:
                if not self._pattern_allows(extra, str(path)):
                    continue
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and path not in out:
                    rel = self.rel(path)
                    out[path] = MemoryFile(rel, path, "extra", st.st_size, st.st_mtime)
        return sorted(out.values(), key=lambda f: f.rel)

    def watch_roots(self) -> list[Path]:
        """Paths a file watcher should observe (existing ones only)."""
        roots = [self.root / n for n in ROOT_MEMORY_FILES] + [self.root / MEMORY_DIR]
        roots += list(self.extra_paths)
        return [p for p in roots if p.exists()]

    # -- safe path resolution -------------------------------------------------
    def resolve(self, user_path: str) -> Path:
        """Map a path from a tool call or the CLI to a memory file, or refuse it.

        Accepts workspace-relative paths and absolute paths of memory files.
        Refuses ``..`` components, non-``.md`` files, files outside MEMORY.md /
        memory/ / extraPaths, and any symlink on the way.
        """
        if not user_path or not user_path.strip():
            raise PathRefused("empty path")
        raw = user_path.strip().replace("\\", "/")
        if any(part == ".." for part in raw.split("/")):
            raise PathRefused(f"{user_path}: '..' is not allowed in memory paths")
        candidate = Path(raw) if os.path.isabs(raw) else self.root / raw
        candidate = Path(os.path.normpath(candidate))
        if candidate.suffix.lower() != ".md":
            raise PathRefused(f"{user_path}: only .md memory files can be read")
        allowed = self._allowed_base(candidate)
        if allowed is None:
            raise PathRefused(
                f"{user_path}: not a memory file (MEMORY.md, memory.md, memory/**, or extraPaths)"
            )
        for part in [candidate, *_parents_below(candidate, allowed)]:
            if _is_symlink(part):
                raise PathRefused(f"{user_path}: symlinks are not followed ({self.rel(part)})")
        return candidate

    def _allowed_base(self, path: Path) -> Path | None:
        if path.parent == self.root and path.name in ROOT_MEMORY_FILES:
            return self.root
        mem = self.root / MEMORY_DIR
        if path.is_relative_to(mem) and path != mem:
            return self.root
        for extra in self.extra_paths:
            if path == extra:
                return extra.parent
            if path.is_relative_to(extra) and self._pattern_allows(extra, str(path)):
                return extra.parent
        return None

    # -- reading and writing --------------------------------------------------
    def read(self, path: Path) -> Document:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return Document(path, "", sha256_bytes(b""), exists=False)
        text, problem = decode_text(data, self.rel(path))
        return Document(path, text, sha256_bytes(data), exists=True, decode_error=problem)

    def save(self, doc: Document, new_text: str) -> Document:
        """Atomically replace the file, unless it changed since ``doc`` was read."""
        current = self.read(doc.path)
        if current.sha256 != doc.sha256 or current.exists != doc.exists:
            raise ExternalChangeError(
                f"{self.rel(doc.path)} changed on disk since it was opened; "
                "reload or merge before saving"
            )
        data = new_text.encode("utf-8")
        atomic_write(doc.path, data)
        return Document(doc.path, new_text, sha256_bytes(data), exists=True)

    def daily_path(self, day: dt.date) -> Path:
        return self.root / MEMORY_DIR / f"{day.isoformat()}.md"

    def append_entry(self, text: str, now: dt.datetime | None = None) -> tuple[Path, int]:
        """Append a timestamped entry to today's daily log; returns (path, first line).

        Only appends: earlier bytes of the file are never rewritten.
        """
        body = text.strip("\n")
        if not body.strip():
            raise ValueError("empty entry")
        now = now or dt.datetime.now().astimezone()
        path = self.daily_path(now.date())
        path.parent.mkdir(parents=True, exist_ok=True)
        if _is_symlink(path) or _is_symlink(path.parent):
            raise PathRefused(f"{self.rel(path)}: symlinks are not followed")
        prefix = b""
        try:
            with open(path, "rb") as fh:
                existing = fh.read()
        except FileNotFoundError:
            existing = b""
            prefix = f"# {now.date().isoformat()}\n".encode()
        if existing and not existing.endswith(b"\n"):
            prefix += b"\n"
        entry = f"\n## {now.strftime('%H:%M')}\n\n{body}\n".encode()
        line = (existing + prefix).count(b"\n") + 2  # the "## HH:MM" line
        with open(path, "ab") as fh:
            fh.write(prefix + entry)
            fh.flush()
            os.fsync(fh.fileno())
        return path, line


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same folder and ``os.replace``; keeps the mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, doc: object) -> None:
    """``atomic_write`` of a JSON state file as people read it: indented, UTF-8, one
    final newline. Every state file memdeck keeps beside OpenClaw's is written so."""
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    atomic_write(path, text.encode("utf-8"))


def _walk_markdown(top: Path) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for name in sorted(filenames):
            if name.lower().endswith(".md"):
                yield os.path.join(dirpath, name)


def _parents_below(path: Path, top: Path) -> list[Path]:
    """The chain of parents of ``path`` strictly below ``top``."""
    out = []
    for parent in path.parents:
        if parent == top or not parent.is_relative_to(top):
            break
        out.append(parent)
    return out
