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
from engine.index.unicode61 import doc_terms, query_terms, term_counts, term_set

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


def test_term_counts_equal_fts5s_on_every_path() -> None:
    """The counts the calibrated ranking uses where the postings cannot give them
    (ASCII text, text the standard library's classes cut like FTS5, and the rest),
    against FTS5's own terms for the same texts: mixed scripts, ``_``, ``İ``, private
    use, combining marks FTS5 keeps, letters and emoji newer than its tables."""
    import random
    from collections import Counter

    rng = random.Random(5)
    alphabet = list("aZ_ 9.-\n'") + list("éÉßΣςϲİıﬁϒᴬ東京½٣ᦰ🤩\ue000\u0301\u0300 \u200d")
    texts = [*TEXTS, "plain ASCII under_score x2", ""]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    db = apsw.Connection(":memory:")
    db.execute("create virtual table f using fts5(t, tokenize='unicode61')")
    db.execute("create virtual table v using fts5vocab(f, 'instance')")
    with db:
        db.executemany("insert into f(rowid, t) values (?, ?)", enumerate(texts, start=1))
    want: dict[int, Counter[str]] = {}
    for doc, term in db.execute("select doc, term from v"):
        want.setdefault(int(doc), Counter())[str(term)] += 1
    for i, text in enumerate(texts, start=1):
        assert term_counts(text) == want.get(i, Counter()), repr(text)
        assert term_set(text) == set(want.get(i, ())), repr(text)


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


@pytest.mark.slow  # 196k rows through FTS5, ~2 s
def test_every_token_character_folds_as_fts5_folds_it() -> None:
    """Each code point inside a word, folded here and by this SQLite (``ς`` is ``σ``
    but ``ϲ`` stays, ``ſ`` is ``s``, ``ǖ`` keeps its two diacritics, a lone combining mark
    is no term): ``fts5_tokenchars.FOLDS`` is in step with this SQLite's tables."""
    cps = [c for c in range(0x80, 0x30000) if not 0xD800 <= c <= 0xDFFF]
    db = apsw.Connection(":memory:")
    db.execute("create virtual table f using fts5(t, tokenize='unicode61')")
    db.execute("create virtual table v using fts5vocab(f, 'instance')")
    with db:
        db.executemany("insert into f(rowid, t) values (?, ?)", ((c, f"a{chr(c)}b") for c in cps))
    want: dict[int, list[str]] = {}
    for doc, term in db.execute("select doc, term from v order by doc, offset"):
        want.setdefault(int(doc), []).append(str(term))
    wrong = [hex(c) for c in cps if doc_terms(f"a{chr(c)}b") != want.get(c, [])]
    assert wrong == []
    assert doc_terms("ΟΔΟΣ ς ϲ µ ſ") == ["οδοσ", "σ", "ϲ", "μ", "s"] and doc_terms("\u0301") == []


def test_a_repeated_query_phrase_counts_twice_like_fts5() -> None:
    parsed = query_terms('"Who" OR "who" OR "lake"')
    assert parsed is not None
    assert parsed[1] == [("who",), ("who",), ("lake",)] and parsed[2] == "OR"


@pytest.mark.slow  # all of Unicode, ~4 s
def test_the_character_check_is_the_term_patterns_class() -> None:
    """The per-character check that picks the fast count (no pattern compiled) says
    what the term pattern's class says, over all of Unicode."""
    from engine.index.unicode61 import _is_token_char, _term_re

    term = _term_re()
    wrong = [
        hex(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF
        and _is_token_char(chr(c)) != (term.fullmatch(chr(c)) is not None)
    ]
    assert wrong == []
