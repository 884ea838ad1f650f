"""The pure parts of the QMD backend: qmd's JSON and text output, snippets, limits, argv."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.qmd.backend import search_args
from engine.qmd.collections import Collection, Listed, parse_collection_list, plan
from engine.qmd.results import (
    clamp_snippets,
    parse_qmd_uri,
    parse_search_output,
    snippet_lines,
)
from engine.qmd.runner import QmdError

# Verbatim qmd 2.8.3 output (collection list, search --json).
COLLECTION_LIST = """Collections (2):

memory-root (qmd://memory-root/)
  Pattern:  MEMORY.md
  Files:    1
  Updated:  3s ago

memory-dir (qmd://memory-dir/)
  Pattern:  memory/**/*.md
  Files:    7
  Updated:  1m ago

"""
SNIPPET = "@@ -2,4 @@ (1 before, 0 after)\n\nAlpha team ships the Zebra migration.\nMore lines.\n"
HIT = {
    "docid": "#2afe5e",
    "score": 0.73,
    "file": "qmd://mem/Project Notes/Team_A (v2).md",
    "line": 3,
    "title": "Team A",
    "snippet": SNIPPET,
}
SEARCH_JSON = json.dumps([HIT], indent=2) + "\n"


def test_snippet_header_gives_the_line_range_of_the_text_shown():
    start, end, body = snippet_lines(
        "@@ -2,4 @@ (1 before, 0 after)\n\nAlpha team ships.\nMore lines.\n"
    )
    # header says lines 2-5; the blank first and last lines are trimmed off
    assert (start, end) == (3, 4)
    assert body == "Alpha team ships.\nMore lines."


def test_snippet_header_without_count_and_without_header():
    assert snippet_lines("@@ -7 @@\nonly line") == (7, 7, "only line")
    assert snippet_lines("no header\nsecond", best_line=12) == (12, 13, "no header\nsecond")
    assert snippet_lines("", best_line=None) == (1, 1, "")


def test_snippet_header_count_limits_the_body():
    start, end, body = snippet_lines("@@ -10,2 @@\na\nb\nc\n")
    assert (start, end, body) == (10, 11, "a\nb")


def test_parse_search_output_real_shape():
    [hit] = parse_search_output(SEARCH_JSON, "QMD Warning: no GPU acceleration")
    assert hit.collection == "mem"
    assert hit.rel_path == "Project Notes/Team_A (v2).md"
    assert (hit.start_line, hit.end_line) == (3, 4)
    assert hit.score == pytest.approx(0.73)
    assert hit.docid == "#2afe5e"
    assert hit.title == "Team A"
    assert hit.line == 3


def test_parse_search_output_tolerates_noise_around_the_array():
    noisy = "Loading index...\n" + SEARCH_JSON + "done\n"
    assert len(parse_search_output(noisy)) == 1


@pytest.mark.parametrize(
    ("stdout", "stderr"),
    [
        ("[]", ""),
        ("[]\n", "warning: something"),
        ("No results found.\n", ""),
        ("", "No results found"),
    ],
)
def test_empty_results(stdout, stderr):
    assert parse_search_output(stdout, stderr) == []


@pytest.mark.parametrize(
    "stdout",
    ["", "Segmentation fault", '{"results": []}', '[{"docid": "#1"}]', '[{"file": "notes/a.md"}]'],
)
def test_garbage_is_an_output_error(stdout):
    with pytest.raises(QmdError) as info:
        parse_search_output(stdout, "")
    assert info.value.kind == "output"


def test_qmd_uri():
    assert parse_qmd_uri("qmd://notes/a/b.md?index=x") == ("notes", "a/b.md")
    assert parse_qmd_uri("qmd://notes/q?index.md") == ("notes", "q?index.md")
    with pytest.raises(ValueError):
        parse_qmd_uri("qmd://notes")
    with pytest.raises(ValueError):
        parse_qmd_uri("/abs/path.md")


def test_non_numeric_score_becomes_zero():
    out = '[{"file": "qmd://c/a.md", "score": "high", "snippet": "x"}]'
    [hit] = parse_search_output(out)
    assert hit.score == 0.0


def test_clamp_snippets_per_item_and_in_total():
    texts = ["a" * 10, "b" * 10, "c" * 10]
    assert clamp_snippets(texts, max_snippet=6, max_total=100) == ["a" * 6, "b" * 6, "c" * 6]
    assert clamp_snippets(texts, max_snippet=10, max_total=15) == ["a" * 10, "b" * 5]
    assert clamp_snippets(texts, max_snippet=10, max_total=20) == ["a" * 10, "b" * 10]


def test_parse_collection_list():
    listed = parse_collection_list(COLLECTION_LIST)
    assert listed == [Listed("memory-root", "MEMORY.md"), Listed("memory-dir", "memory/**/*.md")]
    assert parse_collection_list("No collections found. Run 'qmd collection add .'") == []


def test_plan_keeps_matching_replaces_changed_and_drops_strays():
    ws = Path("/ws")
    desired = [
        Collection("memory-root", ws, "MEMORY.md", "memory"),
        Collection("notes", Path("/notes"), "**/*.md"),
        Collection("docs", Path("/docs"), "**/*.md"),
    ]
    listed = [
        Listed("memory-root", "MEMORY.md", ws),  # identical: kept
        Listed("notes", "*.md", Path("/notes")),  # pattern changed: remove + add
        Listed("stray", "**/*.md", Path("/elsewhere")),  # not wanted: removed
    ]
    remove, add = plan(desired, listed)
    assert remove == ["notes", "stray"]
    assert [c.name for c in add] == ["notes", "docs"]


def test_search_args_always_put_the_query_after_double_dash():
    args = search_args("search", 6, ["memory-root", "notes"], "-rf --json", None)
    assert args == [
        "search",
        "--json",
        "-n",
        "6",
        "-c",
        "memory-root",
        "-c",
        "notes",
        "--",
        "-rf --json",
    ]


def test_vsearch_with_a_local_model_is_a_structured_vec_query():
    args = search_args("vsearch", 3, ["c"], 'which "database\nport', Path("/m.gguf"))
    assert args[:5] == ["query", "--json", "--no-rerank", "-n", "3"]
    assert args[-2:] == ["--", "vec: which database port"]
    # without a local model qmd's own vsearch runs
    assert search_args("vsearch", 3, ["c"], "q", None)[0] == "vsearch"
