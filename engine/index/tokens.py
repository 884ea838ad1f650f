"""Tokenisation shared by the keyword query, MMR similarity and the chunk budget.

Three consumers need "words" and they disagree on purpose:

* the FTS5 query keeps case and order (SQLite's tokenizer folds case itself and
  the breakdown shows the user what was searched);
* MMR similarity wants a lowercase *set*, and splits CJK runs into unigrams and
  bigrams because those scripts do not put spaces between words — one long run
  would make two passages that share most characters look unrelated;
* the chunker wants a cost estimate in which a CJK character weighs about one
  token (4 "chars"), like OpenClaw, so chunks of Chinese text are not 4× too big.

Everything here is pure: no I/O, no global state besides compiled patterns.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

import regex

__all__ = [
    "WORD_RE",
    "build_fts_query",
    "estimate_chars_cost",
    "has_word",
    "jaccard",
    "query_tokens",
    "similarity_tokens",
    "words_of",
]

#: A query word, as OpenClaw's FTS query builder defines it (docs/architecture.md
#: "Candidates").
WORD_RE: regex.Pattern[str] = regex.compile(r"[\p{L}\p{N}_]+")

#: ``WORD_RE`` on ASCII text, where it is exactly this class: the standard library's
#: engine finds the words of a chunk's text in half the time and answers "has this
#: line a word" in 0.3 µs against 0.7 (a search does both for ~50 candidates)
_ASCII_WORD_RE = re.compile(r"[A-Za-z0-9_]+")


def words_of(text: str) -> list[str]:
    """``WORD_RE.findall(text)``, by the faster engine where the text is ASCII."""
    return _ASCII_WORD_RE.findall(text) if text.isascii() else WORD_RE.findall(text)


#: the standard library's word characters: a subset of ``WORD_RE``'s class (they differ
#: only on code points Python's Unicode tables do not assign yet), so a match here is a
#: word for ``WORD_RE`` too, found ~3× faster on mixed text
_STD_WORD_CHAR = re.compile(r"\w")


def has_word(text: str) -> bool:
    """Whether ``text`` holds a word (``WORD_RE``), by the faster engine where it can."""
    if text.isascii():
        return _ASCII_WORD_RE.search(text) is not None
    return _STD_WORD_CHAR.search(text) is not None or WORD_RE.search(text) is not None


# For similarity, combining marks stay inside the word (as in OpenClaw's MMR
# tokenizer): after NFC, Indic and Thai vowel signs/viramas are still separate
# code points, and cutting words at them would make the token sets meaningless.
_SIMILARITY_WORD_RE = regex.compile(r"[\p{L}\p{M}\p{N}_]+")

# Scripts written without spaces between words (plus Hangul, which the spec
# lists with them). Script_Extensions pulls in the shared kana marks such as the
# prolonged sound mark "ー", whose plain Script is Common.
_CJK_CLASS = r"\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}"
_CJK_OR_OTHER_RE = regex.compile(rf"([{_CJK_CLASS}]+)|([^{_CJK_CLASS}]+)")
_HAS_CJK_RE = regex.compile(rf"[{_CJK_CLASS}]")

# Characters that cost 4 in the chunk budget. These are OpenClaw's ranges for
# "about one token per character" scripts (CJK radicals through unified
# ideographs, Yi, Hangul syllables, compatibility ideographs, supplementary
# ideographs), kept identical so chunk boundaries match OpenClaw's on the same
# file.
# The stdlib engine is used here because counting via ``sub`` is about twice as
# fast as the ``regex`` package on this hot path (every non-ASCII line of every file).
_WIDE_RE = re.compile(
    r"[\u2E80-\u9FFF\uA000-\uA4FF\uAC00-\uD7AF\uF900-\uFAFF\U00020000-\U0002FA1F]"
)
_WIDE_EXTRA_COST = 3  # a wide character counts 4 = its own 1 + 3


def query_tokens(text: str) -> list[str]:
    """Words of a search query, in order, case kept.

    NFC first so that a query typed with combining accents ("e" + U+0301) finds
    text stored precomposed ("é"); otherwise the accent would split the word.
    """
    return WORD_RE.findall(unicodedata.normalize("NFC", text))


def build_fts_query(text: str, op: Literal["AND", "OR"] = "AND") -> str | None:
    """An FTS5 MATCH expression that cannot be a syntax error.

    Quoting every token turns user input such as ``-``, ``NOT``, ``*`` or ``:``
    into plain terms instead of FTS5 operators. Doubling ``"`` is FTS5's escape;
    WORD_RE never yields a quote today, but the escape keeps the function safe
    if the word pattern ever widens. None means "search nothing", which callers
    must treat as zero keyword hits rather than running an empty MATCH.
    """
    if op not in ("AND", "OR"):
        raise ValueError(f"op must be 'AND' or 'OR', not {op!r}")
    words = query_tokens(text)
    if not words:
        return None
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    return f" {op} ".join(quoted)


def similarity_tokens(text: str) -> frozenset[str]:
    """Lowercase token set used by MMR's Jaccard similarity.

    CJK runs become their characters plus adjacent pairs: unigrams keep recall
    for single-character words, bigrams give the set some notion of order so
    that two passages using the same characters differently do not look equal.
    """
    out: set[str] = set()
    normalised = unicodedata.normalize("NFC", text).lower()
    for word in _SIMILARITY_WORD_RE.findall(normalised):
        if not _HAS_CJK_RE.search(word):
            out.add(word)
            continue
        for cjk_run, other in _CJK_OR_OTHER_RE.findall(word):
            if other:
                out.add(other)
                continue
            out.update(cjk_run)
            out.update(cjk_run[i : i + 2] for i in range(len(cjk_run) - 1))
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|, with two empty sets counting as 0.0 (not 1.0).

    An empty set means the text had no words at all (only symbols or
    whitespace); that is no evidence that two passages repeat each other, so
    MMR should not penalise them as duplicates. OpenClaw returns 1.0 here; the
    difference only matters for word-less chunks.
    """
    if not a or not b:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    common = len(a & b)
    return common / (len(a) + len(b) - common)


def estimate_chars_cost(line: str) -> int:
    """Chunk-budget size of a string: its length, with CJK characters counting 4.

    The chunk size is configured in tokens and converted at 4 chars per token;
    that ratio is right for Latin text but one CJK character is roughly one token
    on its own, so it must weigh 4 to keep CJK chunks within the token budget.
    Python strings index code points, so a supplementary ideograph is one
    character costing 4, matching OpenClaw's surrogate-aware count.
    """
    if line.isascii():
        return len(line)
    narrow = _WIDE_RE.sub("", line)
    return len(line) + _WIDE_EXTRA_COST * (len(line) - len(narrow))
