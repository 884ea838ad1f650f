"""``store.fts.tokenizer``: OpenClaw's ``unicode61``/``trigram`` and memdeck's ``porter``.

``porter`` (FTS5's ``porter unicode61``) stems English words, so "visiting" finds
"visited". A change of the setting rebuilds the index (the tokenizer is part of
the fingerprint); until then the table's own tokenizer is used. The ``openclaw``
ranking profile keeps OpenClaw's tokenizer whatever memdeck's index uses.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config.loader import ConfigError, load_settings
from engine.core import Engine
from engine.index.store import NewChunk, Store, table_tokenizer
from engine.search.model import SearchOptions
from tests.engine_fixtures import FIXED_TODAY, write

FTS = SearchOptions(mode="fts", min_score=0.0)
VISIT = "- Melanie visited the dentist on Tuesday and booked another cleaning.\n"
OTHER = "- Caroline painted a sunrise over the lake for her art class.\n"


def _config(home: Path, block: str) -> dict[str, str]:
    (home / "openclaw.json").write_text(block, encoding="utf-8")
    return {"OPENCLAW_STATE_DIR": str(home), "HOME": str(home)}


def _paths(engine: Engine, query: str) -> list[str]:
    return [c.path for c in engine.search(query, FTS, today=FIXED_TODAY).results]


def _table_sql(store: Store) -> str:
    return str(store.db.scalar("select sql from sqlite_master where name = 'chunks_fts'"))


def test_porter_is_read_from_the_seed_layout(tmp_path: Path) -> None:
    env = _config(
        tmp_path, '{agents: {defaults: {memorySearch: {store: {fts: {tokenizer: "porter"}}}}}}'
    )
    settings = load_settings(env=env)
    assert settings.memory_search.store.fts_tokenizer == "porter"
    # the seed layout is refused as a whole by 2026.9 (moved), not for the value
    assert not [r for r in settings.openclaw_rejections if "tokenizer" in r]


def test_porter_in_the_2026_9_layout_is_named_as_what_openclaw_refuses(tmp_path: Path) -> None:
    env = _config(tmp_path, '{memory: {search: {store: {fts: {tokenizer: "porter"}}}}}')
    settings = load_settings(env=env)
    assert settings.memory_search.store.fts_tokenizer == "porter"  # memdeck honours it
    refused = [r for r in settings.openclaw_rejections if "tokenizer" in r]
    assert len(refused) == 1
    assert refused[0].endswith(
        'would refuse this file: memory.search.store.fts.tokenizer: "porter" is not a'
        ' 2026.9 tokenizer (it accepts "unicode61" or "trigram"; "porter" is a memdeck'
        " extension)"
    )
    trigram = load_settings(
        env=_config(tmp_path, '{memory: {search: {store: {fts: {tokenizer: "trigram"}}}}}')
    )
    assert not [r for r in trigram.openclaw_rejections if "tokenizer" in r]


def test_an_unknown_tokenizer_lists_the_three_values(tmp_path: Path) -> None:
    env = _config(
        tmp_path, '{agents: {defaults: {memorySearch: {store: {fts: {tokenizer: "snowball"}}}}}}'
    )
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert 'expected one of "unicode61", "trigram", "porter"' in str(info.value)
    assert "store.fts.tokenizer" in str(info.value)


@pytest.mark.parametrize(
    ("sql", "name"),
    [
        ("create virtual table t using fts5(text, tokenize='porter unicode61')", "porter"),
        ('create virtual table t using fts5(text, tokenize = "trigram", content=x)', "trigram"),
        ("create virtual table t using fts5(text, tokenize='unicode61')", "unicode61"),
        ("create virtual table t using fts5(text, id unindexed)", "unicode61"),
    ],
)
def test_the_table_names_its_tokenizer(sql: str, name: str) -> None:
    assert table_tokenizer(sql) == name


def test_a_changed_tokenizer_rebuilds_the_index_and_stems(
    make_engine: Callable[..., Engine], workspace_dir: Path
) -> None:
    write(workspace_dir, "memory/2026-03-01.md", "# 2026-03-01\n\n" + VISIT)
    write(workspace_dir, "memory/2026-03-02.md", "# 2026-03-02\n\n" + OTHER)
    plain = make_engine()
    plain.sync(reason="test")
    assert plain.store.fts_tokenizer == "unicode61"
    assert _paths(plain, "visiting dentists") == []  # no stemming: no match
    build = plain.store.get_meta("build")
    plain.close()

    stemmed = make_engine(**{"store.fts_tokenizer": "porter"})
    # opened on the old file: the table's tokenizer is used until the rebuild
    assert stemmed.store.fts_tokenizer == "unicode61"
    assert stemmed.needs_full_reindex()
    done = stemmed.sync(reason="test")
    assert done.files_indexed == 2  # a full rebuild, not an incremental sync
    assert stemmed.store.get_meta("build") != build
    assert "porter unicode61" in _table_sql(stemmed.store)
    assert stemmed.store.fts_tokenizer == "porter"
    assert stemmed.status().fts_tokenizer == "porter"
    assert _paths(stemmed, "visiting dentists") == ["memory/2026-03-01.md"]
    assert _paths(stemmed, "painting") == ["memory/2026-03-02.md"]
    # the openclaw profile keeps OpenClaw's own tokenizer (unicode61): no stemming there
    profile = stemmed.openclaw_searcher()
    assert [r.path for r in profile.outcome("visiting dentists").results] == []
    assert [r.path for r in profile.outcome("visited").results] == ["memory/2026-03-01.md"]
    stemmed.close()

    back = make_engine()
    back.sync(reason="test")
    assert "porter" not in _table_sql(back.store)
    assert _paths(back, "visiting dentists") == []


def test_porter_bm25_of_chosen_rows_equals_fts5(tmp_path: Path) -> None:
    """``fts_ranks_of`` (the per-row bm25 of vector candidates) and the postings'
    ranking under porter give FTS5's own ranks: same tokens, same doubles."""
    store = Store(tmp_path / "index.sqlite", fts_tokenizer="porter")
    texts = [
        "Melanie visited the dentist and visits again next week",
        "the dentists were visiting schools",
        "Caroline paints sunsets; painting calms her",
        "a visit to the tooth doctor",
        "nothing about it",
    ]
    store.replace_file(
        path="memory/a.md",
        source="memory",
        file_hash="f",
        mtime=1.0,
        size=1,
        model="m",
        chunks=[NewChunk(i + 1, i + 1, f"h{i}", t, None) for i, t in enumerate(texts)],
    )
    assert store.can_rank_rows()
    store.maintain_keyword_index()  # memdeck's postings, tokenized as the table is
    for words, operator in ((["visiting", "dentist"], "AND"), (["visits", "painted"], "OR")):
        match = f" {operator} ".join(f'"{w}"' for w in words)
        ranked = store.fts_search(match, 50, ["memory"])
        expected = dict(ranked)
        assert expected  # stemming made these match
        got = store.fts_ranks_of(words, [*expected, 5], require_all=operator == "AND")
        assert got == expected
        postings = store.keyword_search(words, 50, ["memory"], require_all=operator == "AND")
        assert postings == ranked
    store.close()
