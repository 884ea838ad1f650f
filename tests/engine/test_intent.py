"""Which queries ask when, and which words of a unit name a time (``engine.search.intent``)."""

from __future__ import annotations

import random
import re

import pytest

from engine.search.intent import asks_when, time_expression, unit_time


@pytest.mark.parametrize(
    "query",
    [
        "When did Caroline go to the support group?",
        "when was the staging database moved",
        "  What year did we adopt Postgres?",
        "which month is the audit",
        "How long ago did Melanie paint the sunset?",
        "Since when do we deploy on Fridays?",
    ],
)
def test_questions_about_a_time(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize(
    "query",
    [
        "atlas staging",
        "What did Caroline research?",
        "Where did we move staging?",
        "whenever the cron fails",  # a word that starts with "when"
        "the deploy, when it failed",  # "when" not asking
        "",
    ],
)
def test_other_queries(query: str) -> None:
    assert not asks_when(query)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Moved staging to the new host yesterday.", "yesterday"),
        ("We went camping two weekends ago", "ago"),
        ("Last week I joined a mentorship program", "Last week"),
        ("The audit is due in March.", "March"),
        ("Signed on 7 May, effective May 2024", "7 May"),
        ("Released in 2023 after the freeze", "2023"),
        ("Retro on 3/14", "3/14"),
        ("See you on Friday!", "Friday"),
        ("Ran into Ana the other day at the café", "the other day"),
        ("Réunion à Lyon, 7th May", "7th May"),
        ("Budget for May 2025 approved", "May 2025"),
        ("no time here\nbut this one says: Next Summer", "Next Summer"),
    ],
)
def test_words_that_name_a_time(text: str, words: str) -> None:
    assert time_expression(text) == words


@pytest.mark.parametrize(
    "text",
    [
        "We may move staging to the new host.",  # May the verb, not the month
        "Moved staging to the new host.",
        "The weekly report goes to Ana",  # a period word inside another word
        "Port 8080 and build 20231 failed",  # numbers that are not years
        "the other side of the day",  # the words of a time, not in its order
        "last of the weekly builds",
    ],
)
def test_words_that_do_not(text: str) -> None:
    assert time_expression(text) is None


def test_each_unit_of_a_chunk_by_its_file_lines() -> None:
    text = "# Staging\n- Moved it yesterday.\n- Host is db-2.\nwrapped prose that\nsays last week"
    # the chunk starts at file line 10: units are lines 11, 12 and the paragraph 13–14
    units = ((11, 11), (12, 12), (13, 14))
    got = [unit_time(text.split("\n"), 10, first, last) for first, last in units]
    assert got == ["yesterday", None, "last week"]


def test_the_rules_read_word_by_word_equal_one_regular_expression() -> None:
    """``time_expression`` reads a line's words (fast); this regular expression says the
    same rules in one pattern (slow: ~180 µs a chunk). On random lines made of time
    words, near misses, numbers and punctuation, both find the same words."""
    days = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    months = "january|february|march|april|june|july|august|september|october|november|december"
    periods = (
        f"week|weekend|month|year|night|morning|evening|summer|winter|spring|autumn|fall|{days}"
    )
    rule = re.compile(
        r"\b(?:yesterday|today|tonight|tomorrow|recently|the other day|ago"
        rf"|(?:last|next|this|past) (?:{periods})|{days}|{months}"
        r"|may \d{1,4}|\d{1,2}(?:st|nd|rd|th)? may|(?:19|20)\d\d|\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b",
        re.IGNORECASE,
    )
    vocabulary = [
        "the",
        "other",
        "day",
        "Day",
        "last",
        "next",
        "this",
        "past",
        "week",
        "weekend",
        "weekly",
        "month",
        "year",
        "night",
        "May",
        "may",
        "Friday",
        "fridays",
        "March",
        "marching",
        "ago",
        "agony",
        "today",
        "todays",
        "7th",
        "21",
        "2024",
        "20245",
        "1999",
        "staging",
        "deploy",
        "Ana",
        "café",
        "is",
        "on",
        "at",
    ]
    rng = random.Random(11)
    for _ in range(20_000):
        words = rng.choices(vocabulary, k=rng.randint(1, 9))
        line = "".join(w + rng.choice([" ", " ", " ", ", ", ". ", "-", "!"]) for w in words)
        want = rule.search(line)
        assert time_expression(line) == (want.group(0) if want else None), line
