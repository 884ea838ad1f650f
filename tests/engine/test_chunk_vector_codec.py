"""Chunk vectors in ``chunks.embedding`` (``engine.index.chunk_vector_codec``): float32
for the model's, 8 bits for memdeck's pooled ones; every reader takes both."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.index import chunk_vector_codec as codec
from engine.index.store import NewChunk, Store

RNG = np.random.default_rng(3)


def _unit(dims: int) -> np.ndarray:
    v = RNG.normal(size=dims).astype(np.float32)
    return v / np.linalg.norm(v)


def test_compact_is_dims_plus_a_scale_and_reads_back_at_length_one() -> None:
    v = _unit(384)
    blob = codec.encode(v, compact=True)
    assert len(blob) == 388 == codec.compact_size(384)
    back = codec.decode(blob, 384)
    assert back is not None and abs(float(np.linalg.norm(back)) - 1) < 1e-6
    assert float(back @ v) > 0.9999  # a cosine moves by well under 0.001
    assert np.abs(back - v).max() <= float(np.abs(v).max()) / 127
    # float32 is kept as it is; a blob of neither size is None
    assert codec.encode(v, compact=False) == v.tobytes()
    plain = codec.decode(v.tobytes(), 384)
    assert plain is not None and np.array_equal(plain, v)
    assert codec.decode(b"\0" * 100, 384) is None


def test_decode_rows_takes_both_sizes_in_order_and_skips_others() -> None:
    a, b, c = _unit(8), _unit(8), _unit(8)
    blobs = [
        codec.encode(a, compact=False),
        b"\1" * 5,
        codec.encode(b, compact=True),
        codec.encode(c, compact=False),
    ]
    ok, rows = codec.decode_rows(blobs, 8)
    assert ok.tolist() == [True, False, True, True]
    assert np.array_equal(rows[0], a) and np.array_equal(rows[2], c)
    compact = codec.decode(blobs[2], 8)
    assert compact is not None and np.array_equal(rows[1], compact)


def _store_with(path: Path, pooled: bool) -> tuple[Store, list[np.ndarray]]:
    store = Store(path)
    store.set_dims(8)
    vecs = [_unit(8) for _ in range(3)]
    chunks = [
        NewChunk(i + 1, i + 1, f"h{i}", f"note {i} kiwi", v, pooled=pooled)
        for i, v in enumerate(vecs)
    ]
    store.replace_file(
        path="memory/a.md", source="memory", file_hash="x", mtime=1.0, size=10,
        model="m", chunks=chunks,
    )  # fmt: skip
    return store, vecs


@pytest.mark.parametrize("pooled", [False, True])
def test_the_store_reads_its_vectors_back_either_way(tmp_path: Path, pooled: bool) -> None:
    store, vecs = _store_with(tmp_path / "index.sqlite", pooled)
    sizes = {int(n) for (n,) in store.db.execute("select length(embedding) from chunks")}
    assert sizes == {12 if pooled else 32}
    got = store.chunk_vectors(
        [int(i) for (i,) in store.db.execute("select id from chunks order by id")]
    )
    for back, v in zip(got.values(), vecs, strict=True):
        assert float(back @ v) > 0.999
    # the numpy scan and sqlite-vec (built from the table, compact rows decoded)
    # find the same nearest chunk for each vector
    for i, v in enumerate(vecs):
        numpy_top = store.vector_search(v, 1, ["memory"], path="numpy")
        assert numpy_top[0][0] == i + 1
        if store.vec.loaded:
            vec_top = store.vector_search(v, 1, ["memory"], path="sqlite-vec")
            assert vec_top[0][0] == i + 1
    # neither size is damage to the checks, cheap or thorough
    assert store.check(level="thorough") == ()
    store.close()


def test_a_vector_of_neither_size_is_reported(tmp_path: Path) -> None:
    store, _ = _store_with(tmp_path / "index.sqlite", True)
    store.db.execute("update chunks set embedding = x'0102' where id = 1")
    assert "1 chunk vectors are not 8 numbers long" in store.check(level="index")
    assert 1 not in store.chunk_vectors([1, 2])
    store.close()


def test_sqlite_vec_kept_in_step_takes_compact_vectors_as_float32(tmp_path: Path) -> None:
    """With ``chunks_vec`` already there, each new pooled chunk goes into it as the
    float32 sqlite-vec reads, while ``chunks`` keeps its 8-bit blob."""
    store = Store(tmp_path / "index.sqlite")
    if not store.vec.loaded:
        pytest.skip("sqlite-vec is not loadable here")
    store.set_dims(8)
    store._ensure_vec_table(8, create=True)
    vecs = [_unit(8) for _ in range(3)]
    chunks = [
        NewChunk(i + 1, i + 1, f"h{i}", f"note {i}", v, pooled=True) for i, v in enumerate(vecs)
    ]
    store.replace_file(
        path="memory/a.md", source="memory", file_hash="x", mtime=1.0, size=10,
        model="m", chunks=chunks,
    )  # fmt: skip
    sizes = {int(n) for (n,) in store.db.execute("select length(embedding) from chunks")}
    assert sizes == {12}
    assert store.vec_table_consistent()
    for i, v in enumerate(vecs):
        assert store.vector_search(v, 1, ["memory"], path="sqlite-vec")[0][0] == i + 1
    store.close()
