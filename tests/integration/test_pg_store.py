"""The PostgreSQL store answers like the SQLite store on the same inputs.

Real server (``tests.pg_fixtures``), real SQLite/FTS5 beside it: the same files
go into both, then every read operation is compared. Chunk ids differ between
the stores, so answers are compared by (path, start line).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.index.line_codec import LineMatrix
from engine.index.pg_store import PgStore, PgStoreError, mask_dsn, scrub
from engine.index.store import NewChunk, Store

psycopg = pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")

TEXTS = {
    "memory/2026-01-02.md": [
        "Went to the dentist on Tuesday; the dentist said floss more.",
        "Café meeting with Zoë about the Atlas launch plan and the budget.",
        "Grocery list: apples, bread, coffee beans, oat milk.",
    ],
    "memory/2026-01-03.md": [
        "Atlas launch slipped a week: the vendor_api key expired again.",
        "Trip to the lake with Sam 🤩; we saw herons 🧘\u200d♀️ and a kingfisher.",
    ],
    "MEMORY.md": [
        "Sam prefers tea over coffee. Zoe is the Atlas project lead.",
        "The budget for Atlas is 40k; the launch is planned for March.",
        "私は東京で寿司を食べました。 Tokyo trip notes.",
    ],
}
QUERIES = [
    '"dentist"', '"atlas"', '"Atlas" AND "launch"', '"zoe"', '"cafe" OR "lake"',
    '"vendor_api"', '"coffee" OR "tea" OR "budget"', '"the"', '"nothing"', '"tokyo"',
    '"Sam" OR "sam" OR "lake"', '"Atlas" AND "atlas" AND "launch"',
]  # fmt: skip


def _vec(seed: int, dims: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


def _fill(store: Store | PgStore) -> None:
    store.set_dims(8)
    seed = 0
    for path, texts in TEXTS.items():
        chunks = []
        for i, text in enumerate(texts):
            seed += 1
            chunks.append(NewChunk(i * 10 + 1, i * 10 + 9, f"h{seed}", text, _vec(seed)))
        store.replace_file(
            path=path, source="memory", file_hash="f" + path, mtime=100.0 + seed, size=len(path),
            model="m", chunks=chunks,
        )  # fmt: skip


def _by_place(
    store: Store | PgStore, hits: list[tuple[int, float]]
) -> list[tuple[str, int, float]]:
    rows = store.chunk_rows([i for i, _ in hits])
    return [(rows[i].path, rows[i].start_line, round(v, 9)) for i, v in hits]


@pytest.fixture
def both(tmp_path: Path, pg_dsn: str):
    lite = Store(tmp_path / "index.sqlite")
    pg = PgStore(pg_dsn, "agent-a")
    _fill(lite)
    _fill(pg)
    yield lite, pg
    lite.close()
    pg.close()


def test_files_counts_meta_and_cache_match(both) -> None:
    lite, pg = both
    assert pg.files() == lite.files()
    assert pg.counts() == lite.counts() == {
        "files": 3, "chunks": 8, "embedded": 8, "cache_entries": 0,
    }  # fmt: skip
    assert pg.dims == lite.dims == 8
    for st in (lite, pg):
        st.set_fingerprint({"provider": "p", "dims": 8})
        st.cache_put("p", "m", "k", {"a": _vec(1), "b": _vec(2)})
    assert pg.fingerprint() == lite.fingerprint() == {"provider": "p", "dims": 8}
    got = pg.cache_get("p", "m", "k", ["a", "b", "zz"])
    assert sorted(got) == ["a", "b"] and np.allclose(got["b"], _vec(2))
    assert pg.cache_prune(1) == lite.cache_prune(1) == 1
    assert pg.counts()["cache_entries"] == 1
    paths = ["MEMORY.md", "memory/2026-01-03.md", "missing.md"]
    assert pg.file_mtimes(paths) == lite.file_mtimes(paths)


def test_keyword_ranks_are_fts5_bm25(both) -> None:
    """Same hits, same order and the same bm25 rank (to 1e-9) as FTS5."""
    lite, pg = both
    for q in QUERIES:
        want = _by_place(lite, lite.fts_search(q, 20, ["memory"]))
        got = _by_place(pg, pg.fts_search(q, 20, ["memory"]))
        assert [g[:2] for g in got] == [w[:2] for w in want], q
        assert np.allclose([g[2] for g in got], [w[2] for w in want], rtol=1e-6, atol=1e-12), q
    assert _by_place(pg, pg.fts_search('"dentist"', 5, ["memory"]))[0][:2] == (
        "memory/2026-01-02.md", 1,
    )  # fmt: skip
    assert pg.fts_search('"dentist"', 5, ["sessions"]) == []
    assert pg.fts_row_count() == lite.fts_row_count() == 8
    words = ["the", "Atlas", "zoe", "nothing"]
    assert pg.term_doc_counts(words) == lite.term_doc_counts(words)
    before = pg.fts_search('"atlas"', 20, ["memory"])
    with psycopg.connect(pg.dsn, autocommit=True) as conn:  # a space from before the stats
        conn.execute("delete from memdeck_space_stats")
    assert pg.fts_search('"atlas"', 20, ["memory"]) == before and pg.fts_row_count() == 8


def test_vector_search_matches_exact_cosine(both) -> None:
    lite, pg = both
    for seed in (3, 5, 100):
        q = _vec(seed)
        want = _by_place(lite, lite.vector_search(q, 5, ["memory"], path="numpy"))
        got = _by_place(pg, pg.vector_search(q, 5, ["memory"]))
        assert [g[:2] for g in got] == [w[:2] for w in want]
        assert np.allclose([g[2] for g in got], [w[2] for w in want], atol=1e-5)
    ids = [i for i, _ in pg.vector_search(_vec(3), 3, ["memory"])]
    vecs = pg.chunk_vectors(ids)
    assert set(vecs) == set(ids) and all(v.shape == (8,) for v in vecs.values())


def test_replace_remove_and_meta_updates(both) -> None:
    lite, pg = both
    for st in (lite, pg):
        st.replace_file(
            path="MEMORY.md", source="memory", file_hash="new", mtime=5.0, size=3, model="m",
            chunks=[NewChunk(1, 2, "hx", "Only the heron remains.", _vec(50))],
        )  # fmt: skip
        st.replace_file_meta("memory/2026-01-02.md", 77.0, 99)
        assert st.remove_files(["memory/2026-01-03.md"]) == 1
    assert pg.files() == lite.files()
    assert pg.files()["memory/2026-01-02.md"].mtime == 77.0
    assert pg.counts() == lite.counts() and pg.counts()["chunks"] == 4
    assert _by_place(pg, pg.fts_search('"heron"', 5, ["memory"]))[0][:2] == ("MEMORY.md", 1)
    assert pg.fts_search('"kingfisher"', 5, ["memory"]) == []
    assert pg.integrity_check() == "ok"
    for q in QUERIES:  # bm25's N and average length followed the changes
        want = _by_place(lite, lite.fts_search(q, 20, ["memory"]))
        got = _by_place(pg, pg.fts_search(q, 20, ["memory"]))
        assert [g[:2] for g in got] == [w[:2] for w in want], q
        assert np.allclose([g[2] for g in got], [w[2] for w in want], rtol=1e-6, atol=1e-12), q
    assert pg.fts_row_count() == lite.fts_row_count() == 4


def test_namespaces_do_not_see_each_other(both, pg_dsn: str) -> None:
    _lite, pg = both
    other = PgStore(pg_dsn, "agent-b")
    try:
        assert other.files() == {} and other.counts()["chunks"] == 0
        assert other.fts_search('"atlas"', 5, ["memory"]) == []
        assert other.vector_search(_vec(3), 5, ["memory"]) == []
        assert other.get_meta("dims") is None
        assert len(pg.fts_search('"atlas"', 5, ["memory"])) == 4  # its own four Atlas chunks
    finally:
        other.close()


def test_new_generation_switches_in_one_step(both, pg_dsn: str) -> None:
    _lite, pg = both
    reader = PgStore(pg_dsn, "agent-a")
    build = pg.new_generation()
    try:
        build.set_dims(8)
        build.replace_file(
            path="new.md", source="memory", file_hash="n", mtime=1.0, size=1, model="m",
            chunks=[NewChunk(1, 1, "n1", "A brand new atlas.", _vec(9))],
        )  # fmt: skip
        assert set(reader.files()) == set(TEXTS)  # not published: readers see the old build
        pg.publish(build)
        assert set(reader.files()) == {"new.md"}
        assert reader.counts()["chunks"] == 1
        with psycopg.connect(pg_dsn) as conn:  # the old generation's rows are gone
            spaces = conn.execute("select count(distinct space) from memdeck_chunks").fetchone()
        assert spaces == (1,)
    finally:
        build.close()
        reader.close()


def test_password_never_in_errors(pg_server) -> None:
    secret = "Sup3r-Secret-pw"
    url = f"postgresql://postgres:{secret}@127.0.0.1:{pg_server.port}/no_such_db"
    with pytest.raises(PgStoreError) as err:
        PgStore(url, "x", connect_timeout=5)
    assert secret not in str(err.value)
    assert "no_such_db" in str(err.value) and "***" in str(err.value)
    kv = f"host=127.0.0.1 port={pg_server.port} dbname=nope user=postgres password={secret}"
    with pytest.raises(PgStoreError) as err2:
        PgStore(kv, "x", connect_timeout=5)
    assert secret not in str(err2.value) and "password=***" in str(err2.value)
    assert mask_dsn("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db"
    assert mask_dsn("host=h password='a b' user=u") == "host=h password=*** user=u"
    # an "@" left unencoded in a URI's password, a space escaped in a key=value one
    at = "postgresql://u:Wrong@Pw123@127.0.0.1:5432/db"
    assert mask_dsn(at) == "postgresql://u:***@127.0.0.1:5432/db"
    said = scrub(f"failed to resolve host 'Pw123@127.0.0.1' ({at})", at)
    assert "Pw123" not in said and "Wrong" not in said, said
    assert mask_dsn(r"host=h password=Esc\'d\ Pw user=u") == "host=h password=*** user=u"


def test_line_vectors_match_sqlite(both) -> None:
    lite, pg = both
    for st in (lite, pg):
        missing = sorted(st.chunks_without_line_vectors("m1"))
        assert len(missing) == 8 and missing[0][0] == "h1"
        st.put_line_vectors(
            "m1",
            {
                "h1": LineMatrix(np.ones((2, 8), np.float32), (1, 2)),
                "h2": LineMatrix(np.eye(3, 8, dtype=np.float32), (3, 4, 5)),
            },
        )
        assert len(st.chunks_without_line_vectors("m1")) == 6
        assert st.count_chunks_without_line_vectors("m1") == 6
        # pages in hash order: past ``after``, at most ``limit``
        everything = [h for h, _ in st.chunks_without_line_vectors("m1")]
        assert everything == sorted(everything)
        first = st.chunks_without_line_vectors("m1", limit=4)
        rest = st.chunks_without_line_vectors("m1", after=first[-1][0], limit=4)
        assert [h for h, _ in first + rest] == everything and len(rest) == 2
    got, want = pg.line_vectors(["h1", "h2", "zz"], "m1"), lite.line_vectors(["h1", "h2"], "m1")
    assert sorted(got) == sorted(want) == ["h1", "h2"]
    assert all(np.array_equal(got[h], want[h]) for h in got) and got["h2"].shape == (3, 8)
    ids = [i for i, _ in pg.fts_search('"dentist"', 5, ["memory"])]
    assert set(pg.chunk_hashes(ids).values()) == {"h1"}
    for st in (lite, pg):
        # units to reuse: none gone from the index yet; those of a file's chunks on asking
        assert st.orphan_line_units("m1") == {}
        reusable = st.orphan_line_units("m1", ["memory/2026-01-02.md", "memory/nowhere.md"])
        assert sorted(reusable) == [1, 2, 3, 4, 5]
        assert np.array_equal(reusable[4], np.eye(3, 8, dtype=np.float32)[1])
        assert st.orphan_line_units("m2", ["memory/2026-01-02.md"]) == {}
    for st in (lite, pg):
        st.remove_files(["memory/2026-01-02.md"])  # h1..h3 leave the index
        assert sorted(st.orphan_line_units("m1")) == [1, 2, 3, 4, 5]
        assert st.prune_line_vectors() == 2
        assert st.line_vectors(["h1", "h2"], "m1") == {}


def test_both_stores_implement_the_index_store_interface(pg_dsn: str, tmp_path) -> None:
    """mypy checks the signatures where a store is used as an ``IndexStore``; this
    checks every member exists on real instances of both, and that the SQLite
    store's public operations beyond the interface are only the file's own (the
    numpy vector matrix and the compaction of a rebuilt file)."""
    from engine.index.index_store import IndexStore

    wanted = {n for n in dir(IndexStore) if not n.startswith("_")} | set(IndexStore.__annotations__)
    sqlite, pg = Store(tmp_path / "i.sqlite"), PgStore(pg_dsn, "iface")
    try:
        for store in (sqlite, pg):
            assert {n for n in wanted if not hasattr(store, n)} == set(), type(store)
    finally:
        sqlite.close()
        pg.close()
    extras = {n for n in dir(Store) if not n.startswith("_") and not n.isupper()} - wanted
    assert extras <= {"vector_matrix", "compact"}, extras


def test_opening_a_store_does_not_wait_for_writers(pg_dsn: str) -> None:
    """Every ``memdeck search`` opens a store; on a ready database that must take no
    table lock (``create index if not exists`` would queue behind a writer's
    transaction and stall the writers queued behind it)."""
    import threading

    PgStore(pg_dsn, "first").close()  # creates the schema
    writer = psycopg.connect(pg_dsn)
    try:
        writer.execute("lock table memdeck_chunks in row exclusive mode")  # as an insert does
        writer.execute("lock table memdeck_embedding_cache in row exclusive mode")
        opened: list[PgStore] = []
        thread = threading.Thread(target=lambda: opened.append(PgStore(pg_dsn, "second")))
        thread.daemon = True
        thread.start()
        thread.join(timeout=30)
        assert opened, "opening the store waited for a writer's transaction"
        assert opened[0].counts()["files"] == 0
        opened[0].close()
    finally:
        writer.rollback()
        writer.close()
