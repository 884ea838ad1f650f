"""``memory_get`` pages a file the way OpenClaw's memory read does, and never
strands an agent: every continuation moves forward and paging ends at the end.

The cases come from the CLI's contract and from reading openclaw@2026.9.6's read-file
module (facts only): a final newline adds no line, an empty file has 0 lines,
``lines: 0`` reads one line, whole lines fill a 12,000-character budget and a
notice in the text says how to continue.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.tools import memory_get
from engine.workspace.paging import MAX_CHARS, file_lines, read_page
from tests.engine_fixtures import write


@pytest.fixture
def default_engine(make_engine):
    return make_engine()


def test_final_newline_is_not_a_phantom_line(default_engine, workspace_dir: Path) -> None:
    write(workspace_dir, "memory/2026-03-01.md", "one\ntwo\nthree\n")
    got = memory_get(default_engine, "memory/2026-03-01.md")
    assert got == {"text": "one\ntwo\nthree", "path": "memory/2026-03-01.md", "from": 1, "lines": 3}
    got = memory_get(default_engine, "memory/2026-03-01.md", 2, 2)
    assert got == {"text": "two\nthree", "path": "memory/2026-03-01.md", "from": 2, "lines": 2}


def test_empty_file_has_no_lines(default_engine, workspace_dir: Path) -> None:
    write(workspace_dir, "memory/empty.md", "")
    got = memory_get(default_engine, "memory/empty.md")
    assert got == {"text": "", "path": "memory/empty.md", "from": 1, "lines": 0}
    write(workspace_dir, "memory/newline.md", "\n")  # one empty line
    assert memory_get(default_engine, "memory/newline.md")["lines"] == 1


def test_lines_zero_reads_one_line_as_openclaw_does(default_engine, workspace_dir: Path) -> None:
    write(workspace_dir, "MEMORY.md", "a\nb\nc\n")
    got = memory_get(default_engine, "MEMORY.md", 1, 0)
    assert got["text"].startswith("a\n\n[More of this file follows: continue with from=2.]")
    assert (got["lines"], got["truncated"], got["nextFrom"]) == (1, True, 2)
    assert memory_get(default_engine, "MEMORY.md", 0, 1)["from"] == 1  # from clamps to 1 as well


def test_continuation_only_when_something_is_left(default_engine, workspace_dir: Path) -> None:
    write(workspace_dir, "MEMORY.md", "".join(f"line {i}\n" for i in range(1, 11)))
    first = memory_get(default_engine, "MEMORY.md", 1, 4)
    assert first["nextFrom"] == 5 and first["truncated"] is True
    assert first["text"] == "line 1\nline 2\nline 3\nline 4\n\n" + (
        "[More of this file follows: continue with from=5.]"
    )
    last = memory_get(default_engine, "MEMORY.md", 7, 4)
    assert last == {
        "text": "line 7\nline 8\nline 9\nline 10",
        "path": "MEMORY.md",
        "from": 7,
        "lines": 4,
    }
    beyond = memory_get(default_engine, "MEMORY.md", 99)
    assert beyond == {"text": "", "path": "MEMORY.md", "from": 99, "lines": 0}


def test_budget_keeps_whole_lines(default_engine, workspace_dir: Path) -> None:
    line = "x" * 999  # 1,000 chars with its newline: 12 lines fit in 12,000
    write(workspace_dir, "MEMORY.md", (line + "\n") * 30)
    got = memory_get(default_engine, "MEMORY.md")
    assert got["lines"] == 12 and got["nextFrom"] == 13 and got["truncated"] is True
    body = got["text"].split("\n\n[")[0]
    assert body == "\n".join([line] * 12) and len(body) <= MAX_CHARS


def test_a_line_longer_than_the_budget_is_cut_and_can_be_read_on(
    default_engine, workspace_dir: Path
) -> None:
    long = "".join(chr(ord("a") + i % 26) for i in range(30_000))
    write(workspace_dir, "MEMORY.md", f"# Title\n{long}\ntail\n")
    second = memory_get(default_engine, "MEMORY.md", 2)
    assert second["lines"] == 1 and second["truncated"] is True
    assert second["nextFrom"] == 3, "skipping the cut line still moves forward"
    assert second["nextChar"] == MAX_CHARS
    assert second["text"].startswith(long[:MAX_CHARS] + "\n\n[Line 2 is longer than the page")
    assert "from=2 fromChar=12000" in second["text"] and "from=3" in second["text"]
    rest = memory_get(default_engine, "MEMORY.md", 2, from_char=24_000)
    assert rest["fromChar"] == 24_000
    assert rest["text"] == long[24_000:] + "\ntail", "the remainder fits, the next line follows"
    assert "nextFrom" not in rest and "truncated" not in rest


def test_paging_a_50000_char_single_line_reaches_the_end(
    default_engine, workspace_dir: Path
) -> None:
    """An agent that follows every continuation reads the whole file, once, in
    a bounded number of calls, each within the budget."""
    line = "".join(f"{i:05d}." for i in range(50_000 // 6)) + "end"
    assert len(line) >= 50_000
    write(workspace_dir, "memory/huge.md", line + "\n")
    got, position, calls = "", {"from_line": 1, "from_char": 0}, 0
    while True:
        calls += 1
        assert calls <= 10, "paging does not end"
        page = memory_get(
            default_engine, "memory/huge.md", position["from_line"], from_char=position["from_char"]
        )
        body = page["text"].split("\n\n[")[0]
        assert len(body) <= MAX_CHARS
        got += body
        if "nextChar" in page:
            assert (page["from"], page["nextChar"]) > (position["from_line"], position["from_char"])
            position = {"from_line": page["from"], "from_char": page["nextChar"]}
        elif "nextFrom" in page:
            assert page["nextFrom"] > page["from"]
            position = {"from_line": page["nextFrom"], "from_char": 0}
        else:
            break
    assert got == line
    assert calls == -(-len(line) // MAX_CHARS) == 5


def test_naive_agent_following_only_nextfrom_never_loops(
    default_engine, workspace_dir: Path
) -> None:
    """An agent that knows only OpenClaw's ``from`` still reaches the end."""
    write(workspace_dir, "MEMORY.md", "a\n" + "y" * 40_000 + "\n" + "z" * 40_000 + "\nb\n")
    seen, start = [], 1
    for _ in range(10):
        page = memory_get(default_engine, "MEMORY.md", start)
        seen.append(page["from"])
        if "nextFrom" not in page:
            break
        assert page["nextFrom"] > page["from"]
        start = page["nextFrom"]
    assert seen == [1, 2, 3, 4]


def test_read_page_pure_cases() -> None:
    assert file_lines("") == [] and file_lines("a\n") == ["a"] and file_lines("a\n\n") == ["a", ""]
    page = read_page("a\nb\n", 3)
    assert page.past_end and page.lines == 0 and not page.truncated
    assert not read_page("", 1).past_end, "line 1 of an empty file is its (empty) start"
    cut = read_page("abcdef\n", 1, max_chars=4)
    assert (cut.text, cut.next_char, cut.next_from, cut.cut_line_chars) == ("abcd", 4, None, 6)
    rest = read_page("abcdef\n", 1, from_char=4, max_chars=4)
    assert (rest.text, rest.truncated) == ("ef", False)
    assert read_page("abc\n", 1, from_char=99).text == "", "past the line: its empty remainder"
