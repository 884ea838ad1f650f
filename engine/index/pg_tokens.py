"""Terms for the PostgreSQL store, cut the way SQLite FTS5's unicode61 cuts them.

Why not PostgreSQL's own parser: it keeps ``foo-bar`` as a word besides its
parts, knows URLs and e-mail addresses, and its dictionaries stem. The pipeline's
text scores are FTS5's bm25 over unicode61 terms; the PostgreSQL store computes
the same bm25 over the same terms, so both stores rank keyword hits alike.

unicode61 (defaults): a term is a run of letters, digits and private-use
characters; it is case-folded and Latin letters lose their diacritics (é → e).
"Letters" as FTS5's tables know them: they are built from an older Unicode, and a
code point they do not know (an emoji newer than them: 🤩, 🧘) is a token
character, so ``fts5_tokenchars`` (generated from SQLite) adjusts today's classes.
Without it a chunk with such an emoji is one term shorter here than in FTS5 and
its bm25 differs in the sixth digit, enough to reorder near-ties.
"""

from __future__ import annotations

import unicodedata

import regex

from engine.index.fts5_tokenchars import EXTRA, MISSING


def _char_class(spans: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in spans)


#: a token character for FTS5's unicode61 (see the module docstring)
_TERM_RE = regex.compile(
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
    out = []
    for m in _TERM_RE.finditer(text):
        word = "".join(_fold_char(ch) for ch in m.group(0).lower())
        # a combining diacritic inside a term (e + U+0301) is dropped, as FTS5 does
        out.append(_COMBINING.sub("", word) if not word.isascii() else word)
    return out


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
