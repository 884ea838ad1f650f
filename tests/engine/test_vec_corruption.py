"""Damage inside sqlite-vec's table is noticed and repaired.

Two real damages on a real index: a vec shadow row whose vector blob is cut
(sqlite-vec reports a blob size error), and a page under the vec table whose
overflow pointer is overwritten on disk (``integrity_check`` reports an invalid
page). A search must not fail nor return keyword hits labelled "hybrid": the
writable engine rebuilds (the vec table from the stored vectors, or the whole
index from the Markdown) and answers hybrid; a read-only engine answers
keyword-only with the reason, and the next sync repairs it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.core import Engine
from engine.search.retrieve import VEC_DAMAGED
from tests.engine.concept_embedder import ConceptEmbedder


def _notes(ws: Path) -> None:
    (ws / "MEMORY.md").write_text("# Memory\n\nDana prefers flat white coffee.\n")
    for i in range(5):
        (ws / "memory" / f"n{i}.md").write_text(f"note {i} about the atlas rollback and coffee\n")


def _engine(make_engine: Callable[..., Engine], **kw: object) -> Engine:
    engine = make_engine(ConceptEmbedder(), **kw)
    engine.vector_path = "sqlite-vec"  # the path that reads the vec table
    return engine


def test_a_cut_vec_blob_is_rebuilt_from_the_stored_vectors(
    make_engine: Callable[..., Engine], workspace_dir: Path
) -> None:
    _notes(workspace_dir)
    engine = _engine(make_engine)
    engine.sync()
    assert engine.search("coffee").mode == "hybrid"
    engine.store.db.execute("update chunks_vec_vector_chunks00 set vectors = x'00'")
    out = engine.search("coffee")
    assert out.mode == "hybrid" and out.retrieval.vector_error is None
    assert out.retrieval.vector_hits
    assert engine.recovered is not None and "sqlite-vec table was damaged" in engine.recovered
    assert engine.store.vec_table_consistent()


def test_a_read_only_engine_says_keyword_only_and_sync_repairs(
    make_engine: Callable[..., Engine], make_settings: Callable[..., object], workspace_dir: Path
) -> None:
    _notes(workspace_dir)
    writer = _engine(make_engine)
    writer.sync()
    writer.store.db.execute("update chunks_vec_vector_chunks00 set vectors = x'00'")
    reader = Engine(make_settings(), provider=ConceptEmbedder(), read_only=True)  # type: ignore[arg-type]
    reader.vector_path = "sqlite-vec"
    try:
        out = reader.search("coffee")
        assert out.mode == "fts" and out.retrieval.vector_error is not None
        assert out.retrieval.vector_error.startswith(VEC_DAMAGED)
        assert out.retrieval.fts_hits  # the keyword side still answers
    finally:
        reader.close()
    assert not writer.store.vec_table_consistent()  # the cheap check sees it
    writer.sync()  # ... and the sync repairs it
    assert writer.store.vec_table_consistent()
    assert writer.search("coffee").mode == "hybrid"


def test_a_damaged_page_under_the_vec_table_rebuilds_from_markdown(
    make_engine: Callable[..., Engine],
    make_settings: Callable[..., object],
    workspace_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 4 KB pages: the vectors' blob spans several overflow pages, so breaking the
    # first one's link breaks every read of it (16 KB pages hold it in two)
    monkeypatch.setattr("engine.index.store.PAGE_SIZE", 4096)
    _notes(workspace_dir)
    first = _engine(make_engine)
    first.sync()
    pages = first.store.db.execute(
        "select pageno from dbstat where name = 'chunks_vec_vector_chunks00' order by pageno"
    )
    first.store.db.execute("pragma wal_checkpoint(TRUNCATE)")
    page = first.store.db.page_size()
    index = first.index_path
    first.close()
    overflow = int(pages[1][0])  # the vector blob's first overflow page
    data = bytearray(index.read_bytes())
    data[(overflow - 1) * page : (overflow - 1) * page + 4] = b"\xff\xff\xff\x7f"
    index.write_bytes(bytes(data))
    engine = _engine(make_engine)
    assert "invalid page number" in engine.db_integrity()  # the damage is real
    out = engine.search("coffee")
    assert out.mode == "hybrid" and out.retrieval.vector_hits
    assert engine.recovered is not None and "moved to" in engine.recovered
    assert engine.db_integrity() == "ok"
    assert index.with_name(index.name + ".corrupt").exists()
