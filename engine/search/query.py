"""A search query, split into its words once.

The keyword side reads a query's words several times: the FTS5 AND expression,
the OR fallback, bm25's document counts and idfs, and in a hybrid search the
text ranks of the vector side's candidates. :func:`parse_query` splits the text
once (``engine.index.tokens.query_tokens``: NFC, then runs of letters, digits
and ``_``, case kept, docs/architecture.md "Candidates") and every stage reads
the :class:`ParsedQuery`; nothing splits the text again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from engine.index.tokens import query_tokens

__all__ = ["ParsedQuery", "match_expression", "parse_query"]


@dataclass(frozen=True)
class ParsedQuery:
    """A query as typed and its words."""

    #: the query as typed (the query embedding reads this)
    text: str
    #: the words in order, case kept, repeats kept: the AND query
    words: tuple[str, ...]
    #: each word once, first occurrence first: bm25's terms and the OR query's
    terms: tuple[str, ...]
    #: the FTS5 AND expression of ``words``; None when there is no word (a blank
    #: query searches nothing)
    and_match: str | None


def parse_query(text: str) -> ParsedQuery:
    """``text`` split into its words, once."""
    words = tuple(query_tokens(text))
    return ParsedQuery(text, words, tuple(dict.fromkeys(words)), match_expression(words, "AND"))


def match_expression(words: Sequence[str], op: Literal["AND", "OR"]) -> str | None:
    """The FTS5 MATCH expression of words already split: each word quoted, so that
    input such as ``-``, ``NOT``, ``*`` or ``:`` is a plain term and never an FTS5
    operator (``"`` doubled, FTS5's escape), joined by ``op``. None for no words:
    callers treat it as zero keyword hits rather than running an empty MATCH.

    The same expression as ``engine.index.tokens.build_fts_query`` of the words'
    text, without splitting it again.
    """
    if not words:
        return None
    return f" {op} ".join('"' + word.replace('"', '""') + '"' for word in words)
