"""The words memdeck matches itself (``engine.search.words``) and the snippet built
around the best unit (``engine.search.snippets``): pure functions, no index."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from engine.index.unicode61 import doc_terms
from engine.search.snippets import focused_snippet
from engine.search.words import (
    date_words,
    fold,
    heading_words,
    name_words,
    path_words,
    relative_day_words,
    token_counts,
    word_terms,
)


def test_fold_matches_case_accents_and_one_plural_ending() -> None:
    assert fold("Sofía") == fold("sofia") == "sofia"
    assert fold("migrations") == fold("Migration") == "migration"
    assert fold("stories") == "story" and fold("boxes") == "box" and fold("churches") == "church"
    assert fold("Atlas") == fold("atlas")  # both sides fold alike
    assert fold("status") == "status" and fold("class") == "class"
    assert fold("analysis") == "analysis"
    assert fold("bus") == "bus" and fold("v3") == "v3"


def test_term_counts_are_fts5s_terms() -> None:
    """The calibrated side's tf and length are bm25's: FTS5's unicode61 terms (checked
    against SQLite itself in tests/engine/test_unicode61.py), not the query's words."""
    texts = [
        "- [D1:4] Andrew: Thanks! That SOUNDS cute. Can I see a picture? picture_2 x2",
        "Atlas ATLAS atlas's rollout; 2026-03-01 under_score  ",
        "Sofía met SOFIA at the Café; straße STRASSE ﬁne ½ 東京 東京",
        "",
    ]
    for text in texts:
        assert token_counts(text) == Counter(doc_terms(text)), text
    assert token_counts(texts[0])["picture"] == 2 and token_counts(texts[0])["2"] == 1
    assert token_counts(texts[1])["atlas"] == 3 and token_counts(texts[1])["s"] == 1
    assert token_counts(texts[1])["under"] == 1 and "under_score" not in token_counts(texts[1])
    assert token_counts(texts[2])["cafe"] == 1 and token_counts(texts[2])["sofia"] == 2
    assert sum(token_counts(texts[1]).values()) == 10  # the length bm25 divides by
    assert word_terms("under_score") == ("under", "score") and word_terms("Café") == ("cafe",)


def test_a_chunk_is_named_by_its_path_and_title_and_its_sections_name_parts() -> None:
    assert path_words("memory/projects/atlas.md") == {"project", "atla"}
    assert path_words("memory/people/dana-okafor.md") == {"people", "dana", "okafor"}
    assert "memory" not in path_words("memory/2026-11-14.md")
    assert path_words("MEMORY.md") == {"memory"}
    # a daily log is also named by its date as people write it (a Saturday)
    assert path_words("memory/2026-11-14.md") == {
        "2026", "11", "14", "november", "nov", "saturday"
    }  # fmt: skip
    assert {"5", "march"} <= path_words("memory/2026-03-05.md")
    assert "mar" not in path_words("memory/2026-03-05.md")  # "mar" is a word of its own
    assert date_words(dt.date(2026, 5, 1)) == {"may", "1", "friday"}
    today = dt.date(2026, 11, 29)
    assert relative_day_words("memory/2026-11-29.md", today) == {"today"}
    assert relative_day_words("memory/2026-11-28.md", today) == {"yesterday", "last"}
    assert relative_day_words("memory/2026-11-22.md", today) == {"last"}  # 7 days ago
    assert relative_day_words("memory/2026-11-21.md", today) == frozenset()
    assert relative_day_words("memory/projects/atlas.md", today) == frozenset()
    text = "# Atlas — billing migration\n\nGoal.\n\n## Rollback\nKeep the old primary."
    title, sections = heading_words(text, start_line=1)
    assert title == {"atla", "billing", "migration"} and sections == {"rollback"}
    # a chunk further into the file has no title: its first heading is a section's
    assert heading_words(text, start_line=12)[0] == frozenset()
    named, parts = name_words("memory/projects/atlas.md", "# Atlas\n## Atlas\n## Risks", 1)
    assert named == {"project", "atla"} and parts == {"risk"}  # a name counts once, in full
    assert heading_words("#hashtag\n####### seven", 1) == (frozenset(), frozenset())


def _log(n: int, at: int, line: str) -> tuple[str, list[str]]:
    lines = ["# 2026-10-07", "", "## 09:00"] + [
        f"- entry {i}: filler words to take some room on the line, nothing more" for i in range(n)
    ]
    lines[at] = line
    return "\n".join(lines), lines


def test_a_chunk_that_fits_is_its_own_snippet() -> None:
    got = focused_snippet("# Atlas\n\nshort note", 1, 3, (3, 3), ["atlas"])
    assert (got.text, got.first_line, got.last_line) == ("# Atlas\n\nshort note", 1, 3)
    assert got.anchor == 3  # the unit it was asked for (the text output starts near it)
    assert focused_snippet("# Atlas\n\nshort note", 1, 3, None, ["note"]).anchor == 3


def test_the_snippet_is_built_around_the_best_unit_within_the_budget() -> None:
    text, lines = _log(30, 20, "- Atlas staging rehearsal went fine.")
    got = focused_snippet(text, 1, len(lines), (21, 21), ["rehearsal"])
    assert len(got.text) <= 700 and "- Atlas staging rehearsal went fine." in got.text
    assert got.first_line < 21 < got.last_line  # lines on both sides
    assert got.anchor == 21
    # whole lines, the last one as much of it as fits
    assert "\n".join(lines[got.first_line - 1 : got.last_line]).startswith(got.text)
    assert got.text.count("\n") == got.last_line - got.first_line
    # without a unit (keyword-only), the first line holding a query word
    alone = focused_snippet(text, 1, len(lines), None, ["Rehearsals"])
    assert alone.first_line <= 21 <= alone.last_line and alone.anchor == 21


def test_a_line_with_a_query_word_and_the_heading_above_come_first() -> None:
    text, lines = _log(30, 20, "- Atlas: the staging rehearsal.")
    lines[5] = "- Atlas: cut-over planned."
    lines[19] = "## Atlas"
    text = "\n".join(lines)
    got = focused_snippet(text, 1, len(lines), (21, 21), ["atlas"])
    assert got.first_line <= 20  # the heading naming its section
    far = focused_snippet(text, 1, len(lines), (21, 21), ["atlas"], limit=60)
    assert far.text == "## Atlas\n- Atlas: the staging rehearsal." and far.last_line == 21


def test_an_anchor_longer_than_the_budget_is_cut_around_its_first_query_word() -> None:
    long_line = "x " * 500 + "the rehearsal notes " + "y " * 500
    got = focused_snippet("# t\n" + long_line + "\nend", 1, 3, (2, 2), ["rehearsal"])
    assert len(got.text) == 700 and "rehearsal" in got.text
    assert (got.first_line, got.last_line) == (2, 2)
