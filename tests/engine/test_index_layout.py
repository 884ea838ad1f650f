"""The on-disk layout: chunk text and vectors stored once; older layouts still work.

New indexes keep chunk text only in ``chunks`` (the FTS5 table reads it as
external content) and vectors only in ``chunks.embedding`` (sqlite-vec's
``chunks_vec`` appears once the numpy path's budget is outgrown or a search asks
for it). An index written by an earlier memdeck — FTS5 with its own copy of the
text, a ``chunks_vec`` table — opens, searches and stays in step through edits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.index.store import NewChunk, Store


def _vec(seed: int, dims: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


def _chunks(words: list[str], seed: int) -> list[NewChunk]:
    return [
        NewChunk(i + 1, i + 1, f"h{seed}-{i}", f"note about {w} number {i}", _vec(seed * 100 + i))
        for i, w in enumerate(words)
    ]


def _write(store: Store, path: str, words: list[str], seed: int) -> None:
    store.set_dims(8)
    store.replace_file(
        path=path,
        source="memory",
        file_hash=f"f{seed}",
        mtime=float(seed),
        size=1,
        model="m",
        chunks=_chunks(words, seed),
    )


def _tables(store: Store) -> set[str]:
    return {r[0] for r in store.db.execute("select name from sqlite_master")}


def _hits(store: Store, word: str) -> list[int]:
    return [cid for cid, _ in store.fts_search(f'"{word}"', 50, ["memory"])]


def _old_layout(path: Path) -> None:
    """Rewrite a fresh index into the layout memdeck wrote before (text copied
    into FTS5, a populated vec0 table), as such a file would be found on disk."""
    store = Store(path)
    store.db.execute("drop table chunks_fts")
    store.db.execute("create virtual table chunks_fts using fts5(text, tokenize='unicode61')")
    store.db.execute("insert into chunks_fts(rowid, text) select id, text from chunks")
    store._ensure_vec_table(8, create=True)
    store.close()


def test_a_new_index_stores_text_and_vectors_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "index.sqlite")
    _write(store, "memory/a.md", ["kiwi", "mango"], 1)
    assert store.fts_external
    assert "chunks_fts_content" not in _tables(store)  # FTS5 reads chunks.text
    assert "chunks_vec" not in _tables(store)  # small: the numpy path needs no copy
    assert _hits(store, "kiwi") and _hits(store, "mango")
    q = _vec(100)
    numpy_top = store.vector_search(q, 2, ["memory"], path="numpy")
    vec_top = store.vector_search(q, 2, ["memory"], path="sqlite-vec")  # built on demand
    if store.vec.loaded:
        assert "chunks_vec" in _tables(store)
        assert [i for i, _ in vec_top] == [i for i, _ in numpy_top]
    # an edit replaces the rows; the external-content index forgets the old text
    _write(store, "memory/a.md", ["papaya"], 2)
    assert _hits(store, "kiwi") == [] and len(_hits(store, "papaya")) == 1
    store.remove_files(["memory/a.md"])
    assert _hits(store, "papaya") == []
    assert store.db.execute("insert into chunks_fts(chunks_fts) values ('integrity-check')") == []
    store.close()


def test_an_index_in_the_old_layout_opens_and_stays_in_step(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    store = Store(path)
    _write(store, "memory/a.md", ["kiwi", "mango"], 1)
    store.close()
    _old_layout(path)

    store = Store(path)
    assert not store.fts_external and "chunks_fts_content" in _tables(store)
    assert len(_hits(store, "kiwi")) == 1
    _write(store, "memory/a.md", ["papaya"], 2)
    _write(store, "memory/b.md", ["kiwi"], 3)
    assert len(_hits(store, "papaya")) == 1 and len(_hits(store, "mango")) == 0
    if store.vec.loaded:
        ids = {r[0] for r in store.db.execute("select id from chunks")}
        assert {r[0] for r in store.db.execute("select rowid from chunks_vec")} == ids
    store.remove_files(["memory/b.md"])
    assert _hits(store, "kiwi") == []
    store.close()
