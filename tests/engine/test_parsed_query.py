"""The parsed query: a search splits its text into words once, and the expressions
built from those words are the ones built from the text."""

from __future__ import annotations

import pytest

from engine.index import tokens
from engine.index.tokens import build_fts_query, query_tokens
from engine.search import query as query_module
from engine.search.query import match_expression, parse_query
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import FIXED_TODAY, write

TEXTS = [
    "FOO_bar baz-1",
    "cat cat medication",
    "  ",
    "",
    "-NOT * : col:umn",
    'say "hi"',
    "e\u0301te\u0301 cafe\u0301 café",
    "東京 タワー 서울",
    "Caroline's LGBTQ support group, 7 May 2023?",
]


@pytest.mark.parametrize("text", TEXTS)
def test_the_parsed_words_make_the_expressions_the_text_makes(text: str) -> None:
    parsed = parse_query(text)
    assert parsed.text == text
    assert list(parsed.words) == query_tokens(text)
    assert parsed.terms == tuple(dict.fromkeys(parsed.words))
    assert parsed.and_match == build_fts_query(text, "AND")
    for op in ("AND", "OR"):
        assert match_expression(parsed.words, op) == build_fts_query(text, op)
        assert match_expression(parsed.terms, op) == build_fts_query(" ".join(parsed.terms), op)


def test_a_hybrid_search_splits_its_query_once(make_engine, workspace_dir, monkeypatch) -> None:
    write(workspace_dir, "memory/2026-03-14.md", "# 2026-03-14\n\nMiso the cat takes a tablet.\n")
    write(workspace_dir, "memory/2026-03-15.md", "# 2026-03-15\n\nPostgres migration rehearsal.\n")
    eng = make_engine(provider=ConceptEmbedder(), **{"store.line_vectors": True})
    eng.sync()
    splits: list[str] = []
    real = tokens.query_tokens

    def counted(text: str) -> list[str]:
        splits.append(text)
        return real(text)

    monkeypatch.setattr(tokens, "query_tokens", counted)
    monkeypatch.setattr(query_module, "query_tokens", counted)
    opts = eng.default_options().with_(min_score=0.0)
    # AND finds nothing, so the OR fallback runs; the vector side's candidates get
    # their text ranks per row: every stage that reads the words
    out = eng.search("cat kitten medication", opts, today=FIXED_TODAY)
    assert out.mode == "hybrid" and out.retrieval.fts_operator == "OR"
    assert splits == ["cat kitten medication"]
