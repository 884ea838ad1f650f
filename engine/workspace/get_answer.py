"""The ``memory_get`` answer as a typed record (OpenClaw's read shape plus memdeck's paging).

``engine.tools.memory_get`` returns ``to_json()`` of one of these; the CLI's
``memdeck get --json`` prints the same. Keys that only make sense sometimes
(``fromChar``, ``truncated``, ``nextFrom``, ``nextChar``, ``error``,
``disabled``, ``status``, ``code``) are absent, not ``null``, when unset — as
OpenClaw's tool answers. ``status`` and ``code`` are set only under the
``openclaw`` profile, where the answer takes OpenClaw 2026.9.6's tool shape:
``status`` ``"ok"``, ``"not_found"`` (a memory path with no file: data, not an
error) or ``"error"`` (with ``code`` ``MEMORY_PATH_NOT_ALLOWED``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from engine.records import JsonRecord
from engine.workspace.paging import Page

#: OpenClaw 2026.9.6's ``memory_get`` outcome (the ``openclaw`` profile only)
GetStatus = Literal["ok", "not_found", "error"]
#: OpenClaw's code for a path memory_get may not read
PATH_NOT_ALLOWED = "MEMORY_PATH_NOT_ALLOWED"
#: ... and for a path it may read but could not (binary, a FIFO, an I/O error)
READ_FAILED = "MEMORY_READ_FAILED"


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
        {
            "status",
            "from_",
            "from_char",
            "lines",
            "truncated",
            "next_from",
            "next_char",
            "code",
            "error",
            "disabled",
        }
    )
    JSON_HIDDEN: ClassVar[frozenset[str]] = frozenset({"refusal_code"})

    text: str
    path: str
    from_: int | None = None
    from_char: int | None = None
    lines: int | None = None
    truncated: bool | None = None
    next_from: int | None = None
    next_char: int | None = None
    code: str | None = None
    error: str | None = None
    disabled: bool | None = None
    status: GetStatus | None = None
    #: kept out of the JSON; becomes ``code`` in the ``openclaw`` shape
    refusal_code: str | None = None

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
    def refused(
        cls, path: str, error: str, *, disabled: bool = False, code: str | None = None
    ) -> MemoryGetAnswer:
        """Nothing read: the path as asked, and why (``disabled``: the tools are off).
        ``code`` (OpenClaw's, e.g. ``MEMORY_PATH_NOT_ALLOWED``) is shown only in the
        ``openclaw`` profile's shape (:meth:`with_status`)."""
        return cls(
            text="",
            path=path,
            error=error,
            disabled=True if disabled else None,
            refusal_code=code,
        )

    @classmethod
    def not_found(cls, path: str) -> MemoryGetAnswer:
        """A memory path with no file behind it (``openclaw`` profile): data, not an error."""
        return cls(text="", path=path, status="not_found")

    def with_status(self) -> MemoryGetAnswer:
        """The same answer in OpenClaw 2026.9.6's tool shape: ``status`` set, and a
        refusal (not a disabled tool) coded (``MEMORY_PATH_NOT_ALLOWED`` or
        ``MEMORY_READ_FAILED``)."""
        if self.status is not None:
            return self
        if self.error is None:
            return dataclasses.replace(self, status="ok")
        code = None if self.disabled else (self.refusal_code or READ_FAILED)
        return dataclasses.replace(self, status="error", code=code)
