"""The CLI's view of the QMD backend: attaching it, comparing it, describing it.

``memdeck search --compare QUERY`` runs the same query through ``qmd search``
(BM25 in qmd's own index) and through memdeck's builtin index in FTS-only mode
(BM25 in memdeck's index, scores mapped to 0..1), and prints the two rankings
side by side — the quickest way to see whether the two engines agree on a
workspace, and where their chunking and scoring differ.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from engine.qmd.backend import QmdBackend
from engine.qmd.backend import search_answer as qmd_search_answer
from engine.records import JsonRecord
from engine.search.results import SearchAnswer, SearchHit

if TYPE_CHECKING:
    from engine.core import Engine
    from engine.status import EngineStatus


def show_qmd_progress(backend: QmdBackend) -> None:
    """Slow qmd steps (a first ``qmd embed``) are announced on stderr while we wait."""
    import sys

    from engine.cli.qmd_progress import QmdProgressPrinter

    backend.on_step = QmdProgressPrinter(sys.stderr)


def attach(engine: Engine) -> QmdBackend:
    """The engine's qmd backend (created if the config's backend is builtin), booted.

    A one-shot command waits for the boot refresh (collections, update, embed):
    a background refresh would be killed when the command exits, before it helped.
    """
    if engine.qmd is None:
        engine.qmd = QmdBackend(engine.settings, engine.workspace)
    show_qmd_progress(engine.qmd)
    engine.qmd.start(wait=True)
    return engine.qmd


@dataclass(frozen=True)
class CompareSide(JsonRecord):
    """One column of ``--compare``: the answer (or qmd's failure) and how long it took."""

    answer: SearchAnswer | None  # None: qmd failed (``error``, ``kind``)
    duration_ms: float
    backend: str = "qmd"
    error: str | None = None
    kind: str | None = None

    @property
    def results(self) -> tuple[SearchHit, ...]:
        return self.answer.results if self.answer is not None else ()

    def to_json(self) -> dict[str, Any]:
        duration = round(self.duration_ms, 1)
        if self.answer is not None:
            return self.answer.to_json() | {"duration_ms": duration}
        return {
            "results": [],
            "backend": self.backend,
            "error": self.error,
            "kind": self.kind,
            "duration_ms": duration,
        }


@dataclass(frozen=True)
class Comparison(JsonRecord):
    """``memdeck search --compare``: one query, qmd ``search`` beside builtin FTS-only."""

    query: str
    qmd: CompareSide
    builtin: CompareSide


def compare(engine: Engine, query: str, max_results: int | None = None) -> Comparison:
    """Both rankings for one query: qmd ``search`` (no fallback) and builtin FTS-only."""
    from engine.searchers import citations_on, search_answer

    backend = attach(engine)
    limit = max_results or backend.qs.limits.max_results
    answer = backend.search(query, max_results=limit, citations=citations_on(engine), mode="search")
    if answer.ok:
        qmd_answer = replace(
            qmd_search_answer(backend, answer, engine.settings.citations), mode="search"
        )
        qmd = CompareSide(qmd_answer, answer.duration_ms)
    else:
        qmd = CompareSide(None, answer.duration_ms, error=answer.error, kind=answer.kind)
    options = engine.default_options().with_(mode="fts", max_results=limit, min_score=0.0)
    outcome = engine.search(query, options)
    builtin = CompareSide(search_answer(engine, outcome), outcome.timings_ms.get("total", 0.0))
    return Comparison(query, qmd, builtin)


def _cell(r: SearchHit | None, width: int) -> str:
    if r is None:
        return ""
    text = f"{r.path}:{r.start_line}-{r.end_line} {r.score:.2f}"
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def format_compare(data: Comparison, width: int | None = None) -> str:
    """Two columns: qmd search | builtin FTS-only, one row per rank."""
    total = width or shutil.get_terminal_size((100, 20)).columns
    col = max(24, (total - 6) // 2)
    qmd, builtin = data.qmd, data.builtin
    left_head = f"qmd search ({round(qmd.duration_ms, 1):.1f} ms)"
    right_head = f"builtin fts ({round(builtin.duration_ms, 1):.1f} ms)"
    lines = [f"query: {data.query}", f"#   {left_head:<{col}}  {right_head}"]
    if qmd.error:
        lines.append(f"    qmd failed ({qmd.kind}): {qmd.error}")
    left, right = qmd.results, builtin.results
    rows = max(len(left), len(right))
    left_paths = {r.path for r in left}
    right_paths = {r.path for r in right}
    for i in range(rows):
        a = left[i] if i < len(left) else None
        b = right[i] if i < len(right) else None
        mark_a = "*" if a is not None and a.path in right_paths else " "
        mark_b = "*" if b is not None and b.path in left_paths else " "
        lines.append(f"{i + 1:<3}{mark_a}{_cell(a, col):<{col}} {mark_b}{_cell(b, col)}")
    if rows == 0:
        lines.append("    (no results on either side)")
    shared = len(left_paths & right_paths)
    lines.append(f"* = file found by both ({shared} shared)")
    return "\n".join(lines)


def status_lines(st: EngineStatus) -> list[str]:
    """The ``memdeck status`` lines about the backend (nothing extra for builtin)."""
    q = st.qmd
    if q is None:
        return []
    lines = [f"backend     qmd ({q.resolved_command or q.command}, {q.search_mode})"]
    if st.fallback:
        lines.append(f"fallback    {st.fallback} — {st.fallback_reason}")
    names = ", ".join(c.name for c in q.collections) or "none"
    lines.append(f"qmd colls   {names}")
    if q.embed_model:
        lines.append(f"qmd embed   {q.embed_model}")
    for w in q.warnings:
        lines.append(f"qmd warning {w}")
    return lines
