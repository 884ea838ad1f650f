"""Single-keyword expansion for the ``openclaw`` profile's keyword retrieval.

When the full AND query finds fewer than 200 chunks, OpenClaw 2026.9.6 also
searches up to six single keywords of the query, after dropping conversational
stop words, numbers, punctuation and ASCII words shorter than three letters.
The stop-word set below is memdeck's own list of English function words and
question words, checked word by word against OpenClaw's behaviour by
tests/openclaw/test_search_parity.py (every LoCoMo question word is classified
the same way). Keyword expansion of Chinese, Japanese, Korean and other
languages' queries is not reproduced: such queries keep only their
whitespace-separated words (README: "Differences between the profiles").
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["STOP_WORDS", "extract_keywords", "is_stop_word"]

STOP_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "ago",
        "an",
        "and",
        "anything",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "but",
        "by",
        "can",
        "could",
        "de",
        "did",
        "do",
        "does",
        "during",
        "earlier",
        "everything",
        "find",
        "for",
        "from",
        "get",
        "give",
        "had",
        "has",
        "have",
        "he",
        "help",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "just",
        "later",
        "may",
        "me",
        "might",
        "my",
        "nothing",
        "now",
        "of",
        "on",
        "or",
        "our",
        "over",
        "please",
        "recently",
        "she",
        "should",
        "show",
        "something",
        "son",
        "stuff",
        "tell",
        "that",
        "the",
        "them",
        "then",
        "these",
        "they",
        "thing",
        "things",
        "this",
        "those",
        "through",
        "to",
        "today",
        "tomorrow",
        "under",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "yesterday",
        "you",
        "your",
    ]
)

_SPLIT = re.compile(r"[\s]+")


def _is_punct(c: str) -> bool:
    return unicodedata.category(c).startswith("P")


def _segments(text: str) -> list[str]:
    """Lowercased pieces between whitespace and punctuation (``/[\\s\\p{P}]+/u``)."""
    out: list[str] = []
    current: list[str] = []
    for c in text.strip().lower():
        if c.isspace() or _is_punct(c):
            if current:
                out.append("".join(current))
                current = []
        else:
            current.append(c)
    if current:
        out.append("".join(current))
    return out


def is_stop_word(token: str) -> bool:
    return token in STOP_WORDS


def _valid(token: str) -> bool:
    if not token:
        return False
    if token.isascii() and token.isalpha() and len(token) < 3:
        return False
    if token.isascii() and token.isdigit():
        return False
    return not all(unicodedata.category(c)[0] in "PS" for c in token)


def extract_keywords(query: str) -> list[str]:
    """The query's distinct keywords, in order."""
    seen: set[str] = set()
    out: list[str] = []
    for token in _segments(query):
        if is_stop_word(token) or not _valid(token) or token in seen:
            continue
        seen.add(token)
        out.append(token)
    return out
