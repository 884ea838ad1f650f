"""The keyword side's postings (``engine.index.keyword_index``) against FTS5 itself.

On every LoCoMo question (../shared/bench/locomo, the corpus the quality numbers
come from) the AND query and the pruned OR query a search runs return, from the
postings, exactly FTS5's exhaustive ``ORDER BY rank`` list: the same rows, in
the same order, with the same doubles, for the top 6, the top 24 and the whole
ranking (ties included). The postings follow edits (pending rows, then a fold
into the stored lists), an index made before them is searched through FTS5 until
its next sync writes them, and a word FTS5 splits in two goes to FTS5.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from engine.index import keyword_index
from engine.index.keyword_index import KeywordIndex, decode, encode
from engine.index.tokens import build_fts_query, query_tokens
from engine.search.query import parse_query
from engine.search.retrieve import QueryTerms, retrieve
from tests.bench import common
from tests.bench.locomo import build_conversation
from tests.bench.synthetic import HashEmbedder

CONVS = (0, 3, 6, 9)


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
        kw = engine.store.keyword_index()
        assert kw is not None and kw.ready()  # the cold index wrote the postings
        out.append((engine, conv))
    yield out
    for engine, _ in out:
        engine.close()


def _queries(store, text: str) -> list[tuple[list[str], bool]]:
    or_words = list(QueryTerms(store, parse_query(text)).or_words())
    return [(query_tokens(text), True), (or_words, False)]


def _same_as_fts5(store, words: list[str], require_all: bool, k: int) -> tuple[bool, int]:
    match = build_fts_query(" ".join(words), "AND" if require_all else "OR")
    if not match:
        return True, 0
    want = store.fts_search(match, k, ["memory"])
    got = store.keyword_search(words, k, ["memory"], require_all=require_all)
    assert got is not None, (words, require_all)
    return got == want, len(want)


def test_encoding_round_trips() -> None:
    import numpy as np

    for docs, tfs in (
        ([1, 2, 3, 70_000], [1, 5, 2, 1]),
        ([5, 2**40], [3, 2**20]),
        ([], []),
    ):
        d, f = decode(*encode(np.array(docs, dtype=np.int64), np.array(tfs, dtype=np.int64)))
        assert d.tolist() == docs and f.tolist() == tfs


def test_a_short_list_is_stored_raw_and_a_long_one_zlibd() -> None:
    import zlib

    import numpy as np

    # a term in three rows: one byte per gap and per frequency, after the width byte
    docs_blob, tfs_blob = encode(np.array([3, 9, 40]), np.array([1, 2, 1]))
    assert docs_blob == bytes([0x81, 3, 6, 31]) and tfs_blob == bytes([0x81, 1, 2, 1])
    # a common word: 5,000 rows in a row compress far below their 5,000 bytes
    many = np.arange(1, 5001)
    docs_blob, tfs_blob = encode(many, np.ones(5000, dtype=np.int64))
    assert docs_blob[0] == 1 and len(docs_blob) < 100
    assert zlib.decompress(docs_blob[1:]) == bytes([1]) * 5000
    # 16-bit gaps that do not compress (random) stay raw rather than grow
    rng = np.random.default_rng(7)
    sparse = np.cumsum(rng.integers(256, 60_000, size=200))
    docs_blob, _ = encode(sparse, np.ones(200, dtype=np.int64))
    assert docs_blob[0] == 0x82 and len(docs_blob) == 1 + 2 * 200
    assert decode(docs_blob, _)[0].tolist() == sparse.tolist()


def test_the_first_layouts_blobs_still_decode() -> None:
    """Layout 1 zlib'd every list in 16, 32 or 64 bits (tags 2, 4, 8)."""
    import zlib

    import numpy as np

    gaps = np.array([5, 1, 300], dtype=np.uint16).tobytes()
    tfs = np.array([1, 70_000, 2], dtype=np.uint32).tobytes()
    d, f = decode(bytes([2]) + zlib.compress(gaps, 1), bytes([4]) + zlib.compress(tfs, 1))
    assert d.tolist() == [5, 6, 306] and f.tolist() == [1, 70_000, 2]


@pytest.mark.slow  # the LoCoMo index
def test_top_k_is_fts5s_ranking_on_every_locomo_question(indexed) -> None:
    compared = rows = 0
    kinds = {True: 0, False: 0}
    for engine, conv in indexed:
        store = engine.store
        for q in conv.questions:
            for words, require_all in _queries(store, q.text):
                for k in (6, 24, 10**9):
                    same, n = _same_as_fts5(store, words, require_all, k)
                    assert same, (q.text, require_all, k)
                    compared += 1
                    rows += n
                    kinds[require_all] += n > 0
    # both kinds of query really matched rows, and whole rankings were compared
    assert compared > 4_000 and rows > 80_000 and min(kinds.values()) > 150


@pytest.mark.slow  # the LoCoMo index
def test_the_id_range_table_lookup_ranks_the_same(indexed, monkeypatch) -> None:
    """Large candidate sets look frequencies up in a table over the id range
    (``DENSE_FROM``); LoCoMo's are small, so force that path here."""
    monkeypatch.setattr(keyword_index, "DENSE_FROM", 0)
    compared = 0
    for engine, conv in indexed:
        for q in conv.questions[::2]:
            for words, require_all in _queries(engine.store, q.text):
                same, n = _same_as_fts5(engine.store, words, require_all, 24)
                assert same, (q.text, require_all)
                compared += n > 0
    assert compared > 300


@pytest.mark.slow  # the LoCoMo index
def test_retrieval_through_the_postings_equals_fts5s(indexed, monkeypatch) -> None:
    """Keyword hits, text ranks of vector candidates, the idf sum and each candidate's
    term frequencies and length (the calibrated side's tf and dl) of a hybrid
    retrieval, and an FTS-only retrieval: the same with and without the postings."""
    checked = words = 0
    for engine, conv in indexed:
        store = engine.store
        options = engine.default_options().with_(min_score=0.0)
        for q in conv.questions[::5]:
            for opts in (options, options.with_(mode="fts")):
                new = retrieve(store, engine.provider, q.text, opts)
                with monkeypatch.context() as m:
                    m.setattr(KeywordIndex, "ready", lambda self, state=None: False)
                    old = retrieve(store, engine.provider, q.text, opts)
                assert new.fts_hits == old.fts_hits, q.text
                assert new.fts_operator == old.fts_operator
                assert new.text_ranks == old.text_ranks, q.text
                assert new.query_idf_sum == old.query_idf_sum
                assert new.word_counts == old.word_counts, q.text
                assert new.chunk_lengths == old.chunk_lengths, q.text
                checked += 1
                words += sum(len(c) for c in new.word_counts.values())
    assert checked > 150 and words > 1000


@pytest.mark.slow  # the LoCoMo index
def test_ranks_of_chosen_rows_equal_fts5s(indexed) -> None:
    rng = random.Random(3)
    compared = 0
    for engine, conv in indexed:
        store = engine.store
        kw = store.keyword_index()
        ids = [r[0] for r in store.db.execute("select id from chunks")]
        for q in conv.questions[::3]:
            for words, require_all in _queries(store, q.text):
                match = build_fts_query(" ".join(words), "AND" if require_all else "OR")
                if not match:
                    continue
                ranking = dict(store.fts_search(match, 10**9, ["memory"]))
                chosen = rng.sample(ids, min(20, len(ids)))
                got = kw.ranks_of(words, chosen, require_all=require_all, state=store._state_key())
                assert got == {i: ranking[i] for i in chosen if i in ranking}
                compared += len(got or {})
    assert compared > 1_000


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _check_queries(store, queries: list[str]) -> int:
    matched = 0
    for text in queries:
        for words, require_all in _queries(store, text):
            for k in (3, 10**9):
                same, n = _same_as_fts5(store, words, require_all, k)
                assert same, (text, require_all, k)
                matched += n > 0
    return matched


def test_postings_follow_edits_pending_rows_and_the_fold(tmp_path, monkeypatch) -> None:
    ws = tmp_path / "ws"
    rng = random.Random(11)
    words = ["alpha", "beta", "gamma", "delta", "kappa", "lunch", "budget", "rollout"]
    words += ["atlas", "cut", "over", "the", "a", "of"]

    def note(n: int) -> str:
        return "\n".join(
            f"- {i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(3, 30)))
            for i in range(n)
        )

    for i in range(12):
        _write(ws / "memory" / f"2026-01-{i + 1:02d}.md", f"# Day {i}\n\n{note(40)}\n")
    engine = common.open_engine(ws, tmp_path / "state", None)
    engine.sync(reason="test")
    store = engine.store
    kw = store.keyword_index()
    assert kw is not None and kw.ready()
    assert store.db.scalar("select count(*) from kw_pending") == 0
    queries = ["alpha beta", "lunch budget the", "atlas cut-over", "kappa", "gamma of a", "zzz"]
    assert _check_queries(store, queries) > 6
    # edits the watcher reports: an append, a rewrite, a deletion, a new file
    day = ws / "memory" / "2026-01-03.md"
    day.write_text(day.read_text() + "\n- late: alpha alpha alpha kappa lunch\n")
    _write(ws / "memory" / "2026-01-05.md", f"# Rewritten\n\n{note(10)}\n")
    (ws / "memory" / "2026-01-12.md").unlink()  # the highest row ids: SQLite reuses them
    _write(ws / "memory" / "2026-02-01.md", f"# New\n\n{note(25)}\n")
    changed = ["memory/2026-01-03.md", "memory/2026-01-05.md", "memory/2026-01-12.md"]
    engine.sync(reason="edit", paths=[ws / p for p in [*changed, "memory/2026-02-01.md"]])
    assert kw.ready()
    assert store.db.scalar("select count(*) from kw_pending") > 0  # followed, not rebuilt
    assert store.db.scalar("select count(*) from kw_pending where tf = 0") > 0
    assert _check_queries(store, queries) > 6
    # the fold: pending rows written into the stored lists, same answers
    monkeypatch.setattr(keyword_index, "PENDING_MAX", 0)
    assert kw.compact() > 0
    assert store.db.scalar("select count(*) from kw_pending") == 0
    assert _check_queries(store, queries) > 6
    engine.close()


def _small_memory(tmp_path):
    """(workspace, engine) of two notes that share words, indexed FTS-only."""
    ws = tmp_path / "ws"
    _write(ws / "MEMORY.md", "# Memory\n\nThe atlas rollout needs a budget.\n")
    _write(ws / "memory" / "2026-01-01.md", "# Day\n\n- atlas budget approved\n- lunch\n")
    engine = common.open_engine(ws, tmp_path / "state", None)
    engine.sync(reason="test")
    return ws, engine


def test_the_postings_frequencies_are_the_counts_of_the_rows_text(tmp_path) -> None:
    """bm25's tf and dl from the postings equal ``token_counts`` of each row's text,
    on text whose terms take every path of the count (ASCII, accents, ``_``, a final
    sigma FTS5 folds to σ, a lone combining mark, an emoji newer than FTS5's tables)."""
    from engine.search.words import token_counts, word_terms

    ws = tmp_path / "ws"
    _write(ws / "MEMORY.md", "# Memory\n\nAtlas atlas ATLAS under_score budget\n")
    _write(ws / "memory" / "2026-01-01.md", "# Día\n\n- Café with Zoë 🤩 \u0301 ΟΔΟΣ ς\n")
    _write(ws / "memory" / "2026-01-02.md", "# Day\n\n- the atlas café budget, σ\n")
    engine = common.open_engine(ws, tmp_path / "state", None)
    engine.sync(reason="test")
    store = engine.store
    ids = [int(r[0]) for r in store.db.execute("select id from chunks")]
    rows = store.chunk_rows(ids)
    words = ["atlas", "Café", "σ", "budget", "zoe", "missing"]
    got = store.term_frequencies(words, ids)
    assert got is not None and len(rows) == 3
    for cid, row in rows.items():
        counts = token_counts(row.text)
        assert got.lengths[cid] == sum(counts.values()), row.text
        want = {w: counts[word_terms(w)[0]] for w in words if counts[word_terms(w)[0]]}
        assert got.counts.get(cid, {}) == want, row.text
    memory = next(cid for cid, r in rows.items() if r.path == "MEMORY.md")
    day1 = next(cid for cid, r in rows.items() if r.path.endswith("01.md"))
    assert got.counts[memory] == {"atlas": 3, "budget": 1}
    assert got.counts[day1] == {"Café": 1, "zoe": 1, "σ": 1}  # ς is σ (ΟΔΟΣ is "οδοσ")
    # a word FTS5 cuts in two has no single posting: the caller counts the text
    assert store.term_frequencies(["under_score"], ids) is None
    engine.close()


def test_the_postings_readiness_follows_every_write(tmp_path) -> None:
    """A store answers "are the postings in step" once per state of the file: another
    connection's write (a sync marking them stale) and this connection's own are both
    seen by the next search."""
    from engine.index.store import Store

    _ws, engine = _small_memory(tmp_path)
    store = engine.store
    assert store.keyword_search(["atlas"], 5, ["memory"]) is not None
    other = Store(store.db.path)
    other.defer_keyword_index()  # another process starts a large sync
    assert store.keyword_search(["atlas"], 5, ["memory"]) is None  # FTS5 answers
    other.maintain_keyword_index()  # ... and rebuilds the postings at its end
    assert store.keyword_search(["atlas"], 5, ["memory"]) is not None
    kw = store.keyword_index()
    assert kw is not None
    kw.mark_stale()  # this connection's own write (its data_version does not move)
    assert store.keyword_search(["atlas"], 5, ["memory"]) is None
    store.maintain_keyword_index()
    assert store.keyword_search(["atlas"], 5, ["memory"]) is not None
    other.close()
    engine.close()


def test_an_index_without_postings_uses_fts5_until_its_next_sync(tmp_path) -> None:
    ws, engine = _small_memory(tmp_path)
    store = engine.store
    # as an index written before the postings existed: no meta, empty tables
    store.db.execute("delete from meta where key = ?", (keyword_index.META_KEY,))
    for table in ("kw_postings", "kw_pending", "kw_lengths"):
        store.db.execute(f"delete from {table}")
    assert store.keyword_search(["atlas"], 5, ["memory"]) is None
    opts = engine.default_options().with_(mode="fts", min_score=0.0)
    hits = engine.search("atlas budget", opts).results
    assert len(hits) == 2  # answered by FTS5
    # writes while stale are not followed; the next sync rebuilds
    _write(ws / "memory" / "2026-01-02.md", "# Day\n\n- atlas again\n")
    engine.sync(reason="test", paths=[ws / "memory" / "2026-01-02.md"])
    kw = store.keyword_index()
    assert kw is not None and kw.ready()
    assert _check_queries(store, ["atlas", "atlas budget", "lunch"]) == 12  # 3 × AND/OR × k
    assert store.keyword_search(["atlas"], 5, ["memory"]) is not None
    engine.close()


def _first_layout(docs, tfs) -> tuple[bytes, bytes]:
    """Layout 1's blobs: each list zlib'd in 16 bits or more, tags 2/4/8."""
    import zlib

    import numpy as np

    def pack(values):
        top = int(values.max()) if len(values) else 0
        tag = 2 if top < 2**16 else 4 if top < 2**32 else 8
        dtype = {2: np.uint16, 4: np.uint32, 8: np.uint64}[tag]
        return bytes([tag]) + zlib.compress(values.astype(dtype).tobytes(), 1)

    return pack(np.diff(docs, prepend=0)), pack(tfs)


def test_an_index_of_the_first_layout_is_read_as_it_is_and_moves_on_at_a_fold(
    tmp_path,
) -> None:
    ws, engine = _small_memory(tmp_path)
    store = engine.store
    old = [
        (term, *_first_layout(*decode(d, f)))
        for term, d, f in store.db.execute("select term, docs, tfs from kw_postings")
    ]
    store.db.executemany(
        "update kw_postings set docs = ?, tfs = ? where term = ?", [(d, f, t) for t, d, f in old]
    )
    store.db.execute("update meta set value = '1' where key = ?", (keyword_index.META_KEY,))
    store.keyword_index()._snapshot = None  # type: ignore[union-attr]  # as a new process
    assert store.keyword_search(["atlas"], 5, ["memory"]) is not None  # not FTS5's fallback
    assert _check_queries(store, ["atlas", "atlas budget", "lunch"]) == 12
    # an edit goes to the pending rows; the fold rewrites those terms in layout 2
    _write(ws / "memory" / "2026-01-02.md", "# Day\n\n- atlas again\n")
    engine.sync(reason="test", paths=[ws / "memory" / "2026-01-02.md"])
    kw = store.keyword_index()
    assert kw is not None and kw.ready()
    assert kw.compact(force=True) > 0
    layout = store.db.scalar("select value from meta where key = ?", (keyword_index.META_KEY,))
    assert layout == keyword_index.LAYOUT == "2"
    tags = dict(store.db.execute("select term, substr(docs, 1, 1) from kw_postings"))
    assert tags["atlas"] == b"\x81" and tags["lunch"] == b"\x02"  # rewritten / as it was
    assert _check_queries(store, ["atlas", "atlas budget", "lunch", "again"]) == 16
    # a term no row holds any more leaves the postings at the next fold
    (ws / "memory" / "2026-01-01.md").unlink()
    engine.sync(reason="test")
    assert kw.compact(force=True) > 0
    terms = {t for (t,) in store.db.execute("select term from kw_postings")}
    assert "lunch" not in terms and {"atlas", "again", "budget"} <= terms
    assert _check_queries(store, ["atlas", "atlas budget", "again"]) == 12
    engine.close()


def test_a_word_fts5_splits_goes_to_fts5(tmp_path) -> None:
    ws = tmp_path / "ws"
    _write(ws / "MEMORY.md", "# Memory\n\nfoo_bar and foo bar.\n")
    engine = common.open_engine(ws, tmp_path / "state", None)
    engine.sync(reason="test")
    got = engine.store.keyword_index().top_k(  # type: ignore[union-attr]
        ["foo_bar"], 5, require_all=True, state=engine.store._state_key()
    )
    assert got.hits is None and got.reason == "a word of several tokens"
    assert engine.store.keyword_search(["foo_bar"], 5, ["memory"]) is None
    out = engine.search("foo_bar", engine.default_options().with_(mode="fts", min_score=0.0))
    assert len(out.results) == 1  # FTS5's phrase "foo bar"
    engine.close()
