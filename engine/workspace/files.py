"""The Markdown files of one agent workspace: listing, safe paths, reads, writes.

The files are the source of truth; the index is derived. Everything here keeps
that promise: writes are atomic and refuse to overwrite a file that changed on
disk since it was read, appends never touch earlier content, and path checks
refuse anything outside the memory files (``../``, symlinks, other files).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.openclaw.config import ExtraPathPattern
from engine.workspace.dates import date_from_path
from engine.workspace.globs import matches_glob
from engine.workspace.safe_open import (
    FileTooLarge,
    OpenedFile,
    PathRefused,
    check_parts,
    check_regular,
    open_beneath,
    open_dir_beneath,
)

IGNORED_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox"})
ROOT_MEMORY_FILES = ("MEMORY.md", "memory.md")
#: Which root files a read may name: memdeck's own (MEMORY.md, memory.md) or
#: OpenClaw 2026.9.6's memory_get (MEMORY.md, USER.md, DREAMS.md in any case).
RootRule = Literal["memdeck", "openclaw"]
MEMORY_DIR = "memory"
#: Files larger than this are listed but not indexed (status shows why).
MAX_INDEX_BYTES = 10 * 1024 * 1024
_BINARY_SNIFF = 8192

__all__ = ["FileTooLarge", "OpenedFile", "PathRefused"]  # re-exported for callers


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


_BOM = b"\xef\xbb\xbf"


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


def is_root_memory_name(name: str, rule: RootRule = "memdeck") -> bool:
    """Whether ``name``, directly in the workspace root, is a memory file under *rule*."""
    if rule == "openclaw":
        return name in ("MEMORY.md", "USER.md") or name.lower() == "dreams.md"
    return name in ROOT_MEMORY_FILES


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
        #: folders the last ``list_files`` could not list, each with the reason
        self.unreadable: tuple[str, ...] = ()
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
        """All memory files, sorted, without following symlinks, deduplicated.

        Folders that cannot be listed, and a ``MEMORY.md``, ``memory.md`` or
        ``memory/`` that is a symlink, are skipped and kept in :attr:`unreadable`
        (``path/: cannot list (reason)``, ``MEMORY.md: a symlink, not followed…``)
        for the sync to report."""
        unreadable: list[tuple[str, str]] = []
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

        # a link where the memory files belong makes a workspace look empty: say so
        linked = [
            f"{shown}: a symlink, not followed (memdeck reads only the files inside the workspace)"
            for name, shown in (*((n, n) for n in ROOT_MEMORY_FILES), (MEMORY_DIR, "memory/"))
            if _is_symlink(self.root / name)
        ]
        for name in ROOT_MEMORY_FILES:
            add(root + name)
        mem_dir = self.root / MEMORY_DIR
        if mem_dir.is_dir() and not _is_symlink(mem_dir):
            for path in _walk_markdown(mem_dir, unreadable):
                add(path)
        for extra in self.extra_paths:
            if _is_symlink(extra) or any(_is_symlink(p) for p in _parents_below(extra, self.root)):
                continue
            if extra.is_dir():
                for path in _walk_markdown(extra, unreadable):
                    if self._pattern_allows(extra, path):
                        add(path)
            elif extra.suffix.lower() == ".md" and extra.is_file():
                add(str(extra))
        out.sort(key=lambda f: f.rel)
        self.unreadable = (
            *linked,
            *(
                f"{self.rel(Path(d)).rstrip('/')}/: cannot list the folder ({why})"
                for d, why in unreadable
            ),
        )
        return out

    def memory_file(self, path: Path | str) -> MemoryFile | None:
        """The ``MemoryFile`` ``list_files`` would list for ``path``, or None.

        The same rules, decided for one path without walking any folder: an
        incremental sync told by the watcher which files changed must not re-list
        18,000 files to learn that one did (``tests/engine/test_incremental_sync.py``
        checks this against ``list_files`` on a workspace with symlinks, ignored
        folders and extraPath globs).
        """
        p = Path(os.path.abspath(path))
        if not p.name.lower().endswith(".md"):
            return None
        try:
            st = os.lstat(p)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        if p.parent == self.root and p.name in ROOT_MEMORY_FILES:
            return self._memory_file(p, st)
        mem_dir = self.root / MEMORY_DIR
        if _walked_to(mem_dir, p) and not _is_symlink(mem_dir):
            return self._memory_file(p, st)
        for extra in self.extra_paths:
            if _is_symlink(extra) or any(_is_symlink(x) for x in _parents_below(extra, self.root)):
                continue
            if p == extra or (_walked_to(extra, p) and self._pattern_allows(extra, str(p))):
                return self._memory_file(p, st)
        return None

    def _memory_file(self, p: Path, st: os.stat_result) -> MemoryFile:
        rel = self.rel(p)
        return MemoryFile(rel, p, self.classify(rel), st.st_size, st.st_mtime)

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
    def resolve(self, user_path: str, rule: RootRule = "memdeck") -> Path:
        """Map a path from a tool call or the CLI to a memory file, or refuse it.

        Accepts workspace-relative paths and absolute paths of memory files.
        Refuses ``..`` components, non-``.md`` files, files outside MEMORY.md /
        memory/ / extraPaths, and any symlink on the way. ``rule="openclaw"``
        (memory_get under the ``openclaw`` profile) takes OpenClaw 2026.9.6's root
        files instead: MEMORY.md, USER.md and DREAMS.md (any case), not memory.md.
        """
        if not user_path or not user_path.strip():
            raise PathRefused("empty path")
        raw = user_path.strip().replace("\\", "/")
        if "\x00" in raw:
            raise PathRefused(f"{user_path!r}: a NUL byte is not allowed in a path")
        if any(part == ".." for part in raw.split("/")):
            raise PathRefused(f"{user_path}: '..' is not allowed in memory paths")
        check_parts("/".join(p for p in raw.split("/") if p not in ("", ".")) or "x", user_path)
        candidate = Path(raw) if os.path.isabs(raw) else self.root / raw
        candidate = Path(os.path.normpath(candidate))
        if candidate.suffix.lower() != ".md":
            raise PathRefused(f"{user_path}: only .md memory files can be read")
        allowed = self._allowed_base(candidate, rule)
        if allowed is None:
            roots = (
                "MEMORY.md, USER.md, DREAMS.md" if rule == "openclaw" else "MEMORY.md, memory.md"
            )
            raise PathRefused(f"{user_path}: not a memory file ({roots}, memory/**, or extraPaths)")
        for part in [candidate, *_parents_below(candidate, allowed)]:
            if _is_symlink(part):
                raise PathRefused(f"{user_path}: symlinks are not followed ({self.rel(part)})")
        return candidate

    def _allowed_base(self, path: Path, rule: RootRule = "memdeck") -> Path | None:
        if path.parent == self.root and is_root_memory_name(path.name, rule):
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

    # -- opening files safely ------------------------------------------------
    def base_of(self, path: Path) -> tuple[Path, str]:
        """(folder, relative path) to open ``path`` beneath: the workspace root for
        memory files, an extra path's parent for extra files (so the extra path
        itself is checked too), else the file's own folder."""
        path = Path(os.path.normpath(path))
        base = self._allowed_base(path, "openclaw") or self._allowed_base(path)
        if base is None:
            base = path.parent
        return base, path.relative_to(base).as_posix()

    def open(self, path: Path) -> OpenedFile:
        """Open a memory file for reading, refusing symlinks anywhere below the
        workspace (or extra path), FIFOs and devices, folders, hard links and mount
        points (see ``safe_open``). ``FileNotFoundError`` when it does not exist."""
        base, rel = self.base_of(path)
        return open_beneath(base, rel, shown=self.rel(path))

    # -- reading and writing --------------------------------------------------
    def read(self, path: Path, limit: int = MAX_INDEX_BYTES) -> Document:
        """The file's text, read from the descriptor that was checked. A file over
        ``limit`` raises ``UnreadableFile`` without being read."""
        try:
            with self.open(path) as fh:
                data = fh.read_all(limit)
        except FileNotFoundError:
            return Document(path, "", sha256_bytes(b""), exists=False)
        except FileTooLarge as exc:
            raise UnreadableFile(str(exc)) from None
        text, problem = decode_text(data, self.rel(path))
        return Document(path, text, sha256_bytes(data), exists=True, decode_error=problem)

    def save(self, doc: Document, new_text: str) -> Document:
        """Atomically replace the file, unless it changed since ``doc`` was read.

        The temp file is created and renamed relative to the folder's descriptor,
        reached without following symlinks: a folder swapped for a link between the
        check and the write cannot redirect the write outside the workspace.
        """
        current = self.read(doc.path)
        if current.sha256 != doc.sha256 or current.exists != doc.exists:
            raise ExternalChangeError(
                f"{self.rel(doc.path)} changed on disk since it was opened; "
                "reload or merge before saving"
            )
        data = new_text.encode("utf-8")
        # ``read`` drops a UTF-8 byte-order mark from the text; the file keeps it (the
        # editor's save must not change bytes no one edited)
        had_bom = (
            current.exists
            and current.decode_error is None
            and sha256_bytes(_BOM + current.text.encode("utf-8")) == current.sha256
        )
        if had_bom and not data.startswith(_BOM):
            data = _BOM + data
        base, rel = self.base_of(doc.path)
        atomic_write_beneath(base, rel, data, shown=self.rel(doc.path))
        return Document(doc.path, new_text, sha256_bytes(data), exists=True)

    def daily_path(self, day: dt.date) -> Path:
        return self.root / MEMORY_DIR / f"{day.isoformat()}.md"

    def append_entry(self, text: str, now: dt.datetime | None = None) -> tuple[Path, int]:
        """Append a timestamped entry to today's daily log; returns (path, first line).

        Only appends: earlier bytes of the file are never rewritten. Line ends are
        written as ``\n``; a control character (a NUL byte would make the whole log
        look binary, unread and unsearchable) is refused with ``ValueError``.
        """
        body = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        if not body.strip():
            raise ValueError("empty entry")
        bad = _CONTROL.search(body)
        if bad is not None:
            raise ValueError(
                f"the text holds a control character (U+{ord(bad.group()):04X}) at character"
                f" {bad.start() + 1}; a memory file is plain text"
            )
        now = now or dt.datetime.now().astimezone()
        path = self.daily_path(now.date())
        shown = self.rel(path)
        parts = check_parts(shown, shown)
        dfd, dev = open_dir_beneath(self.root, parts[:-1], shown, create=True)
        try:
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
            try:
                fd = os.open(parts[-1], flags | getattr(os, "O_CLOEXEC", 0), 0o644, dir_fd=dfd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise PathRefused(f"{shown}: symlinks are not followed") from None
                if exc.errno == errno.EISDIR:
                    raise PathRefused(f"{shown}: is a folder, not a memory file") from None
                raise
        finally:
            os.close(dfd)
        with os.fdopen(fd, "r+b", buffering=0) as fh:
            st = os.fstat(fd)
            check_regular(st, shown, dev, allow_hardlinks=False)
            os.set_blocking(fd, True)
            # only the last byte and the line count are needed, read from this fd
            lines, last = 0, b""
            os.lseek(fd, 0, os.SEEK_SET)
            while block := os.read(fd, 1 << 20):
                lines += block.count(b"\n")
                last = block[-1:]
            prefix = b""
            if st.st_size == 0:
                prefix = f"# {now.date().isoformat()}\n".encode()
            elif last != b"\n":
                prefix = b"\n"
            entry = f"\n## {now.strftime('%H:%M')}\n\n{body}\n".encode()
            line = lines + prefix.count(b"\n") + 2  # the "## HH:MM" line
            fh.write(prefix + entry)
            os.fsync(fd)
        return path, line


#: what an appended entry may not hold: the C0 controls but tab and newline, and DEL
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def atomic_write_beneath(base: Path, rel: str, data: bytes, *, shown: str | None = None) -> None:
    """``atomic_write`` of a memory file, relative to its folder's descriptor.

    The folder chain is opened without following symlinks, the temp file is
    created ``O_EXCL | O_NOFOLLOW`` in it and renamed over the target by
    descriptor, so the write lands in the folder that was checked.
    """
    shown = shown or rel
    parts = check_parts(rel, shown)
    dfd, _dev = open_dir_beneath(base, parts[:-1], shown, create=True)
    name = parts[-1]
    try:
        # a memory file keeps its mode; a new one (or one deleted meanwhile) gets what
        # any new file would, not the temp file's 0600, which would hide it from others
        mode = _new_file_mode()
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise PathRefused(f"{shown}: symlinks are not followed")
            mode = stat.S_IMODE(st.st_mode)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        for _ in range(100):
            tmp = f".{name}.{os.urandom(4).hex()}.tmp"
            try:
                fd = os.open(tmp, flags, 0o600, dir_fd=dfd)
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - 100 random collisions
            raise FileExistsError(f"{shown}: cannot create a temp file beside it")
        _fill_and_swap(
            fd,
            data,
            mode,
            swap=lambda: os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd),
            discard=lambda: os.unlink(tmp, dir_fd=dfd),
        )
    finally:
        os.close(dfd)


def _new_file_mode() -> int:
    """The mode ``open`` gives a new file: 0666 less the umask, read from
    ``/proc/self/status`` (setting the umask to learn it would race other threads);
    0644 where that cannot be read."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii", errors="replace") as fh,
    ):
        for line in fh:
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    return 0o644


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same folder and ``os.replace``; keeps the mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    _fill_and_swap(
        fd, data, mode, swap=lambda: os.replace(tmp, path), discard=lambda: os.unlink(tmp)
    )


def _fill_and_swap(
    fd: int,
    data: bytes,
    mode: int | None,
    *,
    swap: Callable[[], None],
    discard: Callable[[], None],
) -> None:
    """The end of every atomic write: fill the new temp file ``fd``, make it durable
    with the old file's ``mode``, then ``swap`` it over the target; on any failure
    ``discard`` it, so no temp file outlives a failed write."""
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        swap()
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            discard()
        raise


def atomic_write_json(path: Path, doc: object) -> None:
    """``atomic_write`` of a JSON state file as people read it: indented, UTF-8, one
    final newline. Every state file memdeck keeps beside OpenClaw's is written so."""
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    atomic_write(path, text.encode("utf-8"))


def _walk_markdown(top: Path, unreadable: list[tuple[str, str]] | None = None) -> Iterator[str]:
    """Markdown files below ``top``; folders that cannot be listed go to ``unreadable``
    as (path, reason)."""

    def note(exc: OSError) -> None:
        if unreadable is not None:
            unreadable.append((str(exc.filename), exc.strerror or str(exc)))

    for dirpath, dirnames, filenames in os.walk(top, followlinks=False, onerror=note):
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


def _walked_to(top: Path, path: Path) -> bool:
    """Would ``_walk_markdown(top)`` reach ``path``'s folder? (below ``top``, through
    no symlinked or ignored folder, ``top`` itself a real folder)."""
    if not path.is_relative_to(top) or path == top:
        return False
    folder = path.parent
    chain = [folder] if folder != top else []
    chain += [x for x in folder.parents if x.is_relative_to(top) and x != top]
    if any(x.name in IGNORED_DIRS or _is_symlink(x) for x in chain):
        return False
    return top.is_dir() and not _is_symlink(top)
