"""Query tokens, FTS query building, MMR similarity tokens, Jaccard, chunk cost."""

from __future__ import annotations

import random
import re

import pytest

from engine.index.tokens import (
    WORD_RE,
    build_fts_query,
    estimate_chars_cost,
    has_word,
    jaccard,
    query_tokens,
    similarity_tokens,
    words_of,
)

# --- query_tokens / WORD_RE ---------------------------------------------------


def test_word_re_pattern_is_the_spec_one() -> None:
    assert WORD_RE.pattern == r"[\p{L}\p{N}_]+"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FOO_bar baz-1", ["FOO_bar", "baz", "1"]),
        ("  hello,   world!  ", ["hello", "world"]),
        ("", []),
        ("   \t\n", []),
        ("--- *** :::", []),
        ("don't", ["don", "t"]),
        ("Ünïcödé 123", ["Ünïcödé", "123"]),
        ("東京タワー 2026", ["東京タワー", "2026"]),
        ("a.b/c", ["a", "b", "c"]),
    ],
)
def test_query_tokens(text: str, expected: list[str]) -> None:
    assert query_tokens(text) == expected


def test_query_tokens_nfc_joins_combining_accent() -> None:
    # "e" + COMBINING ACUTE would split the word without NFC (the mark is not \p{L}).
    decomposed = "cafe\u0301 de\u0301ja\u0300-vu"
    assert query_tokens(decomposed) == ["café", "déjà", "vu"]
    assert all(len(t) == len(t.encode("utf-32-le")) // 4 for t in query_tokens(decomposed))


def test_query_tokens_keeps_case_and_order_and_duplicates() -> None:
    assert query_tokens("B a B") == ["B", "a", "B"]


# --- build_fts_query ----------------------------------------------------------


def test_build_fts_query_spec_example() -> None:
    assert build_fts_query("FOO_bar baz-1") == '"FOO_bar" AND "baz" AND "1"'


def test_build_fts_query_or() -> None:
    assert build_fts_query("FOO_bar baz-1", "OR") == '"FOO_bar" OR "baz" OR "1"'


def test_build_fts_query_single_token() -> None:
    assert build_fts_query("  memdeck  ") == '"memdeck"'


@pytest.mark.parametrize("blank", ["", "   ", "\n\t", '"""', "- * : ( ) ^"])
def test_build_fts_query_blank_is_none(blank: str) -> None:
    assert build_fts_query(blank) is None
    assert build_fts_query(blank, "OR") is None


def test_build_fts_query_neutralises_fts_operators() -> None:
    # NOT / NEAR / column filters become quoted plain terms; punctuation disappears.
    assert build_fts_query('NOT title:"x" NEAR(a b)') == (
        '"NOT" AND "title" AND "x" AND "NEAR" AND "a" AND "b"'
    )


def test_build_fts_query_bad_op() -> None:
    with pytest.raises(ValueError):
        build_fts_query("x", "NOT")  # type: ignore[arg-type]


def test_build_fts_query_cjk_and_nfc() -> None:
    assert build_fts_query("東京 cafe\u0301") == '"東京" AND "café"'


# --- similarity_tokens --------------------------------------------------------


def test_similarity_tokens_lowercase_set() -> None:
    assert similarity_tokens("Hello hello WORLD, world!") == frozenset({"hello", "world"})


def test_similarity_tokens_empty() -> None:
    assert similarity_tokens("") == frozenset()
    assert similarity_tokens("!!! ---") == frozenset()


def test_similarity_tokens_cjk_unigrams_and_bigrams() -> None:
    assert similarity_tokens("東京タワー") == frozenset(
        {"東", "京", "タ", "ワ", "ー", "東京", "京タ", "タワ", "ワー"}
    )


def test_similarity_tokens_single_cjk_char() -> None:
    assert similarity_tokens("猫") == frozenset({"猫"})


def test_similarity_tokens_hangul_and_hiragana() -> None:
    assert similarity_tokens("한국어") == frozenset({"한", "국", "어", "한국", "국어"})
    assert similarity_tokens("ひらがな") == frozenset(
        {"ひ", "ら", "が", "な", "ひら", "らが", "がな"}
    )


def test_similarity_tokens_mixed_latin_and_cjk_in_one_word() -> None:
    assert similarity_tokens("ABC漢字def") == frozenset({"abc", "漢", "字", "漢字", "def"})


def test_similarity_tokens_keep_combining_marks_inside_words() -> None:
    # Devanagari virama / vowel signs are \p{M}; the word must stay whole.
    assert similarity_tokens("नमस्ते दुनिया") == frozenset({"नमस्ते", "दुनिया"})


def test_similarity_tokens_nfc() -> None:
    assert similarity_tokens("Cafe\u0301") == similarity_tokens("café") == frozenset({"café"})


# --- jaccard ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (set(), set(), 0.0),
        ({"a"}, set(), 0.0),
        ({"a", "b"}, {"a", "b"}, 1.0),
        ({"a", "b", "c"}, {"a", "b", "d"}, 0.5),
        ({"a"}, {"b"}, 0.0),
        ({"a", "b", "c", "d"}, {"a"}, 0.25),
        ({"x", "y", "z"}, {"y", "z", "w", "v"}, 2 / 5),
    ],
)
def test_jaccard(a: set[str], b: set[str], expected: float) -> None:
    fa, fb = frozenset(a), frozenset(b)
    assert jaccard(fa, fb) == pytest.approx(expected)
    assert jaccard(fb, fa) == pytest.approx(expected)


def test_jaccard_on_similarity_tokens() -> None:
    a = similarity_tokens("The cat sat")
    b = similarity_tokens("the cat ran")
    assert jaccard(a, b) == pytest.approx(2 / 4)


# --- estimate_chars_cost ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abc", 3),
        ("héllo", 5),
        ("漢字ab", 10),
        ("東京タワー", 20),
        ("한국어", 12),
        ("\U00020000", 4),  # supplementary ideograph: one code point, cost 4
        ("ꀀ", 4),  # Yi syllable, one of OpenClaw's wide ranges
        ("。", 4),  # CJK punctuation U+3002
        ("😀", 1),  # emoji are not in the wide ranges
    ],
)
def test_estimate_chars_cost(text: str, expected: int) -> None:
    assert estimate_chars_cost(text) == expected


def test_the_fast_word_finders_find_what_word_re_finds() -> None:
    """``words_of`` and ``has_word`` take the standard library's engine for ASCII
    text: every ASCII character is a word character for both patterns or for neither,
    and a mixed text still goes through ``WORD_RE``."""
    for cp in range(128):
        ch = chr(cp)
        assert has_word(ch) == (WORD_RE.fullmatch(ch) is not None), repr(ch)
    # mixed text first asks the standard library's \w, which must never match a
    # character WORD_RE does not (checked over all of Unicode)
    std = re.compile(r"\w")
    loose = [
        hex(cp)
        for cp in range(0x110000)
        if std.fullmatch(chr(cp)) is not None and WORD_RE.fullmatch(chr(cp)) is None
    ]
    assert loose == []
    assert has_word("— ✓ —") is False and has_word("— ok —") is True
    assert has_word("\U000105c0") is True  # a letter newer than Python's tables
    rng = random.Random(5)
    alphabet = list("aZ09_ -.,:;'\"#\t") + list("éß東ϲİ\u0301½")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert words_of(text) == WORD_RE.findall(text), repr(text)
        assert has_word(text) == (WORD_RE.search(text) is not None), repr(text)
