"""Terms cut the way SQLite FTS5's unicode61 tokenizer cuts them, in Python.

Two users need FTS5's terms without asking SQLite for them:

* the PostgreSQL store (``engine.index.pg_store``), which computes FTS5's bm25 over
  the same terms so that both stores rank keyword hits alike. Not PostgreSQL's own
  parser: it keeps ``foo-bar`` as a word besides its parts, knows URLs and e-mail
  addresses, and its dictionaries stem;
* the calibrated ranking's word-by-word text side (``engine.search.words``), which
  counts a query word's occurrences in a chunk and the chunk's length in terms:
  bm25's own tf and dl, which the keyword postings already hold per row
  (``engine.index.keyword_index``); :func:`term_counts` gives the same numbers where
  the postings cannot.

unicode61 (defaults): a term is a run of letters, digits and private-use
characters; it is case-folded and Latin letters lose their diacritics (é → e).
"Letters" as FTS5's tables know them: they are built from an older Unicode, and a
code point they do not know (an emoji newer than them: 🤩, 🧘) is a token
character, so ``fts5_tokenchars`` (generated from SQLite) adjusts today's classes.
Without it a chunk with such an emoji is one term shorter here than in FTS5 and
its bm25 differs in the sixth digit, enough to reorder near-ties.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter
from functools import lru_cache

import regex

from engine.index.fts5_tokenchars import EXTRA, FOLDS, MISSING, SQLITE_VERSION

#: the rules' version, in the PostgreSQL store's index fingerprint: its rows hold
#: terms cut by them, so new rules rebuild it. 2: every character folded as FTS5
#: folds it (``FOLDS``); with the SQLite the tables were generated from
TERMS_VERSION = f"2/sqlite {SQLITE_VERSION}"


def _char_class(spans: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in spans)


@lru_cache(maxsize=1)
def _term_re() -> regex.Pattern[str]:
    """A run of token characters for FTS5's unicode61 (see the module docstring);
    compiled on first use (~12 ms: a search of ASCII text never needs it)."""
    return regex.compile(
        rf"(?V1)[[\p{{L}}\p{{N}}\p{{Co}}{_char_class(EXTRA)}]--[{_char_class(MISSING)}]]+"
    )


_PHRASE_RE = regex.compile(r'"((?:[^"]|"")*)"')
#: inside a term these can only be the diacritics FTS5 folds away (the others of the
#: block are separators for it, see ``fts5_tokenchars``)
_COMBINING = regex.compile("[\u0300-\u036f]")
#: tsvector limits: positions 1..16383, at most 256 positions per lexeme
_MAX_POS = 16383
_MAX_POSITIONS = 256


def _fold_char(ch: str) -> str:
    """Drop a Latin letter's diacritics (unicode61's remove_diacritics=1)."""
    if ord(ch) < 0xC0:
        return ch
    decomposed = unicodedata.normalize("NFD", ch)
    base = decomposed[0]
    if len(decomposed) > 1 and ord(base) < 0x250 and base.isalpha():
        return base
    return ch


def doc_terms(text: str) -> list[str]:
    """The terms of ``text`` in order (repeats kept: their count is bm25's tf)."""
    return [t for m in _term_re().finditer(text) if (t := term_form(m.group(0)))]


@lru_cache(maxsize=65536)
def term_form(run: str) -> str:
    """The term FTS5 stores for ``run``, a run of token characters: each character
    folded on its own (:func:`char_form`); empty when only diacritics (no term)."""
    if run.isascii():
        return run.lower()
    return "".join(char_form(ch) for ch in run)


@lru_cache(maxsize=8192)
def char_form(ch: str) -> str:
    """A token character as FTS5 folds it: by its table where it differs from
    :func:`default_char_form` (``fts5_tokenchars.FOLDS``, generated from SQLite)."""
    got = FOLDS.get(ord(ch))
    return default_char_form(ch) if got is None else got


def default_char_form(ch: str) -> str:
    """Lower case, a Latin letter's diacritic off, a combining diacritic dropped."""
    word = "".join(_fold_char(c) for c in ch.lower())
    return word if word.isascii() else _COMBINING.sub("", word)


@lru_cache(maxsize=4096)
def word_terms(word: str) -> tuple[str, ...]:
    """The terms of a query word (``foo_bar`` is two: FTS5 matches it as a phrase)."""
    return tuple(doc_terms(word))


#: the token characters on ASCII text: letters and digits (``_`` separates)
_ASCII_RUN = re.compile(r"[a-z0-9]+")
#: letters and digits as the standard library's engine knows them. It finds the runs
#: of a chunk 15× faster than :func:`_term_re`, whose class (letters, digits and private
#: use, with FTS5's differences added and taken out) the ``regex`` engine tests range
#: by range; on a text none of whose characters the two classes disagree on
#: (:func:`_disputed`) both find the same runs.
_STD_RUN = re.compile(r"[^\W_]+")
_STD_CHAR = re.compile(r"[^\W_]")


@lru_cache(maxsize=8192)
def _disputed(ch: str) -> bool:
    """Whether FTS5 and ``_STD_RUN`` disagree on ``ch`` being a token character
    (private use, combining diacritics FTS5 keeps, letters of a newer Unicode, …)."""
    return (_STD_CHAR.fullmatch(ch) is None) == _is_token_char(ch)


#: today's letters, digits and private use, which FTS5's classes start from
_BASE_CHAR = regex.compile(r"[\p{L}\p{N}\p{Co}]")
_EXTRA_STARTS = [a for a, _ in EXTRA]
_MISSING_STARTS = [a for a, _ in MISSING]


def _is_token_char(ch: str) -> bool:
    """What :func:`_term_re` says of one character, without compiling it."""
    cp = ord(ch)

    def listed(spans: tuple[tuple[int, int], ...], starts: list[int]) -> bool:
        i = bisect.bisect_right(starts, cp) - 1
        return i >= 0 and cp <= spans[i][1]

    if listed(MISSING, _MISSING_STARTS):
        return False
    return _BASE_CHAR.fullmatch(ch) is not None or listed(EXTRA, _EXTRA_STARTS)


def _runs(text: str) -> list[str] | None:
    """The runs of token characters of ``text`` found the fast way, each still to fold
    (:func:`term_form`; on ASCII text already lower case, so their own terms); None
    when a character of it is disputed (:func:`_disputed`): only the exact class cuts
    that text as FTS5 does."""
    if text.isascii():
        return _ASCII_RUN.findall(text.lower())
    if any(_disputed(ch) for ch in set(text) if not ch.isascii()):
        return None
    return _STD_RUN.findall(text)


def term_counts(text: str) -> Counter[str]:
    """How often each term occurs in ``text``: ``Counter(doc_terms(text))``, which
    is bm25's tf per term and, summed, its dl, computed the fast way the text allows."""
    runs = _runs(text)
    if runs is None:
        return Counter(doc_terms(text))
    counts = Counter(runs)
    if text.isascii():
        return counts
    folded: Counter[str] = Counter()
    for run, n in counts.items():  # each distinct run folded once
        if term := term_form(run):
            folded[term] += n
    return folded


def term_set(text: str) -> frozenset[str]:
    """The terms ``text`` holds (``set(term_counts(text))``, without counting them)."""
    runs = _runs(text)
    if runs is None:
        return frozenset(doc_terms(text))
    if text.isascii():
        return frozenset(runs)
    return frozenset(t for run in set(runs) if (t := term_form(run)))


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(terms: list[str]) -> str:
    """A tsvector literal holding each term with its positions (phrases need them)."""
    positions: dict[str, list[int]] = {}
    for i, term in enumerate(terms, start=1):
        found = positions.setdefault(term, [])
        if len(found) < _MAX_POSITIONS:
            found.append(min(i, _MAX_POS))
    return " ".join(
        _quote(t) + ":" + ",".join(str(p) for p in sorted(set(ps))) for t, ps in positions.items()
    )


def phrase_tsquery(parts: list[str]) -> str:
    """One phrase as a tsquery (adjacent terms: ``'foo' <-> 'bar'``)."""
    return "(" + " <-> ".join(_quote(p) for p in parts) + ")"


def query_terms(match: str) -> tuple[str, list[tuple[str, ...]], str] | None:
    """Translate the pipeline's FTS5 match (quoted words joined by AND or OR).

    Returns (tsquery literal, the phrases bm25 sums over, the operator); None
    when no phrase holds a term. A quoted word that unicode61 cuts into several
    terms (``foo_bar``) is a phrase (``'foo' <-> 'bar'``), as in FTS5, and bm25
    counts the phrase as one unit. A phrase given twice ("Who" OR "who") is
    summed twice, as FTS5's bm25 sums over every phrase of the query.
    """
    op = "|" if " OR " in match else "&"
    phrases: list[tuple[str, ...]] = []
    for m in _PHRASE_RE.finditer(match):
        parts = doc_terms(m.group(1).replace('""', '"'))
        if parts:
            phrases.append(tuple(parts))
    if not phrases:
        return None
    tsquery = f" {op} ".join(phrase_tsquery(list(p)) for p in phrases)
    return tsquery, phrases, "OR" if op == "|" else "AND"
