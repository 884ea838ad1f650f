"""The per-row bm25 (``Store.fts_ranks_of``) against FTS5's exhaustive ranking.

On every LoCoMo question (../shared/bench/locomo, the corpus the quality numbers
come from), for the AND query and the pruned OR query a hybrid search uses:
every chunk FTS5 ranks gets exactly FTS5's double, every other chunk none. A
hybrid retrieval through it returns the same keyword top-k and the same text
ranks as the old path that read a 1,000-row FTS5 ranking.
"""

from __future__ import annotations

import json
import random

import pytest

from engine.index.fts_bm25 import phrase_count, read_varint
from engine.index.tokens import build_fts_query, query_tokens
from engine.search.query import parse_query
from engine.search.retrieve import QueryTerms, retrieve
from tests.bench import common
from tests.bench.locomo import build_conversation
from tests.bench.synthetic import HashEmbedder

CONVS = (0, 4, 9)


@pytest.fixture(scope="module")
def locomo() -> list:
    try:
        path = common.data_dir("locomo") / "locomo10.json"
    except common.Skip:
        pytest.skip("LoCoMo data not found (../shared/bench/locomo or $MEMDECK_BENCH_DATA)")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def indexed(locomo, tmp_path_factory):
    out = []
    for ci in CONVS:
        conv = build_conversation(ci, locomo[ci])
        root = tmp_path_factory.mktemp(f"conv{ci}")
        for rel, text in conv.files.items():
            common.write_if_changed(root / "ws" / rel, text)
        engine = common.open_engine(root / "ws", root / "state", HashEmbedder())
        engine.sync(reason="test")
        assert engine.store.can_rank_rows()
        out.append((engine, conv))
    yield out
    for engine, _ in out:
        engine.close()


def test_read_varint_and_phrase_count() -> None:
    assert read_varint(bytes([0x05])) == (5, 1)
    assert read_varint(bytes([0x81, 0x00])) == (128, 2)
    assert read_varint(bytes([0xFF] * 8 + [0x01]))[1] == 9
    assert phrase_count(["a", "b", "a", "b", "a"], ["a"]) == 3
    assert phrase_count(["a", "a", "a"], ["a", "a"]) == 2
    assert phrase_count(["a", "b"], ["b", "a"]) == 0


@pytest.mark.slow  # the LoCoMo index
def test_per_row_bm25_is_fts5s_own_on_every_locomo_question(indexed) -> None:
    compared = matched_none = 0
    rng = random.Random(7)
    for engine, conv in indexed:
        store = engine.store
        all_ids = [r[0] for r in store.db.execute("select id from chunks")]
        for q in conv.questions:
            queries = [(query_tokens(q.text), "AND")]
            queries.append((list(QueryTerms(store, parse_query(q.text)).or_words()), "OR"))
            for words, op in queries:
                match = build_fts_query(" ".join(words), op)  # type: ignore[arg-type]
                if not match:
                    continue
                ranking = store.fts_search(match, 10**9, ["memory"])
                # the top 30 (a hybrid's candidates), a sample of the rest, any rows
                rest = ranking[30:]
                chosen = ranking[:30] + rng.sample(rest, min(10, len(rest)))
                ids = [i for i, _ in chosen] + rng.sample(all_ids, min(5, len(all_ids)))
                want = {i: v for i, v in ranking if i in set(ids)}
                got = store.fts_ranks_of(words, ids, require_all=op == "AND")
                assert got == want, (q.text, op)  # same doubles, same rows
                compared += len(chosen)
                exhaustive = ranking
                matched_none += not exhaustive
    assert compared > 5_000 and matched_none > 50  # both kinds of query really ran


@pytest.mark.slow  # the LoCoMo index
def test_hybrid_retrieval_matches_the_long_window_path(indexed, monkeypatch) -> None:
    checked = beyond = 0
    for engine, conv in indexed:
        store = engine.store
        options = engine.default_options().with_(min_score=0.0, max_results=6)
        for q in conv.questions[::4]:
            new = retrieve(store, engine.provider, q.text, options)
            with monkeypatch.context() as m:
                m.setattr(type(store), "can_rank_rows", lambda self: False)
                old = retrieve(store, engine.provider, q.text, options)
            assert new.fts_hits == old.fts_hits, q.text
            if new.fts_query:
                top = store.fts_search(new.fts_query, options.candidates, ["memory"])
                assert new.fts_hits == [(i, v * new.bm25_idf_scale) for i, v in top]
            assert new.vector_hits == old.vector_hits
            # LoCoMo conversations are under 1,000 chunks: the old window saw every match
            assert new.text_ranks == old.text_ranks, q.text
            assert new.cosines == old.cosines
            checked += 1
            beyond += len(new.text_ranks) > len(new.fts_hits)
    assert checked > 100 and beyond > 20  # vector candidates really got text ranks
