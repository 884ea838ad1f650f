"""The agent-facing tools ``memory_search`` and ``memory_get``.

Their contract (arguments, result shape, limits, which paths ``memory_get`` may
read) is in docs/architecture.md "Agent tools".

They return plain JSON-able dicts in OpenClaw's documented shapes. Failures that
an agent should see (search disabled, a refused path) come back as data with an
``error``, not as exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.core import Engine
from engine.search.model import SearchOptions
from engine.search.results import SearchAnswer, SearchUnavailable, check_query
from engine.searchers import MemdeckSearcher, SearchRequest
from engine.workspace.files import PathRefused, RootRule
from engine.workspace.get_answer import PATH_NOT_ALLOWED, MemoryGetAnswer
from engine.workspace.paging import DEFAULT_LINES, MAX_CHARS, Page
from engine.workspace.safe_open import OpenedFile, sniff_binary
from engine.workspace.streaming import read_page_streaming

DEFAULT_GET_LINES = DEFAULT_LINES
MAX_GET_CHARS = MAX_CHARS


def tools_disabled_reason(engine: Engine) -> str | None:
    if not engine.settings.tools_enabled:
        return 'memory tools are disabled (plugins.slots.memory = "none")'
    if not engine.ms.enabled:
        return "memory search is disabled (memory.search.enabled = false)"
    return None


def search_memory(
    engine: Engine,
    query: str,
    max_results: int | None = None,
    min_score: float | None = None,
    *,
    explain: bool = False,
    session_key: str | None = None,
    backend: str | None = None,
    client: str = "cli",
    options: SearchOptions | None = None,
) -> SearchAnswer | SearchUnavailable:
    """memory_search as a typed answer, from the engine's searcher (memdeck's ranking,
    the openclaw profile, or qmd with the builtin index behind it); ``backend``
    ("qmd" or "builtin") overrides ``memory.backend`` for this call, ``options``
    (memdeck's ranking knobs) send it to memdeck's ranking. ``client`` names the
    caller in the recall log (the app's "Agent activity")."""
    reason = tools_disabled_reason(engine)
    if reason:
        return SearchUnavailable(error=reason, action="enable memorySearch in openclaw.json")
    check_query(query)  # QueryRefused: the callers say it as a bad argument
    request = SearchRequest(
        query,
        max_results=max_results,
        min_score=min_score,
        explain=explain,
        session_key=session_key,
        options=options,
        client=client,
    )
    searcher = MemdeckSearcher(engine) if options is not None else engine.searcher_for(backend)
    return searcher.answer(request)


def memory_search(
    engine: Engine,
    query: str,
    max_results: int | None = None,
    min_score: float | None = None,
    *,
    explain: bool = False,
    session_key: str | None = None,
    backend: str | None = None,
    client: str = "cli",
) -> dict[str, Any]:
    """The agent tool: :func:`search_memory` as OpenClaw's JSON shape."""
    return search_memory(
        engine,
        query,
        max_results,
        min_score,
        explain=explain,
        session_key=session_key,
        backend=backend,
        client=client,
    ).to_json()


def read_rule(engine: Engine) -> RootRule:
    """Which root files memory_get reads: OpenClaw 2026.9.6's under the ``openclaw``
    profile (MEMORY.md, USER.md, DREAMS.md), else memdeck's (MEMORY.md, memory.md)."""
    return "openclaw" if engine.settings.profile == "openclaw" else "memdeck"


def open_memory_file(engine: Engine, path: str) -> tuple[str, OpenedFile] | MemoryGetAnswer:
    """(shown path, opened file) of a memory file, or memory_get's refusal answer.

    The file is opened without following symlinks and checked on the open
    descriptor (``safe_open``), for workspace paths and ``qmd/<collection>/…``
    alike; a NUL byte, an over-long name, a folder, a FIFO, a hard link or a
    binary file are refused with the reason, never raised. Under the
    ``openclaw`` profile a memory path with no file is OpenClaw's
    ``status: "not_found"`` answer instead of a refusal.
    """
    shown = path
    try:
        if engine.qmd is not None and path.strip().replace("\\", "/").startswith("qmd/"):
            shown = path.strip().replace("\\", "/")
            opened = engine.qmd.open_qmd_path(path)
        else:
            target = engine.workspace.resolve(path, read_rule(engine))
            shown = engine.workspace.rel(target)
            opened = engine.workspace.open(target)
    except FileNotFoundError:
        if read_rule(engine) == "openclaw":
            return MemoryGetAnswer.not_found(shown)
        return MemoryGetAnswer.refused(path, f"{path}: no such memory file")
    except PathRefused as exc:
        return MemoryGetAnswer.refused(path, str(exc), code=PATH_NOT_ALLOWED)
    except OSError as exc:
        return MemoryGetAnswer.refused(path, f"{path}: cannot read ({exc.strerror or exc})")
    if sniff_binary(opened):
        opened.close()
        return MemoryGetAnswer.refused(path, f"{shown}: looks binary (NUL bytes), not read")
    return shown, opened


class MemoryGetError(ValueError):
    """``memory_get`` cannot read that path: refused, missing, or the tools are off.

    ``answer`` is the tool's answer for it (the refusal, or under the ``openclaw``
    profile OpenClaw's ``not_found``/``error`` shape)."""

    def __init__(self, message: str, answer: MemoryGetAnswer, *, disabled: bool = False):
        super().__init__(message)
        self.answer = answer
        self.disabled = disabled


@dataclass(frozen=True)
class MemoryRead:
    """A page of a memory file and the path as the tools show it."""

    path: str
    page: Page
    openclaw: bool = False  # answer in OpenClaw 2026.9.6's tool shape (``status``)


def read_memory(
    engine: Engine,
    path: str,
    from_line: int | None = None,
    lines: int | None = None,
    *,
    from_char: int | None = None,
) -> MemoryRead:
    """The page ``memory_get`` returns (see ``engine.workspace.paging``); raises
    ``MemoryGetError`` for a refused or missing path."""
    reason = tools_disabled_reason(engine)
    if reason:
        raise MemoryGetError(
            reason, MemoryGetAnswer.refused(path, reason, disabled=True), disabled=True
        )
    opened = open_memory_file(engine, path)
    if isinstance(opened, MemoryGetAnswer):
        if opened.status == "not_found":
            raise MemoryGetError(f"{opened.path}: not found (status not_found)", opened)
        raise MemoryGetError(opened.error or "cannot read", opened)
    shown, fh = opened
    # only the page is kept in memory: two lines of a 3 GB file cost one block
    try:
        with fh:
            page = read_page_streaming(fh, from_line, lines, from_char=from_char)
    except OSError as exc:
        message = f"{path}: cannot read ({exc.strerror or exc})"
        raise MemoryGetError(message, MemoryGetAnswer.refused(path, message)) from None
    return MemoryRead(shown, page, read_rule(engine) == "openclaw")


def memory_get(
    engine: Engine,
    path: str,
    from_line: int | None = None,
    lines: int | None = None,
    *,
    from_char: int | None = None,
) -> dict[str, Any]:
    """Read a slice of a memory file: ``lines`` lines from 1-based ``from_line``.

    OpenClaw's shape: ``text`` (ending in a continuation notice when there is
    more), ``path``, ``from``, ``lines``, and ``truncated``/``nextFrom`` only when
    something is left. memdeck adds ``fromChar`` (echoed when given) and
    ``nextChar`` (a line longer than the page was cut: continue it with
    ``from=<that line>, fromChar=nextChar``).

    Under the ``openclaw`` profile the answer also carries OpenClaw 2026.9.6's
    ``status``: ``"ok"``, ``"not_found"`` for a memory path with no file (data,
    not an error: ``{"status": "not_found", "text": "", "path": …}``) or
    ``"error"`` with ``code`` (``MEMORY_PATH_NOT_ALLOWED`` for a refused path).
    """
    try:
        got = read_memory(engine, path, from_line, lines, from_char=from_char)
    except MemoryGetError as exc:
        if read_rule(engine) == "openclaw":
            return exc.answer.with_status().to_json()
        return exc.answer.to_json()
    return memory_get_answer(got).to_json()


def memory_get_answer(got: MemoryRead) -> MemoryGetAnswer:
    """The ``memory_get`` answer for a page that was read."""
    answer = MemoryGetAnswer.of_page(got.path, got.page)
    return answer.with_status() if got.openclaw else answer
