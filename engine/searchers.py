"""Who answers a ``memory_search``: memdeck's ranking, the ``openclaw`` profile, or qmd.

One :class:`Searcher` per way of answering, all with the same contract: a
:class:`SearchRequest` in, a ``memory_search`` answer out (a
:class:`~engine.search.results.SearchAnswer`, or
:class:`~engine.search.results.SearchUnavailable` with the reason), and the
search recorded in the recall log (dreaming's evidence and the app's "Agent
activity"). The engine picks one when it opens (:func:`choose_searcher`); the
CLI, the MCP server and the app ask the engine for it and never decide again.

* :class:`MemdeckSearcher` — memdeck's own hybrid ranking over its index.
* :class:`OpenClawSearcher` — OpenClaw 2026.9.6's ranking, reproduced over a
  profile index of the files (``engine.openclaw``); needs no memdeck index.
* :class:`QmdSearcher` — the qmd sidecar (``memory.backend = "qmd"``), with
  memdeck's index answering when qmd fails, and saying so.

Searchers reach the engine through :class:`SearchHost`, a protocol, so this
module sits below ``engine.core`` and the engine can build them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from engine.config.settings import MemorySearchSettings, Settings
from engine.embeddings.base import EmbeddingProvider
from engine.index.db import StoreUnreachable
from engine.index.index_store import IndexStore
from engine.memory.recall import (
    OPENCLAW_MODE_PREFIX,
    QMD_MODE_PREFIX,
    ReturnedText,
    record_results,
    record_search,
)
from engine.search.explain import candidate_json, fmt, threshold
from engine.search.model import SearchOptions, SearchOutcome
from engine.search.query import parse_query
from engine.search.results import (
    BackendFallback,
    SearchAnswer,
    SearchUnavailable,
    search_hit,
    snippet,
)
from engine.search.snippets import candidate_snippet
from engine.workspace.files import Workspace

if TYPE_CHECKING:
    from engine.openclaw.profile import OpenClawOutcome
    from engine.openclaw.runner import OpenClawRunner
    from engine.qmd.backend import QmdBackend

SearcherName = Literal["memdeck", "openclaw", "qmd"]
Answer = SearchAnswer | SearchUnavailable


@dataclass(frozen=True)
class SearchRequest:
    """One ``memory_search`` call as every searcher takes it."""

    query: str
    max_results: int | None = None
    min_score: float | None = None
    explain: bool = False
    #: qmd's session scope (``memory.qmd.scope``)
    session_key: str | None = None
    #: memdeck's ranking knobs (``--mode``/``--fusion``/``--mmr``/``--decay``); None:
    #: the configured ones
    options: SearchOptions | None = None
    #: who asked, for the recall log ("cli", or the MCP client's name)
    client: str = "cli"


class SearchHost(Protocol):
    """What the searchers need from the engine (``engine.core.Engine``)."""

    settings: Settings
    ms: MemorySearchSettings
    provider: EmbeddingProvider | None
    provider_error: str | None
    qmd: QmdBackend | None
    workspace: Workspace
    unavailable: str | None

    @property
    def store(self) -> IndexStore: ...
    def index_exists(self) -> bool: ...
    def default_options(self) -> SearchOptions: ...
    def search(self, query: str, options: SearchOptions | None = None) -> SearchOutcome: ...
    def search_provider(self) -> EmbeddingProvider | None: ...
    def pinned_store(self) -> AbstractContextManager[IndexStore]: ...


class Searcher(Protocol):
    """Answers ``memory_search`` one way; see the module docstring."""

    #: which way: the CLI's ``profile``/``backend`` labels come from it
    name: SearcherName

    @property
    def needs_index(self) -> bool:
        """True when it answers from memdeck's index (the CLI refuses to search
        before ``memdeck index`` built one: search never builds it)."""
        ...

    def answer(self, request: SearchRequest) -> Answer: ...


def citations_on(host: SearchHost) -> bool:
    return host.settings.citations in ("auto", "on")


def clamp_min_score(value: float | None) -> float | None:
    return None if value is None else min(1.0, max(0.0, float(value)))


def clamp_max_results(value: int | None) -> int | None:
    return None if value is None else max(1, int(value))


# -- memdeck's own ranking ---------------------------------------------------------------
class MemdeckSearcher:
    name: SearcherName = "memdeck"
    needs_index = True

    def __init__(self, host: SearchHost):
        self.host = host

    def options(self, request: SearchRequest) -> SearchOptions:
        options = request.options or self.host.default_options()
        changes: dict[str, Any] = {}
        if request.max_results is not None:
            changes["max_results"] = clamp_max_results(request.max_results)
        if request.min_score is not None:
            changes["min_score"] = clamp_min_score(request.min_score)
        return options.with_(**changes) if changes else options

    def answer(self, request: SearchRequest) -> Answer:
        try:
            outcome = self.host.search(request.query, self.options(request))
        except StoreUnreachable as exc:  # the index is fine: its server is not there
            return SearchUnavailable(
                error=f"{type(exc).__name__}: {exc}",
                action="check that the store's server is running and reachable "
                "(`memdeck status` names it); the index needs no rebuild",
            )
        except Exception as exc:
            return SearchUnavailable(
                error=f"{type(exc).__name__}: {exc}",
                action="run `memdeck status` and `memdeck index --force`",
            )
        # recall evidence for dreaming and the activity log; never raises
        record_search(self.host, request.query, outcome, client=request.client)
        return search_answer(self.host, outcome, explain=request.explain)


def _rescue_note(text_weight: float, options: SearchOptions) -> str:
    """Why a hit under minScore was kept (rank.cut_results' keyword rescue)."""
    floor = min(options.min_score, text_weight)
    return (
        f"below minScore {threshold(options.min_score)}: kept by the keyword rescue (no "
        f"hit reached it; keyword hits ≥ min(minScore, textWeight) = {fmt(floor)} stay)"
    )


def _openclaw_note(topped_up: bool, outcome: OpenClawOutcome) -> str | None:
    """Why OpenClaw 2026.9.6 returns a hit under minScore: its keyword top-up, or
    the floor dropped to 0 when nothing passed minScore."""
    below = f"below minScore {threshold(outcome.min_score)}"
    if topped_up:
        return f"{below}: kept by OpenClaw's top-up with keyword hits (up to maxResults)"
    if outcome.floor_dropped:
        return f"{below}: nothing passed it, so OpenClaw drops the floor to 0 for keyword hits"
    return None


def search_answer(
    host: SearchHost, outcome: SearchOutcome, *, explain: bool = False
) -> SearchAnswer:
    """The ``memory_search`` answer for memdeck's ranking (plus the breakdown if asked)."""
    cite = citations_on(host)
    # memdeck's snippet: the best unit's lines and the query's words (engine.search.snippets)
    words = parse_query(outcome.query).terms
    shown = [candidate_snippet(c, words) for c in outcome.results]
    results = tuple(
        search_hit(
            c.path,
            c.start_line,
            c.end_line,
            round(c.score, 6),
            part.text,
            c.source,
            cite=cite,
            breakdown=candidate_json(c, outcome.options) if explain else None,
            kept_below_min_score=_rescue_note(c.text_weight, outcome.options)
            if c.rescued
            else None,
            cite_lines=(part.first_line, part.last_line),
            focus=None if part.anchor is None else part.anchor - part.first_line,
        )
        for c, part in zip(outcome.results, shown, strict=True)
    )
    describe = host.provider.describe() if host.provider else {}
    switch = describe.get("fallback")  # the embedding fallback's switch record, if it switched
    fallback_state = switch if isinstance(switch, Mapping) and switch else None
    explanation: dict[str, Any] | None = None
    reason = keyword_only_reason(host, outcome)
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
            "dropped": [candidate_json(c, outcome.options) for c in outcome.dropped],
            "timings_ms": {k: round(v, 3) for k, v in outcome.timings_ms.items()},
        }
    return SearchAnswer(
        results=results,
        provider=host.provider.id if host.provider else "none",
        model=host.provider.model if host.provider else None,
        fallback=fallback_state,
        citations=host.settings.citations,
        mode=outcome.mode,
        backend=host.settings.backend,
        explain=explanation,
        reason=reason,
    )


def keyword_only_reason(host: SearchHost, outcome: SearchOutcome) -> str | None:
    """Why a search that asked for vectors answered keyword-only (None if it did not,
    or if no embedding provider is configured at all)."""
    if outcome.options.mode == outcome.mode or outcome.mode != "fts":
        return None
    r = outcome.retrieval
    if r.vector_error:
        return r.vector_error
    if host.provider is None:
        return host.provider_error  # None: "provider: none" is a choice, not a fallback
    if r.vector_available:
        return None
    refused = host.store.get_meta("provider_refused")
    if refused:
        return f"the last index could not use the embedding provider ({refused})"
    if not host.store.counts()["chunks"]:
        return "the index holds no text: no memory file was indexed (`memdeck index` says why)"
    return "the index has no vectors for this provider yet; run `memdeck index`"


# -- OpenClaw 2026.9.6's ranking ---------------------------------------------------------
class OpenClawSearcher:
    name: SearcherName = "openclaw"
    needs_index = False  # the profile builds its own index from the files

    def __init__(self, host: SearchHost):
        self.host = host
        self._runner: OpenClawRunner | None = None
        self._lock = threading.Lock()

    def _get_runner(self) -> OpenClawRunner:
        from engine.openclaw.runner import OpenClawRunner

        with self._lock:
            if self._runner is None:
                ws = self.host.workspace
                self._runner = OpenClawRunner(ws.root, tuple(ws.extra_paths))
            return self._runner

    def cache_model_vectors(self, provider: EmbeddingProvider, store: IndexStore) -> int:
        """A writer's part: the profile's chunk vectors into the embedding cache
        (``OpenClawRunner.cache_model_vectors``); returns how many were embedded."""
        return self._get_runner().cache_model_vectors(provider, store)

    def outcome(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        now_ms: float | None = None,
    ) -> OpenClawOutcome:
        """OpenClaw 2026.9.6's memory_search, explained (the profile's own record)."""
        q = self.host.ms.query
        # the profile needs no memdeck index; it only borrows its cached vectors
        usable = self.host.unavailable is None and self.host.index_exists()
        return self._get_runner().search(
            query,
            max_results=q.max_results if max_results is None else max_results,
            min_score=q.min_score if min_score is None else min_score,
            provider=self.host.search_provider() if usable else None,
            store=self.host.store if usable else None,
            now_ms=now_ms,
        )

    def answer(self, request: SearchRequest) -> Answer:
        try:
            outcome = self.outcome(
                request.query,
                max_results=clamp_max_results(request.max_results),
                min_score=clamp_min_score(request.min_score),
            )
        except Exception as exc:
            return SearchUnavailable(
                error=f"{type(exc).__name__}: {exc}", action="run `memdeck status`"
            )
        record_results(
            self.host,
            request.query,
            outcome.results,
            mode=f"{OPENCLAW_MODE_PREFIX}{outcome.mode}",
            max_results=outcome.max_results,
            min_score=outcome.min_score,
            client=request.client,
        )
        cite = citations_on(self.host)
        results = tuple(
            search_hit(
                c.path,
                c.start_line,
                c.end_line,
                c.score,
                snippet(c.text),
                c.source,
                cite=cite,
                breakdown=c.to_dict() if request.explain else None,
                kept_below_min_score=_openclaw_note(c.topped_up, outcome)
                if c.score < outcome.min_score
                else None,
            )
            for c in outcome.results
        )
        explanation: dict[str, Any] | None = None
        if request.explain:
            explanation = {
                "profile": "openclaw",
                "keyword_terms": list(outcome.keyword_terms),
                "min_score_floor_dropped": outcome.floor_dropped,
                "options": {"max_results": outcome.max_results, "min_score": outcome.min_score},
                "dropped": [c.to_dict() for c in outcome.dropped[:50]],
            }
        provider = self.host.provider
        return SearchAnswer(
            results=results,
            provider=provider.id if provider else "none",
            model=provider.model if provider else None,
            fallback=None,
            citations=self.host.settings.citations,
            mode=outcome.mode,
            backend="builtin",
            explain=explanation,
            profile="openclaw",
        )


# -- the qmd sidecar ----------------------------------------------------------------------
class QmdSearcher:
    name: SearcherName = "qmd"
    needs_index = False  # memdeck's index only answers when qmd fails

    def __init__(self, host: SearchHost, qmd: QmdBackend, fallback: MemdeckSearcher):
        self.host = host
        self.qmd = qmd
        self.fallback = fallback

    def answer(self, request: SearchRequest) -> Answer:
        from engine.qmd.backend import search_answer as qmd_search_answer

        answer = self.qmd.search(
            request.query,
            max_results=request.max_results,
            min_score=request.min_score,
            session_key=request.session_key,
            citations=citations_on(self.host),
        )
        if answer.ok:
            out = qmd_search_answer(self.qmd, answer, self.host.settings.citations)
            self._record(request, out)
            return out
        builtin = self.fallback.answer(request)
        if isinstance(builtin, SearchUnavailable):
            return builtin
        return replace(
            builtin,
            backend="builtin",
            backend_fallback=BackendFallback("qmd", "builtin", answer.error),
        )

    def _record(self, request: SearchRequest, answer: SearchAnswer) -> None:
        """Record a search qmd answered like a builtin one, with the limits qmd
        applied; never raises."""
        limit = self.qmd.qs.limits.max_results
        returned = [
            ReturnedText(h.path, h.source, h.start_line, h.end_line, h.excerpt, h.score)
            for h in answer.results
        ]
        record_results(
            self.host,
            request.query,
            returned,
            mode=f"{QMD_MODE_PREFIX}{answer.mode}",
            max_results=min(request.max_results or limit, limit),
            min_score=clamp_min_score(request.min_score) or 0.0,
            client=request.client,
        )


class BuiltinSearcher(MemdeckSearcher):
    """memdeck's ranking where qmd is configured but the caller asked for the builtin
    index (``--backend builtin``): the answer says the builtin index answered."""

    def answer(self, request: SearchRequest) -> Answer:
        out = super().answer(request)
        return out if isinstance(out, SearchUnavailable) else replace(out, backend="builtin")


def choose_searcher(
    host: SearchHost, backend: str | None = None, profile: str | None = None
) -> Searcher:
    """The searcher for this engine's settings; ``backend`` ("qmd" or "builtin")
    overrides ``memory.backend`` and ``profile`` ("memdeck" or "openclaw") the
    ranking profile, for one call."""
    memdeck = MemdeckSearcher(host)
    profile = profile or host.settings.profile
    if backend == "qmd":
        return QmdSearcher(host, host.qmd, memdeck) if host.qmd is not None else memdeck
    if profile == "openclaw":
        return OpenClawSearcher(host)
    if host.qmd is not None:
        return (
            BuiltinSearcher(host) if backend == "builtin" else QmdSearcher(host, host.qmd, memdeck)
        )
    return memdeck
