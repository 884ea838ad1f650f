"""The profile's keyword extraction equals OpenClaw 2026.9.6's ``extractKeywords``
on every LoCoMo question (1,981 English queries) and on queries in Spanish,
Portuguese, Arabic, Chinese, Japanese, Korean and other scripts, and its
stop-word set agrees word for word with ``isQueryStopWordToken`` on their whole
vocabulary plus every word of every list."""

from __future__ import annotations

from engine.openclaw.keywords import STOP_WORDS, extract_keywords, segments
from tests.openclaw import multilingual
from tests.openclaw.corpus import locomo_questions


def _compare(openclaw, queries: list[str]) -> list[tuple[str, list[str], list[str]]]:
    words = sorted({w for q in queries for w in segments(q)} | STOP_WORDS)
    theirs = openclaw.node_json("keywords.mjs", {"queries": queries, "words": words})
    stop = {w for w, s in zip(words, theirs["stop"], strict=True) if s}
    assert stop == {w for w in words if w in STOP_WORDS}
    return [
        (q, extract_keywords(q), k)
        for q, k in zip(queries, theirs["keywords"], strict=True)
        if extract_keywords(q) != k
    ]


def test_keywords_match_openclaw(openclaw):
    queries = [q for conv in range(10) for q in locomo_questions(conv)]
    assert len(queries) > 1900
    differ = _compare(openclaw, queries)
    assert not differ, differ[:5]


def test_keywords_in_other_languages_match_openclaw(openclaw):
    queries = multilingual.QUERIES
    differ = _compare(openclaw, queries)
    assert not differ, differ[:5]
    # the cases carry the behaviour: stop words dropped, CJK split, particles stripped
    # characters and neighbouring pairs, stop words (之前, 的, 那个) dropped
    assert extract_keywords("之前讨论的那个方案") == (
        ["之", "讨", "论", "个", "方", "案", "前讨", "讨论", "论的", "的那", "个方", "方案"]
    )
    assert extract_keywords("昨日話したデプロイの問題はどうなった？") == [
        "昨日話",
        "日話",
        "デプロイ",
        "問題",
        "はどうなった",
    ]
    assert "maría" in extract_keywords(queries[0]) and "sobre" not in extract_keywords(queries[0])
    assert extract_keywords("우리는 데이터베이스에서 문제를 찾았다") == [
        "데이터베이스에서",
        "데이터베이스",
        "문제를",
        "문제",
        "찾았다",
    ]
