"""The profile's keyword expansion equals OpenClaw 2026.9.6's ``extractKeywords``
on every LoCoMo question (1,981 English queries), and its stop-word set agrees
word for word with ``isQueryStopWordToken`` on their whole vocabulary."""

from __future__ import annotations

from engine.search.openclaw_keywords import STOP_WORDS, _segments, extract_keywords
from tests.openclaw.corpus import locomo_questions


def test_keywords_match_openclaw(openclaw):
    queries = [q for conv in range(10) for q in locomo_questions(conv)]
    words = sorted({w for q in queries for w in _segments(q)} | STOP_WORDS)
    theirs = openclaw.node_json("keywords.mjs", {"queries": queries, "words": words})
    stop = {w for w, s in zip(words, theirs["stop"], strict=True) if s}
    assert stop == {w for w in words if w in STOP_WORDS}
    differ = [
        (q, extract_keywords(q), k)
        for q, k in zip(queries, theirs["keywords"], strict=True)
        if extract_keywords(q) != k
    ]
    assert len(queries) > 1900
    assert not differ, differ[:5]
