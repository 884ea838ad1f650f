"""The ``memory_search`` answer as typed records, built in one place for both backends.

The builtin index (``engine.tools``) and the qmd sidecar (``engine.qmd.backend``)
answer the same tool, so they share these records: a hit's ``Source:`` footer
and citation are made only by :func:`search_hit`, and the answer's keys only by
``SearchAnswer.to_json()`` — the JSON an agent, ``memdeck search --json`` and
the MCP server see (OpenClaw's memory_search shape, documented in
docs/architecture.md "Agent tools").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from engine.records import JsonRecord

#: a snippet's length before its ``Source:`` footer (OpenClaw's 700 characters)
SNIPPET_MAX_CHARS = 700
#: the longest query ``memory_search`` takes (the MCP schema, the CLI, the app): a
#: question or a paragraph fits many times over; the embedding model reads ~2,000
#: characters of it, and the recall log stores at most this much of one
MAX_QUERY_CHARS = 4_096


class QueryRefused(ValueError):
    """The query cannot be searched (too long); the message says why, never echoing it."""


def query_problem(query: str) -> str | None:
    """Why ``query`` is refused, or None."""
    if len(query) > MAX_QUERY_CHARS:
        return (
            f"the query is {len(query):,} characters; memory_search takes at most "
            f"{MAX_QUERY_CHARS:,}: search for the words that matter"
        )
    return None


def check_query(query: str) -> str:
    """``query`` if it can be searched, else :class:`QueryRefused`."""
    problem = query_problem(query)
    if problem is not None:
        raise QueryRefused(problem)
    return query


def snippet(text: str, limit: int = SNIPPET_MAX_CHARS) -> str:
    """At most ``limit`` characters, cut on a character (code point) boundary."""
    return text if len(text) <= limit else text[:limit]


def citation(path: str, start: int, end: int) -> str:
    """``path#L3`` or ``path#L3-L7``: where a hit is, as agents cite it."""
    return f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}"


@dataclass(frozen=True)
class SearchHit(JsonRecord):
    """One result: where it is, how well it scored, and the text to show.

    ``snippet`` ends with ``"\\n\\nSource: <citation>"`` when citations are on;
    ``excerpt`` is the text without that footer. ``collection``/``docid``/
    ``title`` come only from qmd, ``breakdown`` only from an explained builtin
    search; each is left out of the JSON when unset. ``kept_below_min_score`` says
    why a hit scoring under minScore is in the list (memdeck's keyword rescue,
    OpenClaw's keyword top-up or its floor); the text output prints it, the JSON
    keeps the tool's shape (``--explain``'s breakdown has the numbers). ``focus`` is
    the line of ``excerpt`` (0-based) where the unit the ranking took starts, when the
    snippet is memdeck's: the text output shows the excerpt from there; not in the
    JSON either.
    """

    JSON_NAMES: ClassVar[Mapping[str, str]] = {"start_line": "startLine", "end_line": "endLine"}
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"collection", "docid", "title", "citation", "breakdown"}
    )
    JSON_HIDDEN: ClassVar[frozenset[str]] = frozenset({"kept_below_min_score", "focus"})

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str  # "memory" or "sessions"
    collection: str | None = None
    docid: str | None = None
    title: str | None = None
    citation: str | None = None
    breakdown: Mapping[str, object] | None = None
    kept_below_min_score: str | None = None
    focus: int | None = None

    @property
    def excerpt(self) -> str:
        """The snippet without its ``Source:`` footer."""
        if self.citation is None:
            return self.snippet
        return self.snippet.removesuffix(source_footer(self.citation))


def source_footer(ref: str) -> str:
    return f"\n\nSource: {ref}"


def search_hit(
    path: str,
    start_line: int,
    end_line: int,
    score: float,
    text: str,
    source: str,
    *,
    cite: bool,
    collection: str | None = None,
    docid: str | None = None,
    title: str | None = None,
    breakdown: Mapping[str, object] | None = None,
    kept_below_min_score: str | None = None,
    cite_lines: tuple[int, int] | None = None,
    focus: int | None = None,
) -> SearchHit:
    """A hit whose snippet is ``text`` plus, with ``cite``, the ``Source:`` footer.

    The citation names the hit's lines, or ``cite_lines`` — the lines the snippet
    holds, when it is a part of the hit (memdeck's snippet, ``engine.search.snippets``).
    """
    first, last = cite_lines if cite_lines is not None else (start_line, end_line)
    ref = citation(path, first, last) if cite else None
    return SearchHit(
        path=path,
        start_line=start_line,
        end_line=end_line,
        score=score,
        snippet=text + source_footer(ref) if ref else text,
        source=source,
        collection=collection,
        docid=docid,
        title=title or None,
        citation=ref,
        breakdown=breakdown,
        kept_below_min_score=kept_below_min_score,
        focus=focus,
    )


@dataclass(frozen=True)
class BackendFallback(JsonRecord):
    """qmd failed on this query and the builtin index answered instead."""

    JSON_NAMES: ClassVar[Mapping[str, str]] = {"from_": "from"}

    from_: str
    to: str
    reason: str | None


@dataclass(frozen=True)
class SearchAnswer(JsonRecord):
    """A ``memory_search`` answer.

    ``fallback`` is the embedding provider's fallback switch (None while the
    primary serves), or, when the search degraded to keyword-only, ``{from, to,
    reason}``; ``backend_fallback`` says qmd failed and the builtin index
    answered; ``denied``/``scope`` are a qmd scope denial; ``explain`` is the
    builtin pipeline's explanation when asked for.
    """

    JSON_NAMES: ClassVar[Mapping[str, str]] = {"backend_fallback": "backendFallback"}
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"explain", "denied", "scope", "backend_fallback", "reason", "profile"}
    )

    results: tuple[SearchHit, ...]
    provider: str
    model: str | None
    fallback: Mapping[str, object] | None
    citations: str
    mode: str
    backend: str
    explain: Mapping[str, object] | None = None
    denied: bool | None = None
    scope: str | None = None
    backend_fallback: BackendFallback | None = None
    #: why a search that asked for vectors answered keyword-only (provider failed,
    #: search budget spent, NaN query vector); ``fallback`` then says from/to
    reason: str | None = None
    #: "openclaw" when the answer is OpenClaw 2026.9.6's ranking (the openclaw profile)
    profile: str | None = None


@dataclass(frozen=True, kw_only=True)
class SearchUnavailable(JsonRecord):
    """``memory_search`` cannot run (tools disabled, index broken): why, and what to do."""

    results: tuple[SearchHit, ...] = ()
    disabled: bool = True
    error: str
    action: str
