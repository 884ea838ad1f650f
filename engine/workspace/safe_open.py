"""Opening a memory file so that the file that was checked is the file that is read.

A path check followed by a read by name is a race: between the two, a file can
be swapped for a symlink to ``~/.ssh/config``, and the read follows it. Here a
file is opened one component at a time relative to an open directory, each
with ``O_NOFOLLOW`` (a symlink anywhere below the base is refused, not
followed), the last one also ``O_NONBLOCK`` (opening a FIFO never waits for a
writer). The open descriptor is then checked with ``fstat``: a regular file,
on the base's filesystem, with a single link (a hard link can be another name
of a file outside the workspace). Everything afterwards — size, hash, text —
comes from that same descriptor, so what was checked is what is read.

The base folder itself (the workspace root, the parent of an extra path) is
opened normally: a workspace that lives behind a symlink is the user's choice.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

#: Longest file or folder name most filesystems accept (ext4, APFS, NTFS: 255 bytes).
MAX_NAME_BYTES = 255
_READ_STEP = 1 << 20
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOCTTY = getattr(os, "O_NOCTTY", 0)


class PathRefused(ValueError):
    """A path is not one of the workspace's memory files (or is not safe to read)."""


class FileTooLarge(ValueError):
    """The file is over the size limit; nothing of it was read."""

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


def check_parts(rel: str, shown: str | None = None) -> list[str]:
    """The components of a relative path, or PathRefused naming what is wrong."""
    shown = shown if shown is not None else rel
    if "\x00" in rel:
        raise PathRefused(f"{shown!r}: a NUL byte is not allowed in a path")
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise PathRefused(f"{shown}: empty, '.' and '..' segments are not allowed")
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise PathRefused(
                f"{shown}: a name is {len(os.fsencode(part))} bytes; the limit is {MAX_NAME_BYTES}"
            )
    return parts


class OpenedFile:
    """A checked, open regular file. Close it (or use ``with``)."""

    __slots__ = ("dev", "fd", "ino", "mtime", "shown", "size")

    def __init__(self, fd: int, st: os.stat_result, shown: str):
        self.fd = fd
        self.shown = shown
        self.size = st.st_size
        self.mtime = st.st_mtime
        self.dev = st.st_dev
        self.ino = st.st_ino

    def __enter__(self) -> OpenedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def check_size(self, limit: int, what: str = "reading") -> None:
        """Refuse (before reading a byte) a file whose ``fstat`` size is over ``limit``."""
        if self.size > limit:
            raise FileTooLarge(
                f"{self.shown}: {self.size / 1e6:.1f} MB is over the "
                f"{_mib(limit)} limit for {what}",
                self.size,
            )

    def read_all(self, limit: int, what: str = "reading") -> bytes:
        """The whole file, refusing it unread when over ``limit`` (a file that grows
        past the limit while being read is refused too, having read ``limit + 1``)."""
        self.check_size(limit, what)
        parts: list[bytes] = []
        have = 0
        for block in self.blocks():
            have += len(block)
            if have > limit:
                raise FileTooLarge(
                    f"{self.shown}: grew past the {_mib(limit)} limit for {what} while being read",
                    have,
                )
            parts.append(block)
        return b"".join(parts)

    def blocks(self, step: int = _READ_STEP) -> Iterator[bytes]:
        """The file's bytes from the start, ``step`` at a time (memory stays bounded)."""
        os.lseek(self.fd, 0, os.SEEK_SET)
        while True:
            block = os.read(self.fd, step)
            if not block:
                return
            yield block


def _mib(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n} bytes"


def open_beneath(
    base: Path | str,
    rel: str,
    *,
    shown: str | None = None,
    allow_hardlinks: bool = False,
) -> OpenedFile:
    """Open ``base/rel`` for reading without following any symlink below ``base``.

    Raises ``FileNotFoundError`` when it does not exist (a missing folder on the
    way included) and ``PathRefused`` naming the reason for a symlink, a FIFO,
    socket, device or folder, a hard-linked file, a mount point crossed, a NUL
    byte or an over-long name.
    """
    shown = shown if shown is not None else rel
    parts = check_parts(rel, shown)
    dfd, base_dev = open_dir_beneath(base, parts[:-1], shown)
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _O_CLOEXEC | _O_NOCTTY
        fd = _open_component(parts[-1], flags, dfd, shown, rel)
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        check_regular(st, shown, base_dev, allow_hardlinks)
        # back to blocking reads now that it is known to be a regular file
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return OpenedFile(fd, st, shown)


def open_dir_beneath(
    base: Path | str, parts: list[str], shown: str, *, create: bool = False
) -> tuple[int, int]:
    """An fd of the folder ``base/parts...`` reached without following symlinks (and
    the base's device). ``create`` makes missing folders (for a new daily log)."""
    dfd = os.open(os.fspath(base), os.O_RDONLY | os.O_DIRECTORY | _O_CLOEXEC)
    try:
        base_dev = os.fstat(dfd).st_dev
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
        for i, part in enumerate(parts):
            where = "/".join(parts[: i + 1])
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=dfd)
            nfd = _open_component(part, flags, dfd, shown, where)
            os.close(dfd)
            dfd = nfd
            if os.fstat(dfd).st_dev != base_dev:
                raise PathRefused(
                    f"{shown}: {where} is a mount point; memory files are not read "
                    "across filesystems"
                )
    except BaseException:
        os.close(dfd)
        raise
    return dfd, base_dev


def _open_component(name: str, flags: int, dfd: int, shown: str, where: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathRefused(f"{shown}: symlinks are not followed ({where})") from None
        if exc.errno == errno.ENOTDIR:
            # O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR, as on a file
            try:
                is_link = stat.S_ISLNK(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
            except OSError:
                is_link = False
            if is_link:
                raise PathRefused(f"{shown}: symlinks are not followed ({where})") from None
            raise FileNotFoundError(errno.ENOENT, f"{where}: not a folder", shown) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise PathRefused(f"{shown}: name too long for this filesystem") from None
        raise


def check_regular(st: os.stat_result, shown: str, base_dev: int, allow_hardlinks: bool) -> None:
    """Refuse an opened file that is not a regular, singly linked file on ``base_dev``."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise PathRefused(f"{shown}: is a folder, not a memory file")
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        raise PathRefused(f"{shown}: is {kind}; only regular files are read")
    if st.st_dev != base_dev:
        raise PathRefused(f"{shown}: is a mount point; memory files are not read across mounts")
    if st.st_nlink > 1 and not allow_hardlinks:
        raise PathRefused(
            f"{shown}: has {st.st_nlink} hard links; a hard-linked file can be another "
            "file outside the workspace, so it is not read (copy it instead)"
        )


def open_checked(path: Path | str, *, shown: str | None = None) -> OpenedFile:
    """``open_beneath`` of a single file in its own folder: the last component is not
    followed if a symlink, and the opened file is checked the same way."""
    p = Path(path)
    return open_beneath(p.parent, p.name, shown=shown if shown is not None else str(p))


#: How much of a file's start is sniffed for NUL bytes (binary files named .md).
BINARY_SNIFF = 8192


def sniff_binary(fh: OpenedFile) -> bool:
    """True when the file's first ``BINARY_SNIFF`` bytes hold a NUL (read by offset)."""
    return b"\x00" in os.pread(fh.fd, BINARY_SNIFF, 0)
