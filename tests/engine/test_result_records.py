"""The typed result records and the JSON they print.

``to_json()`` is the wire format of ``memdeck … --json``, the agent tools and
the MCP server, so these tests pin its keys and their order; and the
``Source:`` footer is built by ``search_hit`` alone, for the builtin index and
for qmd hits alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.qmd.backend import QmdBackend
from engine.qmd.config import QmdSettings
from engine.qmd.results import QmdHit
from engine.search.results import (
    BackendFallback,
    SearchAnswer,
    SearchUnavailable,
    citation,
    search_hit,
    snippet,
)
from engine.tools import memory_get, memory_search, search_memory
from engine.workspace.get_answer import MemoryGetAnswer
from engine.workspace.paging import Page
from tests.engine_fixtures import write


def test_search_hit_builds_the_source_footer_once() -> None:
    hit = search_hit("memory/2026-03-01.md", 3, 7, 0.5, "Postgres on 5432", "memory", cite=True)
    assert hit.citation == "memory/2026-03-01.md#L3-L7"
    assert hit.snippet == "Postgres on 5432\n\nSource: memory/2026-03-01.md#L3-L7"
    assert hit.excerpt == "Postgres on 5432"
    assert list(hit.to_json()) == [
        "path",
        "startLine",
        "endLine",
        "score",
        "snippet",
        "source",
        "citation",
    ]
    plain = search_hit("MEMORY.md", 2, 2, 0.4, "text", "memory", cite=False)
    assert plain.snippet == plain.excerpt == "text" and "citation" not in plain.to_json()
    assert citation("MEMORY.md", 2, 2) == "MEMORY.md#L2"
    assert snippet("é" * 800) == "é" * 700


def test_answer_json_keeps_openclaw_keys_and_leaves_unset_extras_out() -> None:
    hit = search_hit("MEMORY.md", 1, 2, 0.9, "x", "memory", cite=False, title="")
    answer = SearchAnswer((hit,), "none", None, None, "auto", "fts", "builtin")
    data = answer.to_json()
    assert list(data) == [
        "results",
        "provider",
        "model",
        "fallback",
        "citations",
        "mode",
        "backend",
    ]
    assert data["results"][0] == {
        "path": "MEMORY.md",
        "startLine": 1,
        "endLine": 2,
        "score": 0.9,
        "snippet": "x",
        "source": "memory",
    }
    fell_back = SearchAnswer(
        (),
        "none",
        None,
        None,
        "auto",
        "fts",
        "builtin",
        backend_fallback=BackendFallback("qmd", "builtin", "qmd timed out"),
    )
    assert fell_back.to_json()["backendFallback"] == {
        "from": "qmd",
        "to": "builtin",
        "reason": "qmd timed out",
    }
    off = SearchUnavailable(error="memory tools are disabled", action="enable them")
    assert off.to_json() == {
        "results": [],
        "disabled": True,
        "error": "memory tools are disabled",
        "action": "enable them",
    }
    json.dumps(fell_back.to_json())  # plain JSON all the way down


def test_qmd_hits_use_the_same_footer_and_keep_their_extra_keys(
    make_engine, workspace_dir: Path
) -> None:
    write(workspace_dir, "MEMORY.md", "# Memory\n\nPostgres on 5432.\n")
    eng = make_engine(provider=None)
    backend = QmdBackend(eng.settings, eng.workspace, qmd_settings=QmdSettings(), embed_model=None)
    try:
        root = next(c for c in backend.collections if c.path == eng.workspace.root)
        hit = QmdHit("#abc", 0.5, root.name, "MEMORY.md", 3, "Memory", None, "Postgres", 3, 3)
        (item,) = backend.map_hits([hit], citations=True)
        assert (item.path, item.citation) == ("MEMORY.md", "MEMORY.md#L3")
        assert item.snippet == "Postgres\n\nSource: MEMORY.md#L3"
        assert (item.collection, item.docid, item.title) == (root.name, "#abc", "Memory")
        assert list(item.to_json())[-4:] == ["collection", "docid", "title", "citation"]
    finally:
        backend.close()


def test_memory_search_is_the_typed_answer_as_json(make_engine, workspace_dir: Path) -> None:
    write(workspace_dir, "MEMORY.md", "# Memory\n\nPostgres listens on 5432.\n")
    write(workspace_dir, "memory/2026-03-01.md", "Booked the train to Porto.\n")
    eng = make_engine(provider=None)
    eng.sync()
    typed = search_memory(eng, "postgres", min_score=0.0)
    assert isinstance(typed, SearchAnswer)
    assert [r.path for r in typed.results] == ["MEMORY.md"] and typed.mode == "fts"
    assert memory_search(eng, "postgres", min_score=0.0) == typed.to_json()


def test_memory_get_answer_keys(make_engine, workspace_dir: Path) -> None:
    page = Page("a\nb", 2, 0, 2, 10, 4, None, None, None, 1)
    data = MemoryGetAnswer.of_page("MEMORY.md", page).to_json()
    assert list(data) == ["text", "path", "from", "lines", "truncated", "nextFrom"]
    assert data["truncated"] is True and data["nextFrom"] == 4
    assert MemoryGetAnswer.refused("x.md", "nope").to_json() == {
        "text": "",
        "path": "x.md",
        "error": "nope",
    }
    write(workspace_dir, "MEMORY.md", "one\ntwo\n")
    eng = make_engine(provider=None)
    got = memory_get(eng, "MEMORY.md")
    assert got == {"text": "one\ntwo", "path": "MEMORY.md", "from": 1, "lines": 2}


@pytest.mark.parametrize("disabled", [True, False])
def test_memory_get_refusal_marks_disabled_only_when_the_tools_are_off(disabled: bool) -> None:
    out = MemoryGetAnswer.refused("a.md", "why", disabled=disabled).to_json()
    assert ("disabled" in out) is disabled
