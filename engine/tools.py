"""The agent-facing tools ``memory_search`` and ``memory_get``.

Their contract (arguments, result shape, limits, which paths ``memory_get`` may
read) is in docs/architecture.md "Agent tools".

They return plain JSON-able dicts in OpenClaw's documented shapes. Failures that
an agent should see (search disabled, a refused path) come back as data with an
``error``, not as exceptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.core import Engine
from engine.memory.recall import QMD_MODE_PREFIX, ReturnedText, record_results, record_search
from engine.search.pipeline import SearchOutcome
from engine.search.results import (
    BackendFallback,
    SearchAnswer,
    SearchUnavailable,
    search_hit,
    snippet,
)
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


def citations_on(engine: Engine) -> bool:
    return engine.settings.citations in ("auto", "on")


def search_answer(engine: Engine, outcome: SearchOutcome, *, explain: bool = False) -> SearchAnswer:
    """The ``memory_search`` answer for a builtin outcome (plus the breakdown if asked)."""
    cite = citations_on(engine)
    results = tuple(
        search_hit(
            c.path,
            c.start_line,
            c.end_line,
            round(c.score, 6),
            snippet(c.text),
            c.source,
            cite=cite,
            breakdown=c.to_dict(outcome.options) if explain else None,
        )
        for c in outcome.results
    )
    describe = engine.provider.describe() if engine.provider else {}
    switch = describe.get("fallback")  # the embedding fallback's switch record, if it switched
    fallback_state = switch if isinstance(switch, Mapping) and switch else None
    explanation: dict[str, Any] | None = None
    reason = keyword_only_reason(engine, outcome)
    if reason is not None and fallback_state is None:
        fallback_state = {"from": outcome.options.mode, "to": outcome.mode, "reason": reason}
    if explain:
        r = outcome.retrieval
        explanation = {
            "fusion": outcome.fusion,
            "options": outcome.options.__dict__ | {"sources": list(outcome.options.sources)},
            "fts_query": r.fts_query,
            "fts_operator": r.fts_operator,
            "bm25_idf_scale": r.bm25_idf_scale,
            "fts_candidates": [[cid, rank] for cid, rank in r.fts_hits],
            "vector_candidates": [[cid, round(sim, 6)] for cid, sim in r.vector_hits],
            "vector_error": r.vector_error,
            "keyword_rescue": outcome.rescue_used,
            "dropped": [c.to_dict(outcome.options) for c in outcome.dropped],
            "timings_ms": {k: round(v, 3) for k, v in outcome.timings_ms.items()},
        }
    return SearchAnswer(
        results=results,
        provider=engine.provider.id if engine.provider else "none",
        model=engine.provider.model if engine.provider else None,
        fallback=fallback_state,
        citations=engine.settings.citations,
        mode=outcome.mode,
        backend=engine.settings.backend,
        explain=explanation,
        reason=reason,
    )


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
) -> SearchAnswer | SearchUnavailable:
    """memory_search as a typed answer; under ``memory.backend = "qmd"`` qmd answers,
    the builtin index only when qmd fails (``backend`` forces one: "qmd" or "builtin").
    ``client`` names the caller in the recall log (the app's "Agent activity")."""
    reason = tools_disabled_reason(engine)
    if reason:
        return SearchUnavailable(error=reason, action="enable memorySearch in openclaw.json")
    if engine.settings.profile == "openclaw" and backend != "qmd":
        return openclaw_search_answer(
            engine,
            query,
            None if max_results is None else max(1, int(max_results)),
            None if min_score is None else min(1.0, max(0.0, float(min_score))),
            explain=explain,
        )
    options = engine.default_options()
    if max_results is not None:
        options = options.with_(max_results=max(1, int(max_results)))
    if min_score is not None:
        options = options.with_(min_score=min(1.0, max(0.0, float(min_score))))
    qmd_fallback = None
    if engine.qmd is not None and backend != "builtin":
        from engine.qmd.backend import search_answer as qmd_search_answer

        answer = engine.qmd.search(
            query,
            max_results=max_results,
            min_score=min_score,
            session_key=session_key,
            citations=citations_on(engine),
        )
        if answer.ok:
            out = qmd_search_answer(engine.qmd, answer, engine.settings.citations)
            record_qmd_search(engine, query, out, max_results, min_score, client=client)
            return out
        qmd_fallback = BackendFallback("qmd", "builtin", answer.error)
    try:
        outcome = engine.search(query, options)
    except Exception as exc:
        return SearchUnavailable(
            error=f"{type(exc).__name__}: {exc}",
            action="run `memdeck status` and `memdeck index --force`",
        )
    # recall evidence for dreaming and the activity log; never raises
    record_search(engine, query, outcome, client=client)
    out = search_answer(engine, outcome, explain=explain)
    if engine.qmd is not None:  # qmd is configured but the builtin index answered
        out = replace(out, backend="builtin", backend_fallback=qmd_fallback)
    return out


def record_qmd_search(
    engine: Engine,
    query: str,
    answer: SearchAnswer,
    max_results: int | None,
    min_score: float | None,
    *,
    client: str,
) -> None:
    """Record a search qmd answered like a builtin one (recall evidence and the app's
    Agent activity), with the limits qmd applied; never raises."""
    assert engine.qmd is not None
    limit = engine.qmd.qs.limits.max_results
    returned = [
        ReturnedText(h.path, h.source, h.start_line, h.end_line, h.excerpt, h.score)
        for h in answer.results
    ]
    record_results(
        engine,
        query,
        returned,
        mode=f"{QMD_MODE_PREFIX}{answer.mode}",
        max_results=min(max_results or limit, limit),
        min_score=0.0 if min_score is None else min(1.0, max(0.0, float(min_score))),
        client=client,
    )


def keyword_only_reason(engine: Engine, outcome: SearchOutcome) -> str | None:
    """Why a search that asked for vectors answered keyword-only (None if it did not,
    or if no embedding provider is configured at all)."""
    if outcome.options.mode == outcome.mode or outcome.mode != "fts":
        return None
    r = outcome.retrieval
    if r.vector_error:
        return r.vector_error
    if engine.provider is None:
        return engine.provider_error  # None: "provider: none" is a choice, not a fallback
    if r.vector_available:
        return None
    return "the index has no vectors for this provider yet; run `memdeck index`"


def openclaw_search_answer(
    engine: Engine,
    query: str,
    max_results: int | None = None,
    min_score: float | None = None,
    *,
    explain: bool = False,
) -> SearchAnswer | SearchUnavailable:
    """memory_search under the ``openclaw`` profile: OpenClaw 2026.9.6's ranking in
    memory_search's shape, with the profile's breakdown when asked."""
    try:
        outcome = engine.search_openclaw(query, max_results=max_results, min_score=min_score)
    except Exception as exc:
        return SearchUnavailable(
            error=f"{type(exc).__name__}: {exc}", action="run `memdeck status`"
        )
    cite = citations_on(engine)
    results = tuple(
        search_hit(
            c.path,
            c.start_line,
            c.end_line,
            c.score,
            snippet(c.text),
            c.source,
            cite=cite,
            breakdown=c.to_dict() if explain else None,
        )
        for c in outcome.results
    )
    explanation: dict[str, Any] | None = None
    if explain:
        explanation = {
            "profile": "openclaw",
            "keyword_terms": list(outcome.keyword_terms),
            "min_score_floor_dropped": outcome.floor_dropped,
            "options": {"max_results": outcome.max_results, "min_score": outcome.min_score},
            "dropped": [c.to_dict() for c in outcome.dropped[:50]],
        }
    return SearchAnswer(
        results=results,
        provider=engine.provider.id if engine.provider else "none",
        model=engine.provider.model if engine.provider else None,
        fallback=None,
        citations=engine.settings.citations,
        mode=outcome.mode,
        backend="builtin",
        explain=explanation,
        profile="openclaw",
    )


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
