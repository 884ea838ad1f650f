"""What the agent is given every turn: its bootstrap files, measured against the budget.

OpenClaw puts ``MEMORY.md`` (and ``AGENTS.md``, ``SOUL.md``, ``IDENTITY.md``,
``USER.md``, ``BOOTSTRAP.md``) into the prompt of every main-session turn, cut to
``bootstrapMaxChars`` per file and ``bootstrapTotalMaxChars`` together
(:mod:`engine.openclaw.bootstrap` reproduces how). This module reads the files of
one workspace, asks that module what each puts into the prompt, and says it in
the memory files' own terms: characters, a token estimate, and the line ranges
the agent never sees.

Files other than ``MEMORY.md`` are read here only to be measured: their text is
never indexed, shown or sent anywhere. A report prints only their sizes; it keeps
their text in memory (``sources``) to measure MEMORY.md again as it is edited.

``BOOTSTRAP.md`` counts while it exists: OpenClaw injects it until the
workspace's first-run setup is recorded as complete, and that record lives in
OpenClaw's state database, which memdeck does not read; once setup is complete
the file is normally gone too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from engine.openclaw.bootstrap import (
    BOOTSTRAP_FILE_NAMES,
    OPTIONAL_WHEN_MISSING,
    BootstrapFile,
    Injection,
    context_injection,
    estimate_tokens,
    inject,
    js_trim_end,
    resolve_limits,
    utf16_units,
)
from engine.records import JsonRecord

if TYPE_CHECKING:
    from engine.config.settings import Settings

#: OpenClaw reads at most this much of a bootstrap file (a larger one is unreadable)
MAX_BOOTSTRAP_BYTES = 2 * 1024 * 1024
MEMORY_NAME = "MEMORY.md"


@dataclass(frozen=True)
class LineRange(JsonRecord):
    """Lines ``start_line``…``end_line`` (1-based, inclusive)."""

    JSON_NAMES: ClassVar = {"start_line": "startLine", "end_line": "endLine"}

    start_line: int
    end_line: int

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1

    def __str__(self) -> str:
        if self.start_line == self.end_line:
            return f"line {self.start_line}"
        return f"lines {self.start_line}–{self.end_line}"


@dataclass(frozen=True)
class ContextFile(JsonRecord):
    """One bootstrap file as the agent gets it."""

    JSON_NAMES: ClassVar = {
        "raw_chars": "rawChars",
        "injected_chars": "injectedChars",
        "cut_lines": "cutLines",
        "limit": "maxChars",
    }
    JSON_HIDDEN: ClassVar = frozenset({"name"})

    path: str  # workspace-relative
    name: str
    missing: bool
    raw_chars: int
    injected_chars: int
    truncated: bool
    tokens: int
    #: the per-file limit that applied to it (USER.md: at most 4,000)
    limit: int
    #: why it was cut: ``per-file-limit`` and/or ``total-limit``
    causes: tuple[str, ...]
    #: lines of which the agent sees nothing
    hidden: tuple[LineRange, ...]
    #: lines the agent sees only part of (where the cut falls)
    cut_lines: tuple[int, ...]
    lines: int

    @property
    def hidden_lines(self) -> int:
        return sum(r.lines for r in self.hidden)


@dataclass(frozen=True)
class ContextReport(JsonRecord):
    """Every bootstrap file OpenClaw 2026.9.6 would inject for the agent, in its order."""

    JSON_NAMES: ClassVar = {
        "total_chars": "totalChars",
        "total_max_chars": "totalMaxChars",
        "max_chars": "maxChars",
        "context_injection": "contextInjection",
    }
    JSON_HIDDEN: ClassVar = frozenset({"sources"})

    files: tuple[ContextFile, ...]
    total_chars: int
    total_max_chars: int
    max_chars: int
    tokens: int
    context_injection: str
    notes: tuple[str, ...]
    #: what the files were measured from (kept for :func:`with_memory_text`; not printed)
    sources: tuple[BootstrapFile, ...] = ()

    def file(self, rel: str) -> ContextFile | None:
        return next((f for f in self.files if f.path == rel), None)

    @property
    def memory(self) -> ContextFile | None:
        return self.file(MEMORY_NAME)


# -- reading the workspace -----------------------------------------------------------------
def _read_text(root: Path, name: str) -> str | None:
    """The file's text as Node decodes it (a BOM kept, bad bytes as U+FFFD); None when
    missing. A file OpenClaw could not read becomes its ``[UNREADABLE: …]`` line."""
    path = root / name
    try:
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(Path(os.path.realpath(root))):
            return "[UNREADABLE: the file resolves outside the workspace]"
        # non-blocking open: a FIFO must not hang the reader waiting for a writer
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return "[UNREADABLE: not a regular file]"
            os.set_blocking(fd, True)
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read(MAX_BOOTSTRAP_BYTES + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "[UNREADABLE: not a regular file]"
    except OSError as exc:
        return f"[UNREADABLE: {exc.strerror or exc}]"
    if len(data) > MAX_BOOTSTRAP_BYTES:
        return f"[UNREADABLE: Workspace bootstrap file exceeds its read bound: {name}]"
    return data.decode("utf-8", errors="replace")


def bootstrap_files(root: Path, *, setup_pending: bool | None = None) -> list[BootstrapFile]:
    """The workspace's bootstrap files in OpenClaw's order (``content`` None: missing).

    ``setup_pending`` None: BOOTSTRAP.md counts only while it exists (see the module
    docstring); True counts a missing one as OpenClaw does before setup completes.
    """
    root = Path(os.path.abspath(root))
    try:
        entries = set(os.listdir(root))
    except OSError:
        entries = set()
    out: list[BootstrapFile] = []
    for name in BOOTSTRAP_FILE_NAMES:
        if name in OPTIONAL_WHEN_MISSING and name not in entries:
            continue  # exact spelling: a memory.md is not MEMORY.md here
        content = _read_text(root, name)
        if name == "BOOTSTRAP.md" and content is None and not setup_pending:
            continue
        if content is None and name in OPTIONAL_WHEN_MISSING:
            continue
        out.append(BootstrapFile(name, str(root / name), content))
    return out


# -- lines ------------------------------------------------------------------------------------
def line_view(
    text: str, visible: Sequence[tuple[int, int]]
) -> tuple[tuple[LineRange, ...], tuple[int, ...], int]:
    """(hidden line ranges, partly shown lines, line count) of ``text`` when only the
    ``visible`` ranges (UTF-16 units of its trimEnd'ed text) reach the agent.

    Lines past the end of the trimmed text hold only white space: nothing is lost
    there, so they are never reported.
    """
    units = utf16_units(text)
    end = len(js_trim_end(units))
    hidden: list[LineRange] = []
    cut: list[int] = []
    start = 0
    number = 0
    spans = sorted(visible)
    for number, line in enumerate(units.split("\n"), start=1):
        stop = start + len(line) + 1  # with its newline
        lo, hi = start, min(stop, end)
        start = stop
        if lo >= hi:
            continue
        shown = sum(max(0, min(hi, b) - max(lo, a)) for a, b in spans)
        if shown == 0:
            if hidden and hidden[-1].end_line == number - 1:
                hidden[-1] = LineRange(hidden[-1].start_line, number)
            else:
                hidden.append(LineRange(number, number))
        elif shown < hi - lo:
            cut.append(number)
    lines = 0 if not text else number - 1 if text.endswith("\n") else number
    return tuple(hidden), tuple(cut), lines


# -- the report ------------------------------------------------------------------------------
def _describe(injection: Injection, rel: str, text: str | None) -> ContextFile:
    if text is None:
        hidden: tuple[LineRange, ...] = ()
        cut: tuple[int, ...] = ()
        lines = 0
    else:
        hidden, cut, lines = line_view(text, injection.visible)
    return ContextFile(
        path=rel,
        name=injection.name,
        missing=injection.missing,
        raw_chars=injection.raw_chars,
        injected_chars=injection.injected_chars,
        truncated=injection.truncated,
        tokens=estimate_tokens(injection.injected_chars),
        limit=injection.effective_limit,
        causes=injection.causes,
        hidden=hidden,
        cut_lines=cut,
        lines=lines,
    )


def measure(
    root: Path,
    files: Sequence[BootstrapFile],
    *,
    max_chars: int,
    total_max_chars: int,
    mode: str = "always",
) -> ContextReport:
    """The report for ``files`` (as :func:`bootstrap_files` lists them) under the limits."""
    injections = inject(files, max_chars=max_chars, total_max_chars=total_max_chars)
    described = []
    for f, injection in zip(files, injections, strict=True):
        rel = os.path.relpath(f.path, root).replace(os.sep, "/")
        described.append(_describe(injection, rel, f.content))
    total = sum(f.injected_chars for f in described)
    notes: list[str] = []
    if mode == "never":
        notes.append("contextInjection is never: no bootstrap file reaches the agent")
    elif mode == "continuation-skip":
        notes.append("contextInjection is continuation-skip: only the first turn gets them")
    if not any(f.name == MEMORY_NAME for f in files):
        notes.append("no MEMORY.md in the workspace")
    return ContextReport(
        files=tuple(described),
        total_chars=total,
        total_max_chars=total_max_chars,
        max_chars=max_chars,
        tokens=estimate_tokens(total),
        context_injection=mode,
        notes=tuple(notes),
        sources=tuple(files),
    )


def context_report(settings: Settings, *, setup_pending: bool | None = None) -> ContextReport:
    """What OpenClaw 2026.9.6 injects for this agent's workspace, file by file."""
    document = settings.raw if isinstance(settings.raw, dict) else {}
    max_chars, total = resolve_limits(document, settings.agent_id)
    files = bootstrap_files(settings.workspace, setup_pending=setup_pending)
    return measure(
        settings.workspace,
        files,
        max_chars=max_chars,
        total_max_chars=total,
        mode=context_injection(document, settings.agent_id),
    )


def with_memory_text(report: ContextReport, text: str, root: Path) -> ContextReport:
    """The report again as if MEMORY.md held ``text`` (the editor's unsaved buffer):
    the other files as they were measured, so the result follows each keystroke."""
    files = list(report.sources)
    path = str(Path(os.path.abspath(root)) / MEMORY_NAME)
    for i, f in enumerate(files):
        if f.name == MEMORY_NAME:
            files[i] = replace(f, content=text)
            break
    else:
        files.append(BootstrapFile(MEMORY_NAME, path, text))
    return measure(
        root,
        files,
        max_chars=report.max_chars,
        total_max_chars=report.total_max_chars,
        mode=report.context_injection,
    )


__all__ = [
    "ContextFile",
    "ContextReport",
    "LineRange",
    "bootstrap_files",
    "context_report",
    "line_view",
    "measure",
    "with_memory_text",
]
