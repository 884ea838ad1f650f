"""A ``memory_get`` page read from an open file without holding the file.

``paging.read_page`` works on the whole text; for a multi-GB file that means
gigabytes of memory for a two-line answer. Here the file is read block by
block: lines before the page are only counted, the page's lines are decoded
and kept to ``budget + 1`` characters each (enough for every packing decision),
and the rest of the file is only counted (the page needs the total line count
to know whether a continuation exists). The result is the same ``Page`` that
``read_page`` makes of the whole text; memory stays at one block plus the page.
"""

from __future__ import annotations

import codecs
import errno
import os

from engine.workspace.paging import MAX_CHARS, Page, page_of_lines, page_request
from engine.workspace.safe_open import OpenedFile

_BOM = b"\xef\xbb\xbf"


class _Line:
    """The current line being decoded: its length in characters and a capped copy."""

    __slots__ = ("cap", "chars", "dec", "kept", "parts", "skip")

    def __init__(self, cap: int, skip: int = 0):
        self.dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.cap, self.skip = cap, skip
        self.chars = 0
        self.kept = 0
        self.parts: list[str] = []

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self.dec.decode(data, final)
        self.chars += len(text)
        if self.skip:
            drop = min(self.skip, len(text))
            text, self.skip = text[drop:], self.skip - drop
        room = self.cap - self.kept
        if room > 0 and text:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def text(self) -> str:
        self.feed(b"", final=True)
        return "".join(self.parts)


def read_page_streaming(
    fh: OpenedFile,
    from_line: int | None = None,
    lines: int | None = None,
    *,
    from_char: int | None = None,
    max_chars: int = MAX_CHARS,
    block_size: int = 1 << 20,
) -> Page:
    """``read_page`` of the file behind ``fh``, reading it once in blocks."""
    start, count, offset, budget = page_request(from_line, lines, from_char, max_chars)
    cap = budget + 1
    chosen: list[str] = []
    first_chars = 0
    line_no = 1  # the line the next byte belongs to
    tail = 0  # bytes of the current line seen so far (a final empty "line" is no line)
    collecting = True
    size = 0
    current: _Line | None = None
    offset_in_file = 0
    while True:
        if not collecting or line_no < start:
            # outside the page only newlines matter, and a sparse file's holes have
            # none: jump over them (a 3 GB sparse file is counted in milliseconds)
            hole_end = _next_data(fh.fd, offset_in_file, fh.size)
            tail += hole_end - offset_in_file
            offset_in_file = hole_end
        block = os.pread(fh.fd, block_size, offset_in_file)
        if not block:
            break
        at_start = offset_in_file == 0
        offset_in_file += len(block)
        if at_start and block.startswith(_BOM):
            block = block[len(_BOM) :]
        pos, n = 0, len(block)
        while pos < n:
            wanted = collecting and start <= line_no < start + count
            if not wanted:
                # outside the page: only count newlines (up to the page's first line)
                if collecting and line_no < start:
                    nl = block.find(b"\n", pos)
                    if nl < 0:
                        tail += n - pos
                        break
                    line_no, tail, pos = line_no + 1, 0, nl + 1
                    continue
                newlines = block.count(b"\n", pos)
                if newlines:
                    line_no += newlines
                    tail = n - block.rindex(b"\n") - 1
                else:
                    tail += n - pos
                break
            if current is None:
                current = _Line(cap, offset if line_no == start else 0)
            nl = block.find(b"\n", pos)
            end = n if nl < 0 else nl
            current.feed(block[pos:end])
            tail += end - pos
            if nl < 0:
                break
            collecting, size = _finish(current, line_no, start, count, chosen, size, budget)
            if line_no == start:
                first_chars = current.chars
            current = None
            line_no, tail, pos = line_no + 1, 0, nl + 1
    if tail and current is not None:  # an unterminated last line inside the page
        _finish(current, line_no, start, count, chosen, size, budget)
        if line_no == start:
            first_chars = current.chars
    total = line_no if tail else line_no - 1
    offset = min(offset, first_chars)
    return page_of_lines(chosen, start, total, offset, first_chars, budget)


def _next_data(fd: int, pos: int, size: int) -> int:
    """The offset of the next data at or after ``pos`` (``size`` if only a hole is
    left); ``pos`` itself where the filesystem cannot tell (no SEEK_DATA)."""
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None or pos >= size:
        return pos
    try:
        return max(pos, os.lseek(fd, pos, seek_data))
    except OSError as exc:
        return size if exc.errno == errno.ENXIO else pos


def _finish(
    line: _Line, line_no: int, start: int, count: int, chosen: list[str], size: int, budget: int
) -> tuple[bool, int]:
    """Add a finished line; (still collecting?, characters gathered)."""
    text = line.text()
    chosen.append(text)
    size += len(text) + (1 if len(chosen) > 1 else 0)
    # past the budget or the count, later lines cannot be on this page
    return len(chosen) < count and size <= budget, size
