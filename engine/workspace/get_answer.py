"""The ``memory_get`` answer as a typed record (OpenClaw's read shape plus memdeck's paging).

``engine.tools.memory_get`` returns ``to_json()`` of one of these; the CLI's
``memdeck get --json`` prints the same. Keys that only make sense sometimes
(``fromChar``, ``truncated``, ``nextFrom``, ``nextChar``, ``error``,
``disabled``) are absent, not ``null``, when unset — as OpenClaw's tool answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from engine.records import JsonRecord
from engine.workspace.paging import Page


@dataclass(frozen=True)
class MemoryGetAnswer(JsonRecord):
    """A page of a memory file (``error`` None) or why it could not be read."""

    JSON_NAMES: ClassVar[Mapping[str, str]] = {
        "from_": "from",
        "from_char": "fromChar",
        "next_from": "nextFrom",
        "next_char": "nextChar",
    }
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"from_", "from_char", "lines", "truncated", "next_from", "next_char", "error", "disabled"}
    )

    text: str
    path: str
    from_: int | None = None
    from_char: int | None = None
    lines: int | None = None
    truncated: bool | None = None
    next_from: int | None = None
    next_char: int | None = None
    error: str | None = None
    disabled: bool | None = None

    @classmethod
    def of_page(cls, path: str, page: Page) -> MemoryGetAnswer:
        """The answer for a page that was read, continuation notice included."""
        return cls(
            text=page.text + page.notice(),
            path=path,
            from_=page.start,
            from_char=page.start_char or None,
            lines=page.lines,
            truncated=True if page.truncated else None,
            next_from=page.next_from,
            next_char=page.next_char,
        )

    @classmethod
    def refused(cls, path: str, error: str, *, disabled: bool = False) -> MemoryGetAnswer:
        """Nothing read: the path as asked, and why (``disabled``: the tools are off)."""
        return cls(text="", path=path, error=error, disabled=True if disabled else None)
