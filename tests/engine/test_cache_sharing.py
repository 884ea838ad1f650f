"""Each vector stored once: embedding-cache entries of live chunks point at
``chunks.embedding`` instead of holding a second copy (``Store.cache_share_with_chunks``).

Real SQLite files throughout: the cache still answers with the same bytes, a
deleted chunk hands its vector back to the cache (so re-adding the text costs no
embedding), an index written before (every vector twice) is converted by its
next sync, and a full reindex's cache copy resolves the references.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.index.store import Store
from tests.bench import common
from tests.bench.synthetic import HashEmbedder

FILES = {
    "MEMORY.md": "# Memory\n\nThe atlas rollout needs a budget.\n",
    "memory/2026-01-01.md": "# Day 1\n\n- lunch with Priya about the ledger sync\n",
    "memory/2026-01-02.md": "# Day 2\n\n- Postgres adapter flaky test fixed\n",
    "memory/2026-01-03.md": "# Day 3\n\n- certificate renewal for Redis\n",
}


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    for rel, text in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    return ws


def _entries(store: Store) -> dict[str, int]:
    """hash → bytes the cache entry holds itself."""
    return {
        str(h): int(n)
        for h, n in store.db.execute("select hash, length(embedding) from embedding_cache")
    }


def _chunk_vectors(store: Store) -> dict[str, bytes]:
    rows = store.db.execute("select hash, embedding from chunks where embedding is not null")
    return {str(h): bytes(v) for h, v in rows}


def _cached(store: Store, hashes: list[str]) -> dict[str, bytes]:
    fp = HashEmbedder().fingerprint()
    got = store.cache_get(str(fp["provider"]), str(fp["model"]), str(fp["provider_key"]), hashes)
    return {h: np.asarray(v, dtype=np.float32).tobytes() for h, v in got.items()}


def test_live_vectors_are_stored_once_and_come_back_on_delete(tmp_path) -> None:
    ws = _workspace(tmp_path)
    engine = common.open_engine(ws, tmp_path / "state", HashEmbedder())
    engine.sync(reason="test")
    store = engine.store
    live = _chunk_vectors(store)
    assert len(live) == len(FILES)
    entries = _entries(store)
    assert set(entries) == set(live) and set(entries.values()) == {0}  # references only
    assert _cached(store, list(live)) == live  # the cache answers with the chunks' bytes
    # a deleted file's vectors go back into the cache, byte for byte
    gone = (ws / "memory/2026-01-02.md").read_text(encoding="utf-8")
    (ws / "memory/2026-01-02.md").unlink()
    engine.sync(reason="test")
    now = _chunk_vectors(store)
    (lost,) = set(live) - set(now)
    entries = _entries(store)
    assert entries[lost] == 384 * 4 and all(entries[h] == 0 for h in now)
    assert _cached(store, [lost]) == {lost: live[lost]}
    # the same text again: a cache hit, no embedding, and a reference once more
    (ws / "memory/2026-01-02.md").write_text(gone, encoding="utf-8")
    done = engine.sync(reason="test")
    assert done.cache_hits == 1 and done.chunks_embedded == 0
    assert set(_entries(store).values()) == {0}
    engine.close()


def test_an_index_with_every_vector_twice_is_converted_by_its_next_sync(tmp_path) -> None:
    ws = _workspace(tmp_path)
    engine = common.open_engine(ws, tmp_path / "state", HashEmbedder())
    engine.sync(reason="test")
    store = engine.store
    live = _chunk_vectors(store)
    # the layout before: the cache holds its own copy of each live vector
    store.db.execute(
        "update embedding_cache set embedding = (select c.embedding from chunks c"
        " where c.hash = embedding_cache.hash)"
    )
    assert set(_entries(store).values()) == {384 * 4}
    engine.close()
    engine = common.open_engine(ws, tmp_path / "state", HashEmbedder())
    done = engine.sync(reason="test")  # nothing changed in the workspace
    assert done.chunks_embedded == 0
    assert set(_entries(engine.store).values()) == {0}
    assert _cached(engine.store, list(live)) == live
    engine.close()


def test_a_full_reindex_copies_the_cache_with_its_vectors(tmp_path) -> None:
    ws = _workspace(tmp_path)
    engine = common.open_engine(ws, tmp_path / "state", HashEmbedder())
    engine.sync(reason="test")
    live = _chunk_vectors(engine.store)
    old_path = engine.store.path
    engine.close()
    fresh = Store(tmp_path / "new" / "index.sqlite")
    assert fresh.copy_cache_from(old_path) == len(live)
    assert set(_entries(fresh).values()) == {384 * 4}  # real copies: no chunks here
    assert _cached(fresh, list(live)) == live
    fresh.close()


def test_the_copies_a_first_sync_drops_are_given_back_to_the_file_system(tmp_path) -> None:
    ws = _workspace(tmp_path)
    for day in range(4, 120):  # 120 chunks: the cache's copies fill pages of their own
        lines = "\n".join(f"- item {day}.{i} about topic{day * 7 + i}" for i in range(30))
        (ws / f"memory/2026-02-{day:03d}.md").write_text(f"# Day {day}\n\n{lines}\n")
    engine = common.open_engine(ws, tmp_path / "state", HashEmbedder())
    engine.sync(reason="test")
    store = engine.store
    assert int(store.db.scalar("pragma auto_vacuum") or 0) == 2  # incremental, set at birth
    entries = _entries(store)
    assert len(entries) >= 120 and set(entries.values()) == {0}  # every copy dropped
    assert int(store.db.scalar("pragma freelist_count") or 0) == 0  # given back
    page = int(store.db.scalar("pragma page_size") or 0)
    cache_pages = int(
        store.db.scalar("select count(*) from dbstat where name = 'embedding_cache'") or 0
    )
    payload = int(
        store.db.scalar("select sum(payload) from dbstat where name = 'embedding_cache'") or 0
    )
    assert cache_pages <= 2 * payload // page + 2  # repacked, not pages of emptied rows
    engine.close()
    # the file holds what it uses: its pages, none free (after the close's checkpoint)
    index = tmp_path / "state" / "index.memdeck.sqlite"
    reopened = Store(index)
    used = int(reopened.db.scalar("pragma page_count") or 0)
    assert index.stat().st_size == used * page
    assert int(reopened.db.scalar("pragma freelist_count") or 0) == 0
    reopened.close()
