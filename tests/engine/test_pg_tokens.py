"""The PostgreSQL store's terms are FTS5 unicode61's terms, checked against SQLite itself.

bm25 needs the same terms *and the same document lengths* on both stores: an emoji
newer than FTS5's Unicode tables is a token for FTS5, a combining diacritic inside
a word is dropped, a letter FTS5 does not know splits the word.
"""

from __future__ import annotations

import unicodedata

import apsw
import pytest

from engine.index.fts5_tokenchars import EXTRA, MISSING, SQLITE_VERSION
from engine.index.pg_tokens import doc_terms, query_terms

TEXTS = [
    "Dave 🤩 loved the car show; 🤘 rock on",
    "Yoga 🧘\u200d♀️ at 7am, then café with Zoë and Zoe\u0301",
    "ᦰ is a letter today, not for FTS5: xᦰy",
    "Ⴀ Georgian, ǅ titlecase, ÅNGSTRÖM, straße, İstanbul",
    "tabs\tand\u00a0nbsp, snake_case, foo-bar, e-mail a@b.co, 3.14, ½ ² ٣",
    "日本語のテキスト and 한국어 mixed with عربى",
]


def fts5_terms(text: str) -> list[str]:
    db = apsw.Connection(":memory:")
    db.execute("create virtual table f using fts5(t, tokenize='unicode61')")
    db.execute("create virtual table v using fts5vocab(f, 'instance')")
    db.execute("insert into f values (?)", (text,))
    return [str(r[0]) for r in db.execute("select term from v order by offset")]


@pytest.mark.parametrize("text", TEXTS)
def test_terms_equal_fts5s(text: str) -> None:
    assert doc_terms(text) == fts5_terms(text)


def test_the_generated_table_matches_this_sqlite() -> None:
    """Every assigned code point that is not a letter or digit today, and every letter
    the table lists as missing, classified as this SQLite's FTS5 does (a SQLite
    upgrade with newer tables fails here: rerun scripts/gen_fts5_tokenchars.py)."""
    assert apsw.sqlite_lib_version() == SQLITE_VERSION
    cps = [
        c
        for c in range(0x80, 0x30000)
        if unicodedata.category(chr(c))[0] in "MPSZC" and unicodedata.category(chr(c)) != "Cn"
        and not 0xD800 <= c <= 0xDFFF
    ]  # fmt: skip
    cps += [c for a, b in MISSING for c in range(a, b + 1)]
    db = apsw.Connection(":memory:")
    db.execute("create virtual table f using fts5(t, tokenize='unicode61')")
    with db:
        db.executemany("insert into f(rowid, t) values (?, ?)", ((c, f"qa{chr(c)}bq") for c in cps))
    split = {int(r[0]) for r in db.execute("select rowid from f where f match 'qa'")}
    mismatched = [hex(c) for c in cps if (len(doc_terms(f"qa{chr(c)}bq")) == 1) != (c not in split)]
    assert mismatched == []
    assert len(EXTRA) > 100  # the table was generated, not left empty


def test_a_repeated_query_phrase_counts_twice_like_fts5() -> None:
    parsed = query_terms('"Who" OR "who" OR "lake"')
    assert parsed is not None
    assert parsed[1] == [("who",), ("who",), ("lake",)] and parsed[2] == "OR"
