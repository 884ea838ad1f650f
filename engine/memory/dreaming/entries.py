"""Cutting notes into the units dreaming weighs: one entry = one thought.

A daily log is a sequence of small notes. Promoting a whole 400-token chunk
into ``MEMORY.md`` would drag unrelated lines along, so dreaming works on
*entries*:

* a top-level list item (``-``, ``*``, ``+``, ``1.``) with its indented or
  lazily continued lines;
* otherwise a paragraph (consecutive non-blank lines);
* headings separate entries and name the section they belong to; fenced code
  stays inside the entry it appears in.

Each entry carries its *concept tags*: ``#hashtags``, short ```code``` spans
and the heading it sits under (unless the heading is only a date or a time,
like the ``## 14:05`` headings ``append_entry`` writes). Tags feed the
conceptual score of the deep phase and the REM phase's co-occurrence themes.

Everything here is pure: text in, entries out.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

import regex

from engine.index.tokens import similarity_tokens

MAX_TAGS = 12
#: An entry needs this many distinct words to be worth remembering on its own.
MIN_WORDS = 3

_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET_RE = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+")
_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
_RULE_RE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_HASHTAG_RE = regex.compile(r"(?<![\p{L}\p{N}_#&/])#([\p{L}_][\p{L}\p{N}_\-]*)")
_CODE_RE = re.compile(r"`([^`\n]{2,40})`")
#: an HTML comment (``<!-- importance: 8 -->``): metadata, not the entry's wording
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_GENERIC_HEADING_RE = re.compile(
    r"^(?:\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]m)?|\d{4}-\d{2}-\d{2}(?:[ T].*)?|"
    r"today|yesterday|tomorrow|morning|afternoon|evening|night|notes?|log|daily log)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Entry:
    """One note, located in its file."""

    path: str  # workspace-relative, or "sessions/<file>.jsonl"
    source: str  # "daily", "sessions" or "memory"
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str  # as written, surrounding blank lines removed
    day: dt.date | None  # the date the note belongs to
    heading: str | None = None  # enclosing heading, None when generic
    tags: tuple[str, ...] = ()
    words: frozenset[str] = field(default_factory=frozenset, compare=False)

    @property
    def ref(self) -> str:
        """``path#Lstart`` or ``path#Lstart-Lend``, as citations are written."""
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def overlaps(self, start: int, end: int) -> bool:
        return self.start_line <= end and start <= self.end_line


def is_generic_heading(title: str) -> bool:
    return not title.strip() or bool(_GENERIC_HEADING_RE.match(title.strip()))


def concept_tags(text: str, heading: str | None = None) -> tuple[str, ...]:
    """Lower-case tags in order of first appearance, at most :data:`MAX_TAGS`."""
    found: list[str] = []
    if heading:
        found.append(" ".join(heading.lower().split()))
    found += [m.lower() for m in _HASHTAG_RE.findall(text)]
    found += [" ".join(m.lower().split()) for m in _CODE_RE.findall(text)]
    return tuple(dict.fromkeys(t for t in found if t))[:MAX_TAGS]


def without_comments(text: str) -> str:
    """``text`` without its HTML comments (an entry's ``<!-- importance: N -->``)."""
    return _COMMENT_RE.sub("", text)


def normalize_text(text: str) -> str:
    """One line, no list marker, single spaces: the form compared and promoted."""
    lines = [
        _BULLET_RE.sub("", ln.strip(), count=1) if i == 0 else ln.strip()
        for i, ln in enumerate(text.strip().splitlines())
    ]
    return " ".join(" ".join(lines).split())


def split_entries(
    text: str, *, path: str, source: str, day: dt.date | None, min_words: int = MIN_WORDS
) -> list[Entry]:
    """Cut a Markdown note into entries (see the module docstring for the rules)."""
    lines = text.split("\n")
    entries: list[Entry] = []
    heading: str | None = None
    current: list[tuple[int, str]] = []
    in_fence = False

    def close() -> None:
        nonlocal current
        while current and not current[-1][1].strip():
            current.pop()
        if current:
            body = "\n".join(line for _, line in current).strip("\n")
            words = similarity_tokens(without_comments(body))
            if len(words) >= min_words:
                entries.append(
                    Entry(
                        path=path,
                        source=source,
                        start_line=current[0][0],
                        end_line=current[-1][0],
                        text=body,
                        day=day,
                        heading=heading,
                        tags=concept_tags(body, heading),
                        words=words,
                    )
                )
        current = []

    for number, line in enumerate(lines, start=1):
        if in_fence:
            current.append((number, line))
            if _FENCE_RE.match(line):
                in_fence = False
            continue
        if _FENCE_RE.match(line):
            in_fence = True
            current.append((number, line))
            continue
        heading_match = _HEADING_RE.match(line)
        if heading_match:
            close()
            title = heading_match.group(2)
            heading = None if is_generic_heading(title) else title.strip()
            continue
        if not line.strip() or _RULE_RE.match(line):
            close()
            continue
        if _BULLET_RE.match(line):
            close()
        current.append((number, line))
    close()
    return entries


__all__ = [
    "MAX_TAGS",
    "MIN_WORDS",
    "Entry",
    "concept_tags",
    "is_generic_heading",
    "normalize_text",
    "split_entries",
]
