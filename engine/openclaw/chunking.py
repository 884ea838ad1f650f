"""OpenClaw 2026.9.6's Markdown chunking, for the ``openclaw`` ranking profile.

memdeck's own chunker (:mod:`engine.index.chunking`) keeps chunk text an exact
substring of the file and never emits a chunk that is only overlap. A user who
debugs what their agent's ``memory_search`` returned needs OpenClaw's chunks
instead, byte for byte, so this module reproduces 2026.9.6's behaviour (proven by
tests/openclaw/test_chunk_parity.py against the installed package):

* Sizes are counted in **UTF-16 code units**, as JavaScript strings are: an emoji
  or any character beyond U+FFFF costs 2. On top of that, CJK-like characters
  cost more: common CJK/Hangul/fullwidth +3, rarer BMP blocks +11, some
  two-token marks +7, Tangut/Kana supplements and Ext-B…H ideographs +14, a few
  counting rods +10 (:func:`estimate_chars`).
* ``max_chars = max(32, tokens*4)``; a line (or piece) costs its size + 1. A line
  is cut into pieces of at most ``max_chars`` code units (never inside a surrogate
  pair), each re-cut per character if its weighted size still exceeds the
  budget. Pieces are separate entries, so a chunk joins them with ``"\\n"``.
* When the next entry would overflow, the chunk is emitted and the tail is
  carried over up to ``min(overlap*4, max_chars - entry_size)``: whole entries
  from the end, and when even the last entry does not fit, the tail of that
  entry's text that does (a partial line).
* ``MEMORY.md`` and ``USER.md`` (source ``memory``) are chunked per entry: every
  ``- `` bullet line and every ``#``..``######`` heading starts a fresh chunk with
  no overlap carried in.
* For memory files, ``<!-- trigger: … -->`` / ``importance`` / ``project``
  annotation comments that close on their own line are removed before chunking
  (and spaces left at a line end with them); line numbers still refer to the file.
* Only ``"\\n"`` splits lines (a ``"\\r"`` stays in the text). Chunks whose text is
  blank are dropped. The hash is the SHA-256 of the chunk text.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass

from engine.index.chunking import Chunk

__all__ = [
    "OPENCLAW_CHUNKING_VERSION",
    "chunk_openclaw",
    "estimate_chars",
    "is_per_entry_file",
    "strip_annotation_carriers",
]

#: bumped whenever this module's output changes (part of the index fingerprint)
OPENCLAW_CHUNKING_VERSION = "2026.9.6-1"

# Extra cost per character on top of its UTF-16 length, by code-point range.
_WEIGHTS: tuple[tuple[int, int, int], ...] = (
    (0xB7, 0xB7, 3),
    (0x2C7, 0x2C7, 7),
    (0x2C9, 0x2CB, 7),
    (0x2D9, 0x2D9, 7),
    (0x2EA, 0x2EB, 7),
    (0x305, 0x305, 7),
    (0x323, 0x323, 7),
    (0x1100, 0x11FF, 11),
    (0x2E80, 0x2FFF, 11),
    (0x3000, 0x319F, 3),
    (0x31A0, 0x4DFF, 11),
    (0x4E00, 0x9FA5, 3),
    (0x9FA6, 0x9FFF, 11),
    (0xA000, 0xA4FF, 11),
    (0xA700, 0xA707, 11),
    (0xA960, 0xA97F, 11),
    (0xAC00, 0xD7AF, 3),
    (0xD7B0, 0xD7FF, 11),
    (0xF900, 0xFAFF, 11),
    (0xFE10, 0xFE4F, 7),
    (0xFF01, 0xFF60, 3),
    (0xFF61, 0xFFDC, 7),
    (0xFFE0, 0xFFE6, 7),
    (0x16FE0, 0x16FFF, 14),
    (0x1AFF0, 0x1AFFF, 14),
    (0x1B000, 0x1B16F, 14),
    (0x1D360, 0x1D371, 10),
    (0x1F200, 0x1F2FF, 14),
    (0x20000, 0x2FA1F, 14),
    (0x30000, 0x3347F, 14),
)
_STARTS = [start for start, _, _ in _WEIGHTS]
# JavaScript's \s (Python's differs: it adds \x1c-\x1f and lacks \ufeff).
_JS_WS = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_HEADING = re.compile(f"#{{1,6}}(?:{_JS_WS}|\\Z)")
_ANNOTATION = re.compile(f"<!--{_JS_WS}*(trigger|importance|project){_JS_WS}*:", re.I)
_LINE_BREAK = re.compile(r"[\r\n]")
_END_SPACE = re.compile("[ \t]+(?=[\r\n\u2028\u2029]|\\Z)")


def _extra(cp: int) -> int:
    i = bisect.bisect_right(_STARTS, cp) - 1
    if i >= 0:
        start, end, weight = _WEIGHTS[i]
        if start <= cp <= end:
            return weight
    return 0


def _class_pattern(weight: int) -> re.Pattern[str]:
    ranges = "".join(f"\\U{start:08x}-\\U{end:08x}" for start, end, w in _WEIGHTS if w == weight)
    return re.compile(f"[{ranges}]")


# One character class per extra weight, so a string's extras are counted in C.
_BY_WEIGHT = tuple((w, _class_pattern(w)) for w in sorted({w for _, _, w in _WEIGHTS}))


def utf16_len(text: str) -> int:
    """JavaScript's ``text.length``."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def estimate_chars(text: str) -> int:
    """OpenClaw's weighted size of *text* (UTF-16 length plus CJK weights)."""
    if text.isascii():
        return len(text)
    total = utf16_len(text)
    for weight, pattern in _BY_WEIGHT:
        found = pattern.findall(text)
        if found:
            total += weight * len(found)
    return total


_COSTS: dict[str, int] = {}


def _char_cost(c: str) -> int:
    cost = _COSTS.get(c)
    if cost is None:
        cost = _COSTS[c] = _compute_cost(c)
    return cost


def _compute_cost(c: str) -> int:
    cp = ord(c)
    if cp < 0x80:
        return 1
    return (2 if cp > 0xFFFF else 1) + (_extra(cp) if cp >= 0xB7 else 0)


def is_per_entry_file(rel: str) -> bool:
    """MEMORY.md and USER.md at the workspace root are chunked per heading/bullet."""
    return rel.replace("\\", "/") in ("MEMORY.md", "USER.md")


def strip_annotation_carriers(text: str) -> str:
    """Remove ``<!-- trigger|importance|project: … -->`` comments that close on
    the line they open on; spaces/tabs they leave at a line end go too."""
    parts: list[str] = []
    cursor = 0
    closing = -1
    newline = -1
    pos = 0
    while True:
        match = _ANNOTATION.search(text, pos)
        if match is None:
            break
        value_start = match.end()
        if closing < value_start:
            closing = text.find("-->", value_start)
            if closing < 0:
                break
        if newline < value_start:
            found = _LINE_BREAK.search(text, value_start)
            newline = found.start() if found else len(text)
        if newline < closing:
            pos = value_start
            continue
        parts.append(text[cursor : match.start()])
        cursor = closing + 3
        pos = closing + 3
    if cursor == 0:
        return text
    parts.append(text[cursor:])
    return _END_SPACE.sub("", "".join(parts))


def _take_tail(text: str, budget: int) -> str:
    """The longest suffix of *text* whose weighted size is at most *budget*."""
    acc = 0
    start = len(text)
    while start > 0:
        acc += _char_cost(text[start - 1])
        if acc > budget:
            break
        start -= 1
    return text[start:]


def _coarse(text: str, start: int, limit: int) -> int:
    """End index of ``text[start:]`` cut to *limit* UTF-16 units (no split pairs)."""
    end = min(len(text), start + limit)
    if utf16_len(text[start:end]) <= limit:
        return end
    lo, hi = start, end  # the longest prefix within the limit, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if utf16_len(text[start:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class _Entry:
    text: str
    line: int


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def chunk_openclaw(
    content: str,
    *,
    tokens: int = 400,
    overlap: int = 80,
    per_entry: bool = False,
    keep_blank: bool = False,
) -> list[Chunk]:
    """Chunk *content* exactly as OpenClaw 2026.9.6's ``chunkMarkdown`` does.

    *per_entry* is true for MEMORY.md/USER.md; callers strip annotation carriers
    first for memory files (:func:`chunk_memory_file` does both).
    """
    return [
        c
        for c, _ in chunk_entries(
            content, tokens=tokens, overlap=overlap, per_entry=per_entry, keep_blank=keep_blank
        )
    ]


def chunk_entries(
    content: str,
    *,
    tokens: int = 400,
    overlap: int = 80,
    per_entry: bool = False,
    keep_blank: bool = False,
) -> list[tuple[Chunk, tuple[int, int] | None]]:
    """Chunks with the line span of the ``- `` bullet entry each belongs to
    (per-entry files only; ``None`` elsewhere), which OpenClaw reads an
    entry's ``<!-- importance: N -->`` from."""
    max_chars = max(32, tokens * 4)
    overlap_chars = max(0, overlap * 4)
    chunks: list[Chunk] = []
    spans: list[tuple[int, int] | None] = []
    current: list[_Entry] = []
    current_chars = 0
    entry_start: int | None = None
    entry_first = 0

    def flush() -> None:
        if current:
            text = "\n".join(e.text for e in current)
            chunks.append(Chunk(current[0].line, current[-1].line, text, text_hash(text)))
            spans.append(None)

    def finish_entry(end_line: int) -> None:
        if entry_start is not None:
            for i in range(entry_first, len(spans)):
                spans[i] = (entry_start, end_line)

    def carry(window: int) -> None:
        nonlocal current, current_chars
        if window <= 0 or not current:
            current, current_chars = [], 0
            return
        acc = 0
        kept: list[_Entry] = []
        for entry in reversed(current):
            size = estimate_chars(entry.text) + 1
            remaining = window - acc
            if size > remaining:
                if not kept:
                    tail = _take_tail(entry.text, remaining - 1)
                    if tail:
                        kept.insert(0, _Entry(tail, entry.line))
                        acc += estimate_chars(tail) + 1
                break
            acc += size
            kept.insert(0, entry)
            if acc >= window:
                break
        current, current_chars = kept, acc

    def append(segment: str, line_no: int, chars: int) -> None:
        nonlocal current_chars
        size = chars + 1
        if current_chars + size > max_chars and current:
            flush()
            carry(min(overlap_chars, max(0, max_chars - size)))
        current.append(_Entry(segment, line_no))
        current_chars += size

    index = 0
    for index, line in enumerate(content.split("\n")):
        line_no = index + 1
        if per_entry and (line.startswith("- ") or _HEADING.match(line) or index == 0):
            flush()
            finish_entry(line_no - 1)
            current, current_chars = [], 0
            entry_start = line_no if line.startswith("- ") else None
            entry_first = len(chunks)
        if not line:
            append("", line_no, 0)
            continue
        start = 0
        while start < len(line):
            end = _coarse(line, start, max_chars)
            coarse = line[start:end]
            coarse_chars = estimate_chars(coarse)
            if coarse_chars > max_chars:
                part_start = 0
                part_chars = 0
                costs = _COSTS
                for offset, c in enumerate(coarse):
                    cost = costs.get(c) or _char_cost(c)
                    if part_chars + cost > max_chars:
                        append(coarse[part_start:offset], line_no, part_chars)
                        part_start, part_chars = offset, 0
                    part_chars += cost
                append(coarse[part_start:], line_no, part_chars)
            else:
                append(coarse, line_no, coarse_chars)
            start = end
    flush()
    finish_entry(index + 1)
    pairs = list(zip(chunks, spans, strict=True))
    if keep_blank:
        return pairs
    return [(c, span) for c, span in pairs if c.text.strip(_JS_SPACE)]


# JavaScript's String.prototype.trim() whitespace (Python's str.strip() differs).
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def chunk_memory_file(
    rel: str, content: str, *, tokens: int = 400, overlap: int = 80
) -> list[Chunk]:
    """A memory-source file as 2026.9.6 indexes it: carriers stripped, MEMORY.md
    and USER.md per entry, blank chunks dropped."""
    return chunk_openclaw(
        strip_annotation_carriers(content),
        tokens=tokens,
        overlap=overlap,
        per_entry=is_per_entry_file(rel),
    )
