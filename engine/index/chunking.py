"""Line-based Markdown chunking, compatible with OpenClaw's ``chunkMarkdown``.

Why line-based: every chunk must cite ``path#Ls-Le`` and the agent's
``memory_get`` reads those lines back, so chunk boundaries follow lines and each
chunk knows its 1-based first and last line.

The algorithm (docs/architecture.md "Chunking") and where memdeck deliberately
differs from OpenClaw:

* ``max_chars = max(32, tokens*4)``; a line (or a piece of a cut line) costs its
  length + 1 for the newline, with CJK characters counting 4
  (:func:`engine.index.tokens.estimate_chars_cost`).
* A line whose cost exceeds ``max_chars`` is cut into pieces that each fit;
  pieces keep the line's number. OpenClaw cuts at a fixed character count and
  re-cuts CJK at ``tokens`` characters; memdeck cuts greedily by weighted cost,
  which gives the same pieces for plain text ("a"×4825 → 1600/1600/1600/25) and
  never exceeds the budget when ``max(32, …)`` applies. Cuts never fall between
  a base character and its combining marks (or right after a ZWJ) unless the
  whole piece is marks; Python strings index code points, so a surrogate pair
  cannot be split at all.
* Pieces of one line that land in the same chunk are joined without a newline,
  so a chunk's text is always an exact substring of the file (OpenClaw inserts
  "\\n" between them).
* When adding the next line would pass ``max_chars`` the chunk is emitted and
  the trailing lines are carried into the next chunk as overlap, up to
  ``min(overlap*4, max_chars // 2)``. Only whole lines that fit are carried:
  OpenClaw always keeps at least one line, which for a cut 1600-char line makes
  the overlap as big as the chunk and then truncates the duplicate. memdeck also
  shrinks the overlap so that the incoming line fits next to it; otherwise the
  next chunk would be nothing but overlap.
* A final newline ends the last line; it does not start an empty one. So a
  file's line count is ``wc -l``'s (for a file ending in a newline) and
  memory_get's, and the chunk that reaches the end of a file cites its last
  line. OpenClaw 2026.9.6 counts the empty string after the final newline as
  one more line, so its chunk at the end of a file cites one line past the end
  (``#L1-L9`` for an 8-line file); the ``openclaw`` profile keeps that
  (:mod:`engine.openclaw.chunking`). :data:`CHUNKING_VERSION` is part of the
  index fingerprint, so an index chunked the old way is rebuilt.
* CRLF: like OpenClaw, only "\\n" separates lines. A "\\r" stays at the end of
  its line's text (and costs 1), so line numbers agree with every editor and
  the text is verbatim; display code may strip it.
* Chunks whose text is empty or whitespace-only are dropped (they carry no
  searchable content); OpenClaw keeps them.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass

from engine.index.tokens import estimate_chars_cost
from engine.workspace.paging import file_lines

__all__ = ["CHUNKING_VERSION", "Chunk", "chunk_markdown", "chunk_sizes"]

#: bumped whenever :func:`chunk_markdown`'s output changes (part of the index
#: fingerprint): 2 = a final newline no longer adds an empty last line
CHUNKING_VERSION = 2

_ZWJ = "\u200d"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One indexed unit: lines ``start_line..end_line`` (1-based, inclusive)."""

    start_line: int
    end_line: int
    text: str
    hash: str


def chunk_sizes(tokens: int, overlap: int) -> tuple[int, int]:
    """(max_chars, overlap_cap) for a chunking config.

    Exposed so the index fingerprint and the UI can show the real budgets. The
    32-char floor keeps a tiny ``tokens`` from producing one chunk per word; the
    overlap cap at half a chunk guarantees every chunk has new content.
    """
    max_chars = max(32, tokens * 4)
    overlap_cap = min(max(0, overlap * 4), max_chars // 2)
    return max_chars, overlap_cap


def _text_hash(text: str) -> str:
    # surrogatepass: a file decoded with surrogateescape must still hash, not crash.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _is_attached(line: str, index: int) -> bool:
    """True if a cut before ``line[index]`` would separate it from its base."""
    if unicodedata.category(line[index]).startswith("M"):
        return True
    return line[index] == _ZWJ or line[index - 1] == _ZWJ


def _fit_end(line: str, start: int, budget: int) -> int:
    """Largest end such that line[start:end] costs at most ``budget`` (≥ 1 char).

    Each character costs at most 4, so ``budget // 4`` characters always fit;
    taking that many and re-measuring converges in a few regex passes instead
    of a Python loop per character, which matters for multi-megabyte lines.
    """
    n = len(line)
    end = start
    while end < n:
        step = budget // 4
        if step:
            piece = line[end : end + step]
            budget -= estimate_chars_cost(piece)
            end += len(piece)
            continue
        cost = estimate_chars_cost(line[end])
        if cost > budget:
            break
        budget -= cost
        end += 1
    return max(end, start + 1)


def _cut_line(line: str, max_chars: int) -> list[tuple[str, int]]:
    """Pieces of an over-long line with their costs, each within ``max_chars``."""
    if line.isascii():
        ascii_pieces = [line[i : i + max_chars] for i in range(0, len(line), max_chars)]
        return [(piece, len(piece)) for piece in ascii_pieces]
    pieces: list[tuple[str, int]] = []
    n = len(line)
    pos = 0
    while pos < n:
        end = _fit_end(line, pos, max_chars)
        cut = end
        while pos + 1 < cut < n and _is_attached(line, cut):
            cut -= 1
        if cut == end or not _is_attached(line, cut):
            end = cut
        # else: the whole piece is one giant mark sequence; cut where it fits.
        piece = line[pos:end]
        pieces.append((piece, estimate_chars_cost(piece)))
        pos = end
    return pieces


# An entry is (text, line_no, size, continues_previous_line).
_Entry = tuple[str, int, int, bool]


def _join(entries: list[_Entry]) -> str:
    parts = [entries[0][0]]
    for text, _line_no, _size, continues in entries[1:]:
        if not continues:
            parts.append("\n")
        parts.append(text)
    return "".join(parts)


def _overlap_tail(entries: list[_Entry], cap: int) -> list[_Entry]:
    """The longest run of trailing entries whose total size stays within ``cap``."""
    acc = 0
    first = len(entries)
    while first > 0:
        size = entries[first - 1][2]
        if acc + size > cap:
            break
        acc += size
        first -= 1
    return entries[first:]


def chunk_markdown(content: str, tokens: int = 400, overlap: int = 80) -> list[Chunk]:
    """Split a Markdown file into overlapping, line-addressed chunks.

    Linear in the size of ``content``: chunk text is joined once per chunk and
    the overlap walk is bounded by the overlap cap, so multi-megabyte files
    chunk in well under a second.
    """
    max_chars, overlap_cap = chunk_sizes(tokens, overlap)
    chunks: list[Chunk] = []
    current: list[_Entry] = []
    current_size = 0

    def emit() -> None:
        text = _join(current)
        if text.strip():
            chunks.append(Chunk(current[0][1], current[-1][1], text, _text_hash(text)))

    for index, line in enumerate(file_lines(content)):
        line_no = index + 1
        cost = estimate_chars_cost(line)
        pieces = [(line, cost)] if cost <= max_chars else _cut_line(line, max_chars)
        continues = False
        for piece, piece_cost in pieces:
            size = piece_cost + 1
            if current and current_size + size > max_chars:
                emit()
                # Shrink the overlap so the incoming piece fits beside it.
                current = _overlap_tail(current, min(overlap_cap, max_chars - size))
                current_size = sum(entry[2] for entry in current)
            current.append((piece, line_no, size, continues))
            current_size += size
            continues = True
    if current:
        emit()
    return chunks
