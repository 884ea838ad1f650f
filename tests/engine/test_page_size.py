"""New index files of a large memory use 16 KB pages, of a small one 4 KB, of a tiny
one 1 KB; a file keeps its page size until a full reindex.

A chunk row (text, vector, path, hash: ~2.8 KB at 384 dims) fills a 4 KB page by
itself, so a large memory's index is created with 16 KB pages (``store.PAGE_SIZE``);
below ``store.SMALL_MEMORY_BYTES`` of Markdown, each table's first page would weigh
more than its rows, so 4 KB, and below ``store.TINY_MEMORY_BYTES`` 1 KB, where rows
too big for a page fill overflow pages to the byte. An existing file keeps its page
size: it opens, syncs and searches as it is, and a full reindex moves it to the page size its memory
gets when no other connection holds it open (otherwise the rebuilt file is written
in the old page size, which SQLite's backup into a WAL database requires).
"""

from __future__ import annotations

from pathlib import Path

from engine.core import Engine
from engine.index.db import Database
from engine.index.store import PAGE_SIZE, Store
from tests.engine_fixtures import write


def _page_size(path: Path) -> int:
    db = Database(path)
    try:
        return db.page_size()
    finally:
        db.close()


def _to_4k_pages(path: Path) -> None:
    """Rewrite a closed index in SQLite's default 4 KB pages, as memdeck created
    every index file before (WAL mode kept)."""
    db = Database(path)
    db.execute("pragma journal_mode=delete")
    db.execute("pragma page_size=4096")
    db.execute("vacuum")
    db.execute("pragma journal_mode=wal")
    db.close()
    assert _page_size(path) == 4096


def _paths(engine: Engine, query: str) -> list[str]:
    return [r.path for r in engine.search(query).results]


def _workspace(ws: Path) -> None:
    write(ws, "MEMORY.md", "# Memory\n\n- The staging database is Postgres on port 5433\n")
    write(ws, "memory/2026-03-10.md", "# 2026-03-10\n\n- Deploy window is Tuesday 14:00\n")


def test_a_new_index_has_16k_pages(tmp_path: Path) -> None:
    store = Store(tmp_path / "index.sqlite")
    assert store.db.page_size() == PAGE_SIZE == 16384
    store.close()
    assert _page_size(tmp_path / "index.sqlite") == 16384
    reopened = Store(tmp_path / "index.sqlite")  # opening again changes nothing
    assert reopened.db.page_size() == 16384
    reopened.close()


def test_an_old_4k_index_opens_syncs_searches(
    make_engine, workspace_dir: Path, monkeypatch
) -> None:
    # a memory counted as large (new files get 16 KB pages), its index from before
    monkeypatch.setattr("engine.index.store.SMALL_MEMORY_BYTES", 0)
    monkeypatch.setattr("engine.index.store.TINY_MEMORY_BYTES", 0)
    _workspace(workspace_dir)
    first = make_engine(provider=None)
    first.sync(reason="test")
    index = first.index_path
    first.close()
    _to_4k_pages(index)
    engine = make_engine(provider=None)
    engine.sync(reason="test")
    assert engine.store.db.page_size() == 4096
    assert _paths(engine, "Postgres port") == ["MEMORY.md"]
    write(workspace_dir, "memory/2026-03-11.md", "# 2026-03-11\n\n- Kiwi rollout on Friday\n")
    engine.sync(reason="test")
    assert _paths(engine, "kiwi rollout") == ["memory/2026-03-11.md"]
    assert engine.store.db.page_size() == 4096
    # A full reindex while another connection holds the file: the rebuilt index is
    # copied in with the old page size (a WAL database cannot change it).
    other = Store(index)
    engine.sync(reason="test", force=True)
    assert engine.store.db.page_size() == 4096
    assert other.fts_search('"kiwi"', 5, ["memory"])  # the other reader sees the new rows
    other.close()
    assert _paths(engine, "deploy window") == ["memory/2026-03-10.md"]
    # Alone with it, the next full reindex writes the new layout.
    engine.sync(reason="test", force=True)
    assert engine.store.db.page_size() == 16384
    assert _page_size(index) == 16384
    assert _paths(engine, "Postgres port") == ["MEMORY.md"]
    assert _paths(engine, "kiwi rollout") == ["memory/2026-03-11.md"]
    assert engine.store.db.scalar("pragma journal_mode") == "wal"
    assert engine.store.db.scalar("pragma integrity_check") == "ok"
    write(workspace_dir, "memory/2026-03-12.md", "# 2026-03-12\n\n- Mango audit next week\n")
    engine.sync(reason="test")
    assert _paths(engine, "mango audit") == ["memory/2026-03-12.md"]


def test_a_tiny_memory_gets_1k_pages_a_small_one_4k_and_a_large_one_16k(
    make_engine, workspace_dir: Path, monkeypatch
) -> None:
    _workspace(workspace_dir)
    tiny = make_engine(provider=None)
    tiny.sync(reason="test")
    assert tiny.store.db.page_size() == 1024  # ~100 bytes of Markdown
    assert _paths(tiny, "Postgres port") == ["MEMORY.md"]
    index = tiny.index_path
    tiny.close()
    # the same workspace counted as small, then as large (the thresholds lowered): a
    # new file gets 4 KB, then 16 KB pages, and so does the file a full reindex builds
    # when no one shares it
    monkeypatch.setattr("engine.index.store.TINY_MEMORY_BYTES", 50)
    index.unlink()
    small = make_engine(provider=None)
    small.sync(reason="test")
    assert small.store.db.page_size() == 4096
    small.close()
    monkeypatch.setattr("engine.index.store.SMALL_MEMORY_BYTES", 50)
    index.unlink()
    large = make_engine(provider=None)
    large.sync(reason="test")
    assert large.store.db.page_size() == 16384
    monkeypatch.setattr("engine.index.store.SMALL_MEMORY_BYTES", 8 * 2**20)
    large.sync(reason="test", force=True)
    assert large.store.db.page_size() == 4096 == _page_size(index)
    monkeypatch.setattr("engine.index.store.TINY_MEMORY_BYTES", 2**20)
    large.sync(reason="test", force=True)
    assert large.store.db.page_size() == 1024 == _page_size(index)
    assert _paths(large, "Postgres port") == ["MEMORY.md"]
    assert large.store.db.scalar("pragma integrity_check") == "ok"
