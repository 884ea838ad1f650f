"""chunk_markdown: the documented examples (docs/architecture.md "Chunking"), budgets,
overlap, Unicode, properties, speed."""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import unicodedata

import pytest

from engine.index.chunking import Chunk, chunk_markdown, chunk_sizes
from engine.index.tokens import estimate_chars_cost
from engine.workspace.paging import file_lines, read_page


def ranges(chunks: list[Chunk]) -> list[tuple[int, int]]:
    return [(c.start_line, c.end_line) for c in chunks]


# --- documented examples ------------------------------------------------------------


def test_spec_ten_lines_of_thirty_chars() -> None:
    content = "\n".join(f"{i:02d}" + "x" * 28 for i in range(10))
    chunks = chunk_markdown(content, tokens=20, overlap=0)
    assert ranges(chunks) == [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10)]
    assert chunks[0].text == content.split("\n")[0] + "\n" + content.split("\n")[1]


@pytest.mark.parametrize("overlap", [0, 80, 10_000])
def test_spec_long_single_line(overlap: int) -> None:
    chunks = chunk_markdown("a" * 4825, tokens=400, overlap=overlap)
    assert [len(c.text) for c in chunks] == [1600, 1600, 1600, 25]
    assert ranges(chunks) == [(1, 1)] * 4
    assert "".join(c.text for c in chunks) == "a" * 4825


def test_defaults_are_400_and_80() -> None:
    assert chunk_markdown("a" * 4825) == chunk_markdown("a" * 4825, 400, 80)


# --- sizes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "overlap", "expected"),
    [
        (400, 80, (1600, 320)),
        (20, 0, (80, 0)),
        (1, 1, (32, 4)),  # 32-char floor
        (0, 0, (32, 0)),
        (10, 100, (40, 20)),  # overlap capped at maxChars/2
        (400, -5, (1600, 0)),
    ],
)
def test_chunk_sizes(tokens: int, overlap: int, expected: tuple[int, int]) -> None:
    assert chunk_sizes(tokens, overlap) == expected


def test_tiny_tokens_use_32_char_floor() -> None:
    # 6 lines of "abcd" cost 5 each = 30 <= 32; the 7th would make 35.
    content = "\n".join(["abcd"] * 14)
    assert ranges(chunk_markdown(content, tokens=1, overlap=0)) == [(1, 6), (7, 12), (13, 14)]


# --- hashes and shape -----------------------------------------------------------


def test_hash_is_sha256_of_utf8_text() -> None:
    content = "# Título\n\nnotas sobre 東京\n"
    (chunk,) = chunk_markdown(content)
    assert chunk.text == content.removesuffix("\n")
    assert chunk.hash == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
    assert (chunk.start_line, chunk.end_line) == (1, 3)


def test_chunk_is_frozen() -> None:
    (chunk,) = chunk_markdown("x")
    with pytest.raises(AttributeError):
        chunk.text = "y"  # type: ignore[misc]


def test_same_text_same_hash_different_lines() -> None:
    content = "\n".join(["same line here"] * 3)
    chunks = chunk_markdown(content, tokens=1, overlap=0)  # max 32: two lines per chunk
    assert ranges(chunks) == [(1, 2), (3, 3)]
    assert chunks[0].hash != chunks[1].hash
    single = chunk_markdown("same line here", tokens=1, overlap=0)[0]
    assert single.hash == chunks[1].hash


# --- empty input ----------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "\n", "\n\n\n\n", "   ", " \n\t\n  \n", "\r\n\r\n"])
def test_blank_content_gives_no_chunks(content: str) -> None:
    assert chunk_markdown(content) == []


def test_whitespace_only_chunks_are_dropped_but_line_numbers_kept() -> None:
    # max 32: the 40 blank lines form whitespace-only chunks which are dropped.
    content = "first\n" + "\n" * 40 + "last"
    chunks = chunk_markdown(content, tokens=1, overlap=0)
    assert [c.text.strip() for c in chunks] == ["first", "last"]
    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == 42


def test_final_newline_ends_the_last_line() -> None:
    # Unlike OpenClaw, the empty string after the final "\n" is no line: `wc -l` says 2.
    (chunk,) = chunk_markdown("a\nb\n")
    assert (chunk.start_line, chunk.end_line, chunk.text) == (1, 2, "a\nb")
    (chunk,) = chunk_markdown("a\nb")  # no final newline: the same two lines
    assert (chunk.start_line, chunk.end_line, chunk.text) == (1, 2, "a\nb")
    (chunk,) = chunk_markdown("a\n\n")  # a blank last line is a line (wc -l: 2)
    assert (chunk.start_line, chunk.end_line, chunk.text) == (1, 2, "a\n")
    (chunk,) = chunk_markdown("a\r\nb\r\n")
    assert (chunk.start_line, chunk.end_line, chunk.text) == (1, 2, "a\r\nb\r")
    assert chunk_markdown("") == [] and chunk_markdown("\n") == []


@pytest.mark.parametrize("tokens,overlap", [(400, 80), (16, 4), (8, 0), (1, 0)])
def test_every_citation_is_a_readable_range_of_the_file(tokens: int, overlap: int) -> None:
    """Each chunk's lines exist in the file (its last line ≤ the file's line count, as
    memory_get counts them) and reading them back gives a page that holds the text."""
    rng = random.Random(tokens * 1000 + overlap)
    words = ["alpha", "beta", "東京", "", "- item", "## head", "x" * 90, "crème"]
    for _ in range(300):
        lines = [
            " ".join(rng.choices(words, k=rng.randint(0, 6))) for _ in range(rng.randint(0, 30))
        ]
        content = "\n".join(lines) + rng.choice(["", "\n", "\n\n"])
        total = len(file_lines(content))
        for chunk in chunk_markdown(content, tokens, overlap):
            assert 1 <= chunk.start_line <= chunk.end_line <= total, (content, chunk)
            page = read_page(
                content, chunk.start_line, chunk.end_line - chunk.start_line + 1, max_chars=10**6
            )
            assert page.start == chunk.start_line and not page.past_end
            assert page.start + page.lines - 1 == chunk.end_line
            assert chunk.text in page.text, (content, chunk)


# --- CRLF -------------------------------------------------------------------------


def test_crlf_keeps_carriage_returns_and_line_numbers() -> None:
    content = "alpha\r\nbeta\r\ngamma"
    (chunk,) = chunk_markdown(content)
    assert chunk.text == content
    assert (chunk.start_line, chunk.end_line) == (1, 3)


def test_crlf_carriage_return_costs_one() -> None:
    # "abcd\r" costs 5 (+1 newline = 6): 5 lines fit in 32, not 6 as with "abcd".
    crlf = "\r\n".join(["abcd"] * 10)
    assert ranges(chunk_markdown(crlf, tokens=1, overlap=0)) == [(1, 5), (6, 10)]


def test_lone_cr_is_not_a_line_break() -> None:
    (chunk,) = chunk_markdown("a\rb\nc")
    assert (chunk.start_line, chunk.end_line) == (1, 2)


# --- long lines -------------------------------------------------------------------


def test_long_line_between_short_lines() -> None:
    content = "intro\n" + "b" * 100 + "\noutro"
    chunks = chunk_markdown(content, tokens=10, overlap=0)  # max 40
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [
        (1, 1, "intro"),
        (2, 2, "b" * 40),
        (2, 2, "b" * 40),
        (2, 3, "b" * 20 + "\noutro"),
    ]


def test_line_of_exactly_max_chars_is_not_cut() -> None:
    chunks = chunk_markdown("c" * 40 + "\nd", tokens=10, overlap=0)
    assert [c.text for c in chunks] == ["c" * 40, "d"]


def test_pieces_of_one_line_join_without_newline() -> None:
    # 33 'x' → pieces of 32 and 1 (costs 33 and 2); next line fits beside the 1.
    chunks = chunk_markdown("x" * 33 + "\ny", tokens=1, overlap=0)
    assert [c.text for c in chunks] == ["x" * 32, "x\ny"]
    assert ranges(chunks) == [(1, 1), (1, 2)]


# --- CJK ----------------------------------------------------------------------------


def test_cjk_lines_cost_four_per_char() -> None:
    # "漢字漢字" costs 16 (+1); two lines would be 34 > 32. ASCII of the same
    # length packs six lines per chunk.
    cjk = "\n".join(["漢字漢字"] * 4)
    ascii_ = "\n".join(["abcd"] * 4)
    assert ranges(chunk_markdown(cjk, tokens=1, overlap=0)) == [(1, 1), (2, 2), (3, 3), (4, 4)]
    assert ranges(chunk_markdown(ascii_, tokens=1, overlap=0)) == [(1, 4)]


def test_long_cjk_line_is_cut_by_weighted_cost() -> None:
    line = "漢" * 100
    chunks = chunk_markdown(line, tokens=8, overlap=0)  # max 32 → 8 ideographs
    assert [len(c.text) for c in chunks] == [8] * 12 + [4]
    assert "".join(c.text for c in chunks) == line
    assert all(estimate_chars_cost(c.text) <= 32 for c in chunks)


def test_mixed_cjk_ascii_long_line_cut_within_budget() -> None:
    line = ("ab漢" * 50) + "z"
    chunks = chunk_markdown(line, tokens=10, overlap=0)  # max 40
    assert "".join(c.text for c in chunks) == line
    costs = [estimate_chars_cost(c.text) for c in chunks]
    assert all(cost <= 40 for cost in costs)
    # Greedy: each full piece leaves no room for the next character.
    for chunk, nxt in itertools.pairwise(chunks):
        assert estimate_chars_cost(chunk.text + nxt.text[0]) > 40


@pytest.mark.parametrize(
    ("text", "tokens", "budget"),
    [
        ("a" * 3000, 400, 1600),
        ("\u3400" * 200, 400, 1600),
        ("\U00020000" * 150, 400, 1600),
        ("\U00020000" * 120, 31, 124),
        ("\U00020000" * 11, 1, 32),
    ],
)
def test_supplementary_and_rare_ideographs_bounded(text: str, tokens: int, budget: int) -> None:
    chunks = chunk_markdown(text, tokens=tokens, overlap=0)
    assert chunks
    assert "".join(c.text for c in chunks) == text
    for chunk in chunks:
        assert estimate_chars_cost(chunk.text) <= budget
        chunk.text.encode("utf-8")  # strict: no lone surrogates
        assert (chunk.start_line, chunk.end_line) == (1, 1)


def test_cut_never_separates_combining_mark_from_base() -> None:
    # Without the guard the 32-char cut would fall between "e" and U+0301.
    line = "a" * 31 + "e\u0301" + "b" * 40
    chunks = chunk_markdown(line, tokens=1, overlap=0)
    assert "".join(c.text for c in chunks) == line
    assert chunks[0].text == "a" * 31
    assert chunks[1].text.startswith("e\u0301")
    for chunk in chunks:
        assert not unicodedata.category(chunk.text[0]).startswith("M")


def test_cut_does_not_split_after_zwj() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # 5 code points
    line = "a" * 30 + family + "b" * 40
    chunks = chunk_markdown(line, tokens=1, overlap=0)
    assert "".join(c.text for c in chunks) == line
    for chunk in chunks:
        assert not chunk.text.startswith("\u200d")
        assert not chunk.text.endswith("\u200d")


def test_line_of_only_marks_still_terminates() -> None:
    line = "x" + "\u0301" * 100
    chunks = chunk_markdown(line, tokens=1, overlap=0)
    assert "".join(c.text for c in chunks) == line
    assert all(estimate_chars_cost(c.text) <= 32 for c in chunks)


# --- overlap ------------------------------------------------------------------------


def test_overlap_carries_trailing_lines() -> None:
    # 10-char lines cost 11; max 40 → 3 lines; overlap 5 tokens = 20 → 1 line carried.
    lines = [f"line{i:02d}xxxx" for i in range(1, 10)]
    chunks = chunk_markdown("\n".join(lines), tokens=10, overlap=5)
    assert ranges(chunks) == [(1, 3), (3, 5), (5, 7), (7, 9)]
    assert chunks[1].text == "\n".join(lines[2:5])


def test_overlap_capped_at_half_of_max_chars() -> None:
    # "abcd" costs 5: 8 lines per 40-char chunk; overlap 100 tokens is capped to 20 → 4 lines.
    content = "\n".join(f"{i:04d}" for i in range(1, 21))
    chunks = chunk_markdown(content, tokens=10, overlap=100)
    assert ranges(chunks) == [(1, 8), (5, 12), (9, 16), (13, 20)]


def test_overlap_cjk_lines_use_weighted_cost() -> None:
    # "漢字" costs 8 (+1 = 9); max 40 → 4 lines; cap 20 → 2 lines (18) carried.
    content = "\n".join(["漢字"] * 8)
    chunks = chunk_markdown(content, tokens=10, overlap=5)
    assert ranges(chunks) == [(1, 4), (3, 6), (5, 8)]


def test_overlap_line_larger_than_cap_is_not_carried() -> None:
    content = "\n".join(["y" * 25, "z" * 25, "w" * 25])  # cost 26 each > cap 20
    chunks = chunk_markdown(content, tokens=10, overlap=5)
    assert ranges(chunks) == [(1, 1), (2, 2), (3, 3)]


def test_overlap_shrinks_so_next_line_fits() -> None:
    # Lines: five of cost 6, then one of cost 31. Cap 20 would carry 3 lines (18),
    # but 18 + 31 > 40; only 1 line (6) fits beside it, so no overlap-only chunk.
    content = "\n".join(["aaaaa"] * 5 + ["L" * 30])
    chunks = chunk_markdown(content, tokens=10, overlap=5)
    assert ranges(chunks) == [(1, 5), (5, 6)]
    assert chunks[1].text == "aaaaa\n" + "L" * 30


def test_overlap_zero_partitions_lines() -> None:
    content = "\n".join(f"row {i}" for i in range(200))
    chunks = chunk_markdown(content, tokens=10, overlap=0)
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start_line == prev.end_line + 1
    assert "\n".join(c.text for c in chunks) == content


# --- properties -----------------------------------------------------------------------

_WORDS = ["memoria", "agent", "note", "東京", "会議", "café", "ÿ", "x", "deploy", "한국어"]


def _random_line(rng: random.Random, long_lines: bool) -> str:
    roll = rng.random()
    if roll < 0.1:
        return ""
    if long_lines and roll < 0.15:
        return "".join(rng.choice(_WORDS) for _ in range(rng.randint(50, 400)))
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))


def _random_content(rng: random.Random, long_lines: bool) -> str:
    return "\n".join(_random_line(rng, long_lines) for _ in range(rng.randint(1, 120)))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("seed", range(40))
def test_property_budget_ranges_and_text_positions(seed: int) -> None:
    rng = random.Random(seed)
    content = _random_content(rng, long_lines=True)
    tokens = rng.choice([1, 5, 8, 20, 50, 400])
    overlap = rng.choice([0, 1, 3, 10, 80, 1000])
    max_chars, _cap = chunk_sizes(tokens, overlap)
    lines = content.split("\n")
    chunks = chunk_markdown(content, tokens=tokens, overlap=overlap)
    covered: set[int] = set()
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.text.strip()
        assert estimate_chars_cost(chunk.text) <= max_chars
        # The text is verbatim from the lines it claims.
        assert chunk.text in "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.hash == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(lines, start=1):
        if line.strip():
            assert number in covered
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)


@pytest.mark.parametrize("seed", range(40))
def test_property_no_overlap_reproduces_content(seed: int) -> None:
    rng = random.Random(1000 + seed)
    content = _random_content(rng, long_lines=True)
    tokens = rng.choice([1, 5, 8, 20, 50, 400])
    chunks = chunk_markdown(content, tokens=tokens, overlap=0)
    # Only whitespace can be lost (dropped whitespace-only chunks).
    assert _squash("".join(c.text for c in chunks)) == _squash(content)
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start_line >= prev.end_line


@pytest.mark.parametrize("seed", range(30))
def test_property_no_overlap_exact_when_nothing_blank(seed: int) -> None:
    rng = random.Random(2000 + seed)
    lines = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6))) for _ in range(80)]
    content = "\n".join(lines)
    chunks = chunk_markdown(content, tokens=rng.choice([1, 8, 20, 100]), overlap=0)
    rebuilt = chunks[0].text
    for prev, nxt in itertools.pairwise(chunks):
        rebuilt += ("" if nxt.start_line == prev.end_line else "\n") + nxt.text
    assert rebuilt == content


@pytest.mark.parametrize("seed", range(30))
def test_property_overlap_never_exceeds_cap(seed: int) -> None:
    rng = random.Random(3000 + seed)
    content = _random_content(rng, long_lines=False)
    tokens = rng.choice([8, 20, 50, 100])
    overlap = rng.choice([1, 5, 20, 80, 500])
    max_chars, cap = chunk_sizes(tokens, overlap)
    lines = content.split("\n")
    chunks = chunk_markdown(content, tokens=tokens, overlap=overlap)
    for prev, nxt in itertools.pairwise(chunks):
        if any(estimate_chars_cost(line) > max_chars for line in lines):
            continue
        shared = range(nxt.start_line, prev.end_line + 1)
        carried = sum(estimate_chars_cost(lines[n - 1]) + 1 for n in shared)
        assert carried <= cap
        assert carried <= max_chars // 2
        # Progress: every chunk adds at least one new line.
        assert nxt.end_line > prev.end_line


# --- large inputs (speed is measured in tests/bench, never asserted here) -------------


def test_ten_megabytes_chunk_completely() -> None:
    line = "- 2026-01-05 deployed memdeck to the staging box; notes in the runbook\n"
    content = line * (10_000_000 // len(line))
    chunks = chunk_markdown(content)
    assert chunks[-1].end_line == content.count("\n")  # `wc -l`


def test_ten_megabyte_single_line_is_cut_into_max_size_pieces() -> None:
    content = "q" * 10_000_000
    chunks = chunk_markdown(content)
    assert len(chunks) == 6250
