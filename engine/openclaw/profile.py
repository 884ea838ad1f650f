"""The ``openclaw`` ranking profile: OpenClaw 2026.9.6's ``memory_search``, reproduced.

A user who asks "why did my agent's memory_search return X?" needs the ranking
the agent got, not memdeck's own. This module reproduces 2026.9.6's keyword
retrieval and ranking over a profile index built with OpenClaw's chunking
(:mod:`engine.openclaw.chunking`), and explains every number with the same
:class:`~engine.search.model.Candidate` breakdown memdeck uses (extended by
:class:`OpenClawCandidate` for the profile's own factors). Behaviour, proven by
tests/openclaw/ against the installed package:

* **Files**: ``MEMORY.md``, ``USER.md``, ``memory/**.md`` and extraPaths. Dated
  are only ``memory/…/YYYY-MM-DD[-slug].md`` names; MEMORY.md, USER.md and other
  ``memory/`` notes are evergreen (no decay); other files decay by mtime.
* **Keyword retrieval** (FTS5 ``bm25``, one indexed ``text`` column, 200 rows): the
  query's ``[\\p{L}\\p{N}_]+`` tokens joined with AND — never OR. When fewer than
  200 rows come back, up to 6 stop-word-filtered single keywords are searched
  too and merged (the best body score of a chunk wins).
* **Path search**: the same tokens against the file paths; a path-only hit
  scores its path's bm25 and stands in for the file's first chunk.
* **Lexical boost** on each body hit: 0.45 × share of query words present as
  whole tokens + 0.2 × their density among the chunk's distinct tokens + 0.18 per
  query word found in the path + min(length/160, 0.18); added to the bm25 score
  and capped at 1.
* **Importance**: ``<!-- importance: N -->`` in a MEMORY.md entry multiplies by
  0.75 + 0.05·N.
* **Decay** always on (half-life 30 days); ties by path, then line.
* **minScore**: results below it are dropped — unless none passes, then the
  floor drops to 0 (FTS-only).
* **Hybrid** (when a provider embeds the chunks): 0.7·cosine + 0.3·keyword, the
  same decay and importance, then MMR (λ 0.7, Jaccard on snippet tokens); when
  fewer than maxResults pass minScore the list is topped up with keyword-only
  hits below it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

from engine.openclaw.chunking import (
    utf16_len,
)
from engine.openclaw.keywords import extract_keywords
from engine.openclaw.profile_index import (
    CANDIDATE_LIMIT,
    OpenClawIndex,
    ProfileChunk,
)
from engine.search.explain import fmt, threshold
from engine.search.model import Candidate
from engine.search.scoring import bm25_rank_to_score

__all__ = [
    "OpenClawCandidate",
    "OpenClawIndex",
    "OpenClawOutcome",
    "keyword_only_outcome",
    "mmr_rerank",
    "search_openclaw",
]

FALLBACK_TERMS = 6
SNIPPET_MAX_CHARS = 700
VECTOR_WEIGHT, TEXT_WEIGHT = 0.7, 0.3
MMR_LAMBDA = 0.7
HALF_LIFE_DAYS = 30.0
DAY_MS = 86_400_000

_TOKEN = re.compile(r"[^\W]+", re.UNICODE)  # refined by _is_token_char below
_DATED = re.compile(r"(?:^|/)memory/(?:[^/]+/)*(\d{4})-(\d{2})-(\d{2})(?:-[^/]+)?\.md$")


# -- tokens ---------------------------------------------------------------------
def _is_word_char(c: str, marks: bool = False) -> bool:
    """``[\\p{L}\\p{N}_]`` (and ``\\p{M}`` when *marks*), by Unicode category."""
    if c == "_":
        return True
    cat = unicodedata.category(c)
    return cat[0] in "LN" or (marks and cat[0] == "M")


def word_tokens(text: str, marks: bool = False) -> list[str]:
    """Runs of letters, numbers and ``_`` (JavaScript ``/[\\p{L}\\p{N}_]+/gu``)."""
    out: list[str] = []
    current: list[str] = []
    for c in text:
        if _is_word_char(c, marks):
            current.append(c)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return [t for t in (x.strip() for x in out) if t]


def fts_query(text: str) -> str | None:
    """Every token quoted and joined with AND (OpenClaw never falls back to OR)."""
    tokens = word_tokens(text)
    if not tokens:
        return None
    return " AND ".join('"' + t.replace('"', "") + '"' for t in tokens)


def _search_tokens(text: str) -> list[str]:
    return [t.lower() for t in word_tokens(unicodedata.normalize("NFC", text))]


class LexicalBoost(NamedTuple):
    """What OpenClaw adds to a body hit's bm25 score, by its parts (``value``)."""

    share: float  # of the query's words present as whole tokens
    density: float  # those words among the chunk's distinct tokens
    path_words: int  # query words found in the path
    length: float  # min(UTF-16 length ÷ 160, 0.18)

    @property
    def value(self) -> float:
        return self.share * 0.45 + self.density * 0.2 + self.path_words * 0.18 + self.length

    def arithmetic(self) -> str:
        """``value`` as it is computed, for the breakdown."""
        return (
            f"boost 0.45×{self.share:.4f} + 0.2×{self.density:.4f} + 0.18×{self.path_words}"
            f" + {self.length:.4f} = {self.value:.4f}"
        )


NO_BOOST = LexicalBoost(0.0, 0.0, 0, 0.0)


def lexical_boost(query_tokens: Sequence[str], path: str, text: str) -> LexicalBoost:
    """The boost added to a body hit's bm25 score (``.value``), with its parts."""
    if not query_tokens:
        return NO_BOOST
    text_tokens = _search_tokens(text)
    token_set = set(text_tokens)
    folded = {t.casefold() for t in token_set}
    overlap = sum(1 for q in query_tokens if q in token_set or q.casefold() in folded)
    norm_path = unicodedata.normalize("NFC", path).casefold()
    return LexicalBoost(
        share=overlap / len(query_tokens),
        density=overlap / max(len(token_set), 1),
        path_words=sum(1 for q in query_tokens if q.casefold() in norm_path),
        length=min(utf16_len(text) / 160, 0.18),
    )


# -- ordering -------------------------------------------------------------------
def locale_key(text: str) -> tuple[Any, ...]:
    """An approximation of JavaScript's ``localeCompare`` (ICU root collation):
    punctuation < digits < letters, letters compared case-insensitively first,
    lowercase before uppercase on a tie."""
    primary = []
    tertiary = []
    for c in text:
        if c.isalpha():
            primary.append((3, c.casefold()))
            tertiary.append(0 if c.islower() else 1)
        elif c.isdigit():
            primary.append((2, c))
            tertiary.append(0)
        else:
            primary.append((1, c))
            tertiary.append(0)
    return (tuple(primary), tuple(tertiary))


# -- ranking --------------------------------------------------------------------
@dataclass
class Hit:
    id: str
    score: float
    text_score: float
    path_score: float
    has_body: bool
    bm25_rank: float | None = None
    boost: LexicalBoost = NO_BOOST
    #: the bm25 score of the body hit the boost was added to (a chunk several
    #: keyword queries found keeps the best body hit's pair)
    body_score: float = 0.0
    terms: list[str] = field(default_factory=list)  # which keyword queries found it


def _compare_key(chunks: dict[str, ProfileChunk]) -> Callable[[Hit], tuple[Any, ...]]:
    def key(h: Hit) -> tuple[Any, ...]:
        c = chunks[h.id]
        return (-h.score, -h.text_score, -h.path_score, locale_key(c.path), c.start_line, h.id)

    return key


def _keyword_search(index: OpenClawIndex, query: str, ranking_query: str, label: str) -> list[Hit]:
    """One keyword query: body hits (boosted) and path-only hits, merged."""
    hits: dict[str, Hit] = {}
    match = fts_query(query)
    query_tokens = list(dict.fromkeys(_search_tokens(ranking_query)))
    if match:
        for cid, rank in index.body_hits(match):
            chunk = index.chunks[cid]
            text_score = bm25_rank_to_score(rank)
            boost = lexical_boost(query_tokens, chunk.path, chunk.text)
            hits[cid] = Hit(
                cid,
                min(1.0, text_score + boost.value),
                text_score,
                0.0,
                True,
                rank,
                boost,
                text_score,
                [label],
            )
    path_tokens = word_tokens(query, marks=True)
    if path_tokens:
        path_match = " AND ".join('"' + t.replace('"', "") + '"' for t in path_tokens)
        for cid, rank in index.path_hits(path_match):
            score = bm25_rank_to_score(rank)
            if cid in hits:
                hits[cid].path_score = max(hits[cid].path_score, score)
            else:
                hits[cid] = Hit(cid, score, 0.0, score, False, None, NO_BOOST, 0.0, [label])
    return list(hits.values())


def _merge(result_sets: Sequence[list[Hit]]) -> list[Hit]:
    seen: dict[str, Hit] = {}
    for results in result_sets:
        for hit in results:
            existing = seen.get(hit.id)
            if existing is None:
                seen[hit.id] = Hit(**{**hit.__dict__, "terms": list(hit.terms)})
                continue
            old_body = existing.score if existing.has_body else 0.0
            new_body = hit.score if hit.has_body else 0.0
            existing.text_score = max(existing.text_score, hit.text_score)
            existing.path_score = max(existing.path_score, hit.path_score)
            if hit.has_body and (not existing.has_body or hit.score > old_body):
                existing.bm25_rank, existing.boost = hit.bm25_rank, hit.boost
                existing.body_score = hit.body_score
            existing.has_body = existing.has_body or hit.has_body
            body = max(old_body, new_body)
            existing.score = body if body > 0 else existing.path_score
            existing.terms += [t for t in hit.terms if t not in existing.terms]
    merged = list(seen.values())
    for hit in merged:
        if not hit.has_body:
            hit.score = hit.path_score
    return merged


def keyword_candidates(index: OpenClawIndex, query: str) -> list[Hit]:
    """The full query, then (under 200 rows) up to 6 single keywords, merged."""
    key = _compare_key(index.chunks)
    full = sorted(_merge([_keyword_search(index, query, query, "query")]), key=key)
    full = full[:CANDIDATE_LIMIT]
    if len(full) >= CANDIDATE_LIMIT:
        return full
    lowered = query.strip().lower()
    terms = [t for t in extract_keywords(query) if t != lowered][:FALLBACK_TERMS]
    if not terms:
        return full
    strict = (fts_query(query) or "").lower()
    keyword = (fts_query(" ".join(terms)) or "").lower()
    if full and strict == keyword:
        return full
    sets = [full] + [_keyword_search(index, term, query, term) for term in terms]
    return sorted(_merge(sets), key=key)[:CANDIDATE_LIMIT]


def date_of(path: str) -> dt.date | None:
    match = _DATED.search(path.replace("\\", "/").removeprefix("./"))
    if not match:
        return None
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def is_evergreen(path: str) -> bool:
    norm = path.replace("\\", "/").removeprefix("./")
    if norm in ("MEMORY.md", "USER.md"):
        return True
    return norm.startswith("memory/") and not _DATED.search(norm)


def decay_factor(chunk: ProfileChunk, now_ms: float) -> tuple[float, float | None]:
    """(multiplier, age in days) under the fixed 30-day half-life."""
    day = date_of(chunk.path)
    if day is not None:
        stamp = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000
    elif is_evergreen(chunk.path):
        return 1.0, None
    else:
        stamp = chunk.mtime_ms
    age = max(0.0, (now_ms - stamp) / DAY_MS)
    return math.exp(-(math.log(2) / HALF_LIFE_DAYS) * age), age


def importance_multiplier(importance: int | None) -> float:
    if importance is None:
        return 1.0
    return 0.75 + max(1, min(10, math.floor(importance))) * 0.05


# -- MMR ------------------------------------------------------------------------
_ASCII_WORD = re.compile(r"[a-z0-9_]+")


def _is_cjk(c: str) -> bool:
    cp = ord(c)
    return (
        0x3040 <= cp <= 0x30FF
        or 0x3400 <= cp <= 0x4DBF
        or 0x4E00 <= cp <= 0x9FFF
        or 0xAC00 <= cp <= 0xD7AF
        or 0xF900 <= cp <= 0xFAFF
        or 0x20000 <= cp <= 0x2A6DF
    )


def mmr_tokens(text: str) -> frozenset[str]:
    lower = text.strip().lower()
    tokens = set(_ASCII_WORD.findall(lower))
    if not any(_is_cjk(c) for c in lower):
        return frozenset(tokens)
    previous: str | None = None
    unigrams = []
    for c in lower:
        if _is_cjk(c):
            if previous is not None:
                tokens.add(previous + c)
            unigrams.append(c)
            previous = c
        else:
            previous = None
    tokens.update(unigrams)
    return frozenset(tokens)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    inter = len(a & b)
    union = len(a) + len(b) - inter
    return 0.0 if union == 0 else inter / union


@dataclass(eq=False)  # identity: ``remaining.remove`` must drop this very item
class _MmrItem:
    """One snippet in the MMR loop: its score, word set and running numbers."""

    ident: str
    score: float
    tokens: frozenset[str]
    empty: str | None  # the snippet itself when it has no words (equal blanks are similar)
    relevance: float = 0.0
    max_sim: float = 0.0


def mmr_rerank(
    items: Sequence[tuple[str, float, str]], lam: float = MMR_LAMBDA
) -> list[tuple[str, float, float, float]]:
    """(id, score, snippet) → (id, relevance, max similarity, mmr score) in MMR order."""
    if len(items) <= 1:
        return [(i, 1.0, 0.0, lam) for i, _, _ in items]
    lam = max(0.0, min(1.0, lam))
    if lam == 1:
        ordered = sorted(items, key=lambda x: -x[1])
        return [(i, s, 0.0, s) for i, s, _ in ordered]
    prepared: list[_MmrItem] = []
    for ident, score, snippet in items:
        tokens = mmr_tokens(snippet)
        empty = snippet.strip().lower() if not tokens else None
        prepared.append(_MmrItem(ident, score, tokens, empty))
    hi = max(p.score for p in prepared)
    lo = min(p.score for p in prepared)
    spread = hi - lo
    for p in prepared:
        p.relevance = 1.0 if spread == 0 else (p.score - lo) / spread
    remaining = list(prepared)
    out = []
    while remaining:
        best: _MmrItem | None = None
        best_score = -math.inf
        for cand in remaining:
            value = lam * cand.relevance - (1 - lam) * cand.max_sim
            if value > best_score or (
                value == best_score and cand.score > (best.score if best else -math.inf)
            ):
                best_score, best = value, cand
        assert best is not None
        out.append((best.ident, best.relevance, best.max_sim, best_score))
        remaining.remove(best)
        for cand in remaining:
            if not cand.tokens and not best.tokens:
                sim = float(cand.empty == best.empty)
            else:
                sim = _jaccard(cand.tokens, best.tokens)
            if sim > cand.max_sim:
                cand.max_sim = sim
    return out


# -- the search ---------------------------------------------------------------------
@dataclass
class OpenClawCandidate(Candidate):
    """memdeck's breakdown plus the profile's own factors."""

    profile: str = "openclaw"
    lexical_boost: float = 0.0
    #: the bm25 score the boost was added to, and the boost's own sum (``LexicalBoost``)
    body_score: float = 0.0
    boost_arithmetic: str | None = None
    path_score: float = 0.0
    keyword_score: float = 0.0  # bm25 score + lexical boost (capped at 1)
    importance: int | None = None
    importance_multiplier: float = 1.0
    keyword_terms: tuple[str, ...] = ()
    topped_up: bool = False
    chunk_key: str = ""  # OpenClaw's chunk id (sha256 of source:path:lines:hash:model)

    def keyword_step(self) -> str | None:
        """How the keyword score came about: a body hit's bm25 score plus OpenClaw's
        lexical boost, capped at 1; a path-only hit's bm25 score of its path; None
        for a chunk no keyword query found."""
        if self.body_score:
            return (
                f"keyword min(1, bm25 {self.body_score:.4f} + boost {self.lexical_boost:.4f})"
                f" = {self.keyword_score:.4f}"
            )
        if self.path_score:
            return f"keyword path bm25 {self.path_score:.4f}"
        return None

    def formula(self) -> str:
        """Each step of the score, "; " between them, as it can be checked by hand."""
        keyword = self.keyword_step()
        if self.vector_score is not None and self.vector_score > 0:
            text = (
                f"0.7×{self.vector_score:.4f} + 0.3×{self.keyword_score:.4f}"
                f" = {self.fused_score:.4f}"
            )
            if keyword is not None and self.keyword_score:
                text = f"{keyword}; {text}"
        else:
            text = keyword or f"keyword {self.keyword_score:.4f}"
        scaled = False
        if self.decay_multiplier != 1.0:
            text += f"; ×{self.decay_multiplier:.4f} (age {self.age_days:.1f} d)"
            scaled = True
        if self.importance_multiplier != 1.0:
            text += f"; ×{self.importance_multiplier:.2f} (importance {self.importance})"
            scaled = True
        return text + f" = {self.score:.4f}" if scaled else text

    def to_dict(self) -> dict[str, object]:
        """The candidate as JSON-able data, with the profile's :meth:`formula`."""
        d = asdict(self)
        d.pop("text")
        d["mmr_shift"] = self.mmr_shift
        d["formula"] = self.formula()
        return d


@dataclass
class OpenClawOutcome:
    query: str
    mode: str  # "fts" or "hybrid"
    results: list[OpenClawCandidate]
    dropped: list[OpenClawCandidate]
    keyword_terms: tuple[str, ...]
    floor_dropped: bool  # nothing passed minScore, so the floor went to 0
    max_results: int
    min_score: float


def _chunk_candidate(
    c: ProfileChunk, position: int, lists: tuple[str, ...], **scores: Any
) -> OpenClawCandidate:
    """A candidate for chunk ``c`` at ``position`` in ``lists``: what every candidate
    carries from its chunk (location, text, importance), plus the list's ``scores``."""
    return OpenClawCandidate(
        chunk_key=c.id,
        chunk_id=position,
        path=c.path,
        source=c.source,
        start_line=c.start_line,
        end_line=c.end_line,
        text=c.text,
        lists=lists,
        fusion="openclaw",
        importance=c.importance,
        importance_multiplier=importance_multiplier(c.importance),
        **scores,
    )


def _candidate(index: OpenClawIndex, hit: Hit, position: int) -> OpenClawCandidate:
    return _chunk_candidate(
        index.chunks[hit.id],
        position,
        ("fts",),
        fts_position=position,
        bm25_rank=hit.bm25_rank,
        text_score=hit.text_score if hit.has_body else None,
        text_component=hit.score,
        lexical_boost=hit.boost.value,
        body_score=hit.body_score,
        boost_arithmetic=hit.boost.arithmetic() if hit.has_body else None,
        path_score=hit.path_score,
        keyword_score=hit.score,
        keyword_terms=tuple(hit.terms),
        text_weight=1.0,
    )


def _say_why_dropped(
    dropped: Sequence[OpenClawCandidate], min_score: float, max_results: int
) -> None:
    """Each dropped candidate's reason, with the numbers that decided it."""
    for cand in dropped:
        cand.dropped = (
            f"score {fmt(cand.score)} < minScore {threshold(min_score)}"
            if cand.score < min_score
            else f"beyond maxResults {max_results}"
        )


def search_openclaw(
    index: OpenClawIndex,
    query: str,
    *,
    max_results: int = 6,
    min_score: float = 0.35,
    now_ms: float | None = None,
    vector_scores: dict[str, float] | None = None,
) -> OpenClawOutcome:
    """2026.9.6's ``memory_search`` over *index*.

    *vector_scores* (chunk id → cosine, best 200) switches to the hybrid path.
    """
    now = dt.datetime.now(dt.UTC).timestamp() * 1000 if now_ms is None else now_ms
    cleaned = query.strip()
    empty = OpenClawOutcome(cleaned, "fts", [], [], (), False, max_results, min_score)
    if not cleaned or not index.chunks:
        return empty
    lowered = cleaned.lower()
    terms = tuple(t for t in extract_keywords(cleaned) if t != lowered)[:FALLBACK_TERMS]
    hits = keyword_candidates(index, cleaned)
    if vector_scores is not None:
        return _hybrid(index, cleaned, hits, vector_scores, now, max_results, min_score, terms)
    return keyword_only_outcome(index, cleaned, hits, now, max_results, min_score, terms)


def keyword_only_outcome(
    index: OpenClawIndex,
    query: str,
    hits: list[Hit],
    now: float,
    max_results: int,
    min_score: float,
    terms: tuple[str, ...] = (),
) -> OpenClawOutcome:
    """FTS-only: decay and importance on the keyword hits, OpenClaw's order, then
    minScore — and when nothing passes it, the floor drops to 0."""
    cands = []
    for position, hit in enumerate(hits, 1):
        cand = _candidate(index, hit, position)
        chunk = index.chunks[hit.id]
        factor, age = decay_factor(chunk, now)
        cand.fused_score = hit.score
        cand.decay_multiplier, cand.age_days = factor, age
        cand.score = hit.score * factor * cand.importance_multiplier
        cands.append(cand)
    cands.sort(
        key=lambda c: (
            -c.score,
            -(c.text_score or 0),
            -c.path_score,
            locale_key(c.path),
            c.start_line,
            c.chunk_key,
        )
    )
    for pos, cand in enumerate(cands, 1):
        cand.sorted_position = pos
    strict = [c for c in cands if c.score >= min_score]
    floor = not strict
    chosen = (strict if strict else [c for c in cands if c.score >= 0])[:max_results]
    keep = {id(c) for c in chosen}
    for rank, cand in enumerate(chosen, 1):
        cand.final_rank = rank
    dropped = [c for c in cands if id(c) not in keep]
    _say_why_dropped(dropped, min_score, max_results)
    return OpenClawOutcome(query, "fts", chosen, dropped, terms, floor, max_results, min_score)


def _hybrid(
    index: OpenClawIndex,
    query: str,
    hits: list[Hit],
    vector_scores: dict[str, float],
    now: float,
    max_results: int,
    min_score: float,
    terms: tuple[str, ...],
) -> OpenClawOutcome:
    merged = merge_hybrid(index, hits, vector_scores, now)
    return _select(query, merged, hits, max_results, min_score, terms)


def merge_hybrid(
    index: OpenClawIndex, hits: list[Hit], vector_scores: dict[str, float], now: float
) -> list[OpenClawCandidate]:
    """Fuse keyword hits and cosine scores (0.7/0.3), decay, importance, MMR order."""
    by_id = {h.id: h for h in hits}
    cands: dict[str, OpenClawCandidate] = {}
    for position, (cid, cosine) in enumerate(
        sorted(vector_scores.items(), key=lambda kv: -kv[1]), 1
    ):
        cands[cid] = _chunk_candidate(
            index.chunks[cid],
            position,
            ("vector",),
            vector_position=position,
            vector_score=cosine,
        )
    for position, hit in enumerate(hits, 1):
        base = _candidate(index, hit, position)
        if hit.id in cands:
            cand = cands[hit.id]
            cand.lists = ("vector", "fts")
            for name in (
                "fts_position",
                "bm25_rank",
                "text_score",
                "text_component",
                "lexical_boost",
                "body_score",
                "boost_arithmetic",
                "path_score",
                "keyword_score",
                "keyword_terms",
            ):
                setattr(cand, name, getattr(base, name))
        else:
            base.vector_score = 0.0
            cands[hit.id] = base
    ranked = []
    for cid, cand in cands.items():
        found = by_id.get(cid)
        keyword = 0.0
        if found is not None:
            keyword = found.score if found.text_score > 0 else found.path_score
        vector = cand.vector_score or 0.0
        content = VECTOR_WEIGHT * vector + TEXT_WEIGHT * keyword
        lexical_rank = (
            found.score if found is not None and found.has_body and found.text_score == 0 else 0
        )
        ranking = lexical_rank if content == 0 else content
        cand.vector_weight, cand.text_weight = VECTOR_WEIGHT, TEXT_WEIGHT
        cand.vector_component, cand.text_component = vector, keyword
        cand.keyword_score = keyword
        cand.fused_score = ranking
        factor, age = decay_factor(index.chunks[cid], now)
        cand.decay_multiplier, cand.age_days = factor, age
        ranking_score = ranking * factor * cand.importance_multiplier
        cand.score = 0.0 if content == 0 else ranking_score
        ranked.append((cand, ranking_score, lexical_rank, cid))
    ranked.sort(
        key=lambda x: (
            -x[0].score,
            -x[1],
            -x[2],
            locale_key(x[0].path),
            x[0].start_line,
            x[0].end_line,
        )
    )
    for pos, (cand, *_rest) in enumerate(ranked, 1):
        cand.sorted_position = pos
    order = mmr_rerank([(str(i), c.score, _snippet(c.text)) for i, (c, *_r) in enumerate(ranked)])
    merged = []
    for pos, (key, relevance, similarity, value) in enumerate(order, 1):
        cand = ranked[int(key)][0]
        cand.mmr_position, cand.mmr_relevance = pos, relevance
        cand.mmr_max_similarity, cand.mmr_score = similarity, value
        cand.chunk_key = ranked[int(key)][3]
        merged.append(cand)
    return merged


def _select(
    query: str,
    merged: list[OpenClawCandidate],
    hits: list[Hit],
    max_results: int,
    min_score: float,
    terms: tuple[str, ...],
) -> OpenClawOutcome:
    """minScore, then the top-up with keyword-only hits below it."""
    strict = [c for c in merged if c.score >= min_score]
    chosen = strict[:max_results]
    floor = False
    keyword_keys = {(c.path, c.start_line, c.end_line) for c in merged if "fts" in c.lists}
    if hits and len(chosen) < max_results:
        if not strict:
            floor = True
            chosen = [
                c
                for c in merged
                if c.score >= 0 and (c.path, c.start_line, c.end_line) in keyword_keys
            ][:max_results]
        else:
            seen = {(c.path, c.start_line, c.end_line) for c in chosen}
            for cand in merged:
                if len(chosen) == max_results:
                    break
                key = (cand.path, cand.start_line, cand.end_line)
                if (
                    cand.score < min_score
                    and not cand.vector_score
                    and key in keyword_keys
                    and key not in seen
                ):
                    seen.add(key)
                    cand.topped_up = cand.rescued = True
                    chosen.append(cand)
    keep = {id(c) for c in chosen}
    for rank, cand in enumerate(chosen, 1):
        cand.final_rank = rank
    dropped = [c for c in merged if id(c) not in keep]
    _say_why_dropped(dropped, min_score, max_results)
    return OpenClawOutcome(query, "hybrid", chosen, dropped, terms, floor, max_results, min_score)


def _snippet(text: str) -> str:
    """The first 700 UTF-16 units of a chunk (what OpenClaw's MMR compares)."""
    if utf16_len(text) <= SNIPPET_MAX_CHARS:
        return text
    out = []
    units = 0
    for c in text:
        step = 2 if ord(c) > 0xFFFF else 1
        if units + step > SNIPPET_MAX_CHARS:
            break
        out.append(c)
        units += step
    return "".join(out)


def cosine_scores(
    index: OpenClawIndex,
    query_vec: np.ndarray,
    vectors: dict[str, np.ndarray],
    limit: int = CANDIDATE_LIMIT,
) -> dict[str, float]:
    """Best *limit* cosine similarities (the vector candidate list)."""
    q = np.asarray(query_vec, dtype=np.float64)
    qn = float(np.linalg.norm(q)) or 1.0
    scores = {}
    for cid, vec in vectors.items():
        v = np.asarray(vec, dtype=np.float64)
        vn = float(np.linalg.norm(v)) or 1.0
        scores[cid] = float(np.dot(q, v) / (qn * vn))
    best = sorted(scores.items(), key=lambda kv: -kv[1])[:limit]
    return dict(best)
