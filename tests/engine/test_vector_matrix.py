"""The numpy vector path's quantized rows (``engine.index.vector_matrix``).

Every test runs a real SQLite index. ``QUANTIZE_FROM`` is lowered so that a few
thousand rows take the path a 100k-chunk index takes; the real MiniLM check of
the same top-24 is tests/integration/test_quantized_vectors.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engine.config.settings import MemorySearchSettings
from engine.index import vector_matrix
from engine.index.store import NewChunk, Store
from engine.index.vector_matrix import VectorMatrix
from engine.search.model import SearchOptions
from engine.search.retrieve import retrieve
from tests.bench.synthetic import HashEmbedder

DIMS = 384


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def _clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors in topics around a shared offset, their spread falling off
    axis by axis (like sentence embeddings: not centred, a decaying spectrum)."""
    offset = rng.standard_normal(DIMS) * 1.5
    spectrum = 1.0 / np.sqrt(1.0 + np.arange(DIMS))
    basis = np.linalg.qr(np.random.default_rng(0).standard_normal((DIMS, DIMS)))[0]
    topics = (rng.standard_normal((40, DIMS)) * spectrum) @ basis
    picks = rng.integers(0, len(topics), n)
    noise = (rng.standard_normal((n, DIMS)) * spectrum) @ basis
    return _unit(offset + 3 * topics[picks] + 2 * noise)


def _fill(
    store: Store, vectors: np.ndarray, per_file: int = 50, pooled: Sequence[bool] = ()
) -> None:
    store.set_dims(vectors.shape[1])
    for f, start in enumerate(range(0, len(vectors), per_file)):
        part = vectors[start : start + per_file]
        kinds = list(pooled[start : start + per_file]) or [False] * len(part)
        chunks = [
            NewChunk(i + 1, i + 1, f"h{f}-{i}", f"text {f} {i}", v, pooled=kinds[i])
            for i, v in enumerate(part)
        ]
        store.replace_file(
            path=f"memory/f{f}.md", source="memory", file_hash=f"h{f}", mtime=1.0, size=1,
            model="m", chunks=chunks,
        )  # fmt: skip


def _table(store: Store) -> dict[int, np.ndarray]:
    rows = store.db.execute("select id, embedding from chunks where embedding is not null")
    return {int(r[0]): np.frombuffer(r[1], dtype=np.float32) for r in rows}


def _exact_top(table: dict[int, np.ndarray], q: np.ndarray, k: int) -> list[tuple[int, float]]:
    scored = [(cid, float(np.dot(v, q))) for cid, v in table.items()]
    scored.sort(key=lambda hit: (-hit[1], hit[0]))
    return scored[:k]


@pytest.fixture
def quantize_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_matrix, "QUANTIZE_FROM", 500)


def test_below_the_threshold_the_rows_stay_float32(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    store = Store(tmp_path / "index.sqlite")
    _fill(store, _clustered(rng, 300))
    matrix = store.vector_matrix(["memory"])
    assert not matrix.quantized and matrix.codes.size == 0
    table = _table(store)
    ids, rows = matrix.view()
    for cid, row in zip(ids.tolist(), rows, strict=True):
        np.testing.assert_array_equal(row, table[cid])
    store.close()


def test_quantized_scan_gives_the_exact_top_k_with_exact_cosines(
    tmp_path: Path, quantize_small: None
) -> None:
    rng = np.random.default_rng(2)
    store = Store(tmp_path / "index.sqlite")
    vectors = _clustered(rng, 3000)
    _fill(store, vectors)
    matrix = store.vector_matrix(["memory"])
    assert matrix.quantized and matrix.exact.size == 0
    table = _table(store)
    for q in _unit(vectors[rng.integers(0, 3000, 40)] + 0.5 * rng.standard_normal((40, DIMS))):
        got = store.vector_search(q, 24, ["memory"], path="numpy")
        want = _exact_top(table, q, 24)
        assert [cid for cid, _ in got] == [cid for cid, _ in want]
        # the exact float32 cosines of the stored vectors, not the int8 estimates
        assert got == want
    store.close()


def test_pooled_rows_are_rescored_from_memory_to_the_bit(
    tmp_path: Path, quantize_small: None
) -> None:
    """A pooled vector's blob is int8 codes and a scale: its row keeps both, so the
    quantized scan rescores it without reading it, with the cosine of the vector a
    read of its blob gives, to the bit. Float32 rows beside them are still read."""
    rng = np.random.default_rng(4)
    store = Store(tmp_path / "index.sqlite")
    vectors = _clustered(rng, 3000)
    vectors[::7] *= 0.5  # codes that never reach ±127 once stored (hand-made blobs)
    pooled = [i % 3 != 0 for i in range(3000)]  # a third of the rows float32
    _fill(store, vectors, pooled=pooled)
    stored = store.chunk_vectors(list(range(1, 3001)))
    assert (
        sum(len(b) == DIMS + 4 for (b,) in store.db.execute("select embedding from chunks")) == 2000
    )
    read: list[int] = []

    def reader(ids: Sequence[int]) -> dict[int, np.ndarray]:
        read.extend(ids)
        return store.chunk_vectors(ids)

    float_rows = {cid for cid in stored if not pooled[cid - 1]}
    for q in _unit(vectors[rng.integers(0, 3000, 30)] + 0.5 * rng.standard_normal((30, DIMS))):
        got = store.vector_search(q, 24, ["memory"], path="numpy", read_vectors=reader)
        want = sorted(
            ((cid, float(np.dot(v, q))) for cid, v in stored.items()), key=lambda h: (-h[1], h[0])
        )
        assert got == want[:24]
    assert store.vector_matrix(["memory"]).quantized
    assert read and set(read) <= float_rows  # only the float32 rows were read
    store.close()


def test_a_damaged_pooled_row_is_left_out_and_the_others_keep_their_codes(
    tmp_path: Path, quantize_small: None
) -> None:
    """A pooled blob whose scale is not a number decodes to no vector: the matrix
    skips it, and the pooled rows after it in the same page keep their own codes
    and scales (each still rescored to the bit)."""
    rng = np.random.default_rng(6)
    store = Store(tmp_path / "index.sqlite")
    vectors = _clustered(rng, 1000)
    _fill(store, vectors, pooled=[True] * 1000)
    blob = bytes(store.db.scalar("select embedding from chunks where id = 7"))
    nan = np.array([np.nan], dtype=np.float32).tobytes()
    store.db.execute("update chunks set embedding = ? where id = 7", (blob[:-4] + nan,))
    stored = store.chunk_vectors(list(range(1, 1001)))
    assert 7 not in stored and len(stored) == 999
    matrix = store.vector_matrix(["memory"])
    assert matrix.quantized and matrix.n == 999 and 7 not in matrix.ids[: matrix.n]
    for q in _unit(vectors[rng.integers(0, 1000, 20)] + 0.5 * rng.standard_normal((20, DIMS))):
        got = store.vector_search(q, 24, ["memory"], path="numpy")
        want = sorted(
            ((c, float(np.dot(v, q))) for c, v in stored.items()), key=lambda h: (-h[1], h[0])
        )
        assert got == want[:24]
    store.close()


def test_rescoring_decides_what_int8_cannot_tell_apart(
    tmp_path: Path, quantize_small: None
) -> None:
    """Near-duplicates differ by less than int8's resolution: the int8 order of the
    best ones is wrong, and only the exact rescoring puts them right."""
    rng = np.random.default_rng(3)
    store = Store(tmp_path / "index.sqlite")
    base = _unit(rng.standard_normal(DIMS))
    twins = _unit(base + 2e-3 * rng.standard_normal((30, DIMS)))
    _fill(store, np.concatenate([twins, _clustered(rng, 800)]))
    q = base
    matrix = store.vector_matrix(["memory"])
    assert matrix.quantized
    n = matrix.n
    int8_scores = (matrix.codes[:n].astype(np.float32) @ q) * matrix.scales[:n]
    int8_top = [int(matrix.ids[i]) for i in np.argsort(-int8_scores, kind="stable")[:10]]
    want = _exact_top(_table(store), q, 10)
    assert int8_top != [cid for cid, _ in want]  # the case this test is about
    assert store.vector_search(q, 10, ["memory"], path="numpy") == want
    store.close()


@pytest.mark.slow
def test_quantized_rows_follow_edits_in_place(tmp_path: Path, quantize_small: None) -> None:
    rng = np.random.default_rng(4)
    pick = random.Random(5)
    store = Store(tmp_path / "index.sqlite")
    _fill(store, _clustered(rng, 1200), per_file=40)
    first = store.vector_matrix(["memory"])
    assert first.quantized
    for _ in range(25):
        roll = pick.random()
        f = pick.randrange(34)
        if roll < 0.6:
            chunks = [
                NewChunk(i + 1, i + 1, f"e{f}-{i}-{rng.random()}", "text", v)
                for i, v in enumerate(_clustered(rng, pick.randrange(1, 30)))
            ]
            store.replace_file(
                path=f"memory/f{f}.md", source="memory", file_hash="x", mtime=2.0, size=1,
                model="m", chunks=chunks,
            )  # fmt: skip
        else:
            store.remove_files([f"memory/f{f}.md"])
        matrix = store.vector_matrix(["memory"])
        assert matrix is first  # refreshed in place, never reloaded
        table = _table(store)
        n = matrix.n
        ids = matrix.ids[:n].tolist()
        assert sorted(ids) == sorted(table)
        stored = np.stack([table[cid] for cid in ids])
        approx = matrix.view()[1]
        assert np.all(np.abs(approx - stored) <= matrix.scales[:n, None] / 2 + 1e-7)
        np.testing.assert_allclose(matrix.projected[:n], approx @ matrix.axes, atol=1e-5)
        q = _unit(stored[pick.randrange(n)] + 0.5 * rng.standard_normal(DIMS))
        assert store.vector_search(q, 24, ["memory"], path="numpy") == _exact_top(table, q, 24)
    store.close()


class _CountingStore(Store):
    """A real store that records which chunk ids had their vector read."""

    reads: list[int]

    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        self.reads.extend(ids)
        return super().chunk_vectors(ids)


def test_a_hybrid_search_reads_each_candidate_vector_once(
    tmp_path: Path, quantize_small: None
) -> None:
    words = ["morning", "evening", "vet", "refill", "dose", "espresso", "porto", "postgres"]
    provider = HashEmbedder()
    store = _CountingStore(tmp_path / "index.sqlite")
    store.set_dims(provider.dims)
    for day in range(20):
        texts = [
            f"Note {day}-{i}: the {words[(day + i) % 8]} {words[(day * i) % 8]} plan for Miso."
            for i in range(40)
        ]
        vecs = provider.embed_documents(texts)
        chunks = [NewChunk(i + 1, i + 1, f"{day}-{i}", t, vecs[i]) for i, t in enumerate(texts)]
        store.replace_file(
            path=f"memory/2026-03-{day + 1:02d}.md", source="memory", file_hash=str(day),
            mtime=1.0, size=1, model="m", chunks=chunks,
        )  # fmt: skip
    assert store.vector_matrix(["memory"]).quantized
    store.reads = []
    options = SearchOptions.from_settings(MemorySearchSettings())
    r = retrieve(store, provider, "Miso refill dose plan", options)
    assert len(r.vector_hits) == options.candidates
    assert len(store.reads) == len(set(store.reads))  # no vector read twice
    table = _table(store)
    qvec = provider.embed_query("Miso refill dose plan")
    assert set(r.vector_hits) <= set(r.cosines.items())
    for cid, cosine in r.cosines.items():
        assert cosine == float(np.dot(table[cid], qvec))
    store.close()


def test_load_survives_rows_arriving_while_it_reads(tmp_path: Path) -> None:
    """A count taken before more rows arrived: the load makes another pass."""
    rng = np.random.default_rng(6)
    store = Store(tmp_path / "index.sqlite")
    _fill(store, _clustered(rng, 700))
    matrix = VectorMatrix.load(store.db.execute, 10, "k", ("memory",), DIMS, quantize_from=5)
    assert matrix.quantized and matrix.n == 700
    assert sorted(matrix.ids[:700].tolist()) == sorted(_table(store))
    store.close()


def test_auto_path_budget_counts_the_quantized_bytes(
    tmp_path: Path, quantize_small: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``auto`` keeps numpy while the matrix *as held* fits the budget: past
    ``QUANTIZE_FROM`` that is int8 codes and projections, about half the float32 rows."""
    from engine.index import store as store_module

    rng = np.random.default_rng(5)
    store = Store(tmp_path / "index.sqlite")
    _fill(store, _clustered(rng, 600))
    dims = store.dims or 0
    held = vector_matrix.matrix_bytes(600, dims)
    assert held < 600 * dims * 4  # the float32 rows alone would not fit the budget below
    matrix = store.vector_matrix(["memory"])
    assert matrix.quantized
    assert matrix.nbytes() == vector_matrix.matrix_bytes(matrix.capacity, dims)

    monkeypatch.setattr(store_module, "NUMPY_BUDGET_BYTES", held + 1)
    assert not store._auto_prefers_vec()
    store.maintain_vec_table()
    assert not store._vec_table_exists()

    monkeypatch.setattr(store_module, "NUMPY_BUDGET_BYTES", held - 1)
    assert store._auto_prefers_vec()
    store.maintain_vec_table()
    assert store._vec_table_exists()
    store.close()


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch):
    """Split scans on from a few hundred rows, with numpy's BLAS on one thread: the
    configuration ``memdeck mcp`` runs (it splits only once BLAS is on one thread;
    a multi-threaded BLAS cuts its own product in parts, with their own tails)."""
    from engine.blas import THREADS_VARIABLE, blas_threads, limit_blas_threads

    before = blas_threads()
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)  # tests/conftest.py sets it
    if before is None or not limit_blas_threads(1):
        pytest.skip("numpy's BLAS is not an OpenBLAS whose threads can be set")
    monkeypatch.setattr(vector_matrix, "SPLIT_FROM", 256)
    if not vector_matrix.split_scans(True):
        limit_blas_threads(before)
        pytest.skip("split scans need two cores")
    yield
    vector_matrix.split_scans(False)
    limit_blas_threads(before)


@pytest.mark.parametrize("rows", [256, 1000, 3001, 10_002])
def test_a_split_scan_keeps_the_single_scans_rows_and_scores_to_the_bit(
    split: None, rows: int
) -> None:
    """Row counts that leave the BLAS kernel's tail rows in either half (10,002 split
    in the middle differed in its last two rows before the halves were aligned)."""
    rng = np.random.default_rng(rows)
    matrix = _clustered(rng, rows)
    for q in _unit(rng.standard_normal((20, DIMS))):
        whole = matrix @ q
        for size in (24, 200, rows):
            found, scores = vector_matrix._best(matrix, q, size)
            want = np.sort(np.argsort(-whole, kind="stable")[:size])
            assert np.array_equal(np.sort(found), want)
            np.testing.assert_array_equal(scores, whole[found])


@pytest.mark.parametrize("shortlist", [2048, 4000, 5001])
def test_a_split_int8_scoring_is_the_single_ones_to_the_bit(split: None, shortlist: int) -> None:
    """The int8 stage's scores of a shortlist scattered over the rows, split in two
    halves at once, are each row's unsplit score (so the rows rescored do not change)."""
    rng = np.random.default_rng(shortlist)
    codes, scales = vector_matrix._quantize(_clustered(rng, 20_000))
    rows = rng.choice(20_000, shortlist, replace=False)
    assert shortlist >= vector_matrix.SPLIT_SHORTLIST_FROM
    for q in _unit(rng.standard_normal((10, DIMS))):
        single = (codes[rows].astype(np.float32) @ q) * scales[rows]
        np.testing.assert_array_equal(vector_matrix._int8_scores(codes, scales, rows, q), single)


@pytest.mark.parametrize("quantized", [False, True], ids=["float32", "quantized"])
def test_split_scans_answer_as_one_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: None, quantized: bool
) -> None:
    """The same (id, cosine) lists with the scan split or not, on both matrix kinds."""
    if quantized:
        monkeypatch.setattr(vector_matrix, "QUANTIZE_FROM", 500)
    rng = np.random.default_rng(5)
    store = Store(tmp_path / "index.sqlite")
    vectors = _clustered(rng, 3001)
    _fill(store, vectors)
    queries = _unit(vectors[rng.integers(0, 3001, 30)] + 0.5 * rng.standard_normal((30, DIMS)))
    vector_matrix.split_scans(False)
    single = [store.vector_search(q, 24, ["memory"], path="numpy") for q in queries]
    assert vector_matrix.split_scans(True)
    calls: list[int] = []
    real = vector_matrix._best_of
    monkeypatch.setattr(
        vector_matrix,
        "_best_of",
        lambda rows, q, size: calls.append(len(rows)) or real(rows, q, size),
    )
    halves = [store.vector_search(q, 24, ["memory"], path="numpy") for q in queries]
    assert store.vector_matrix(["memory"]).quantized is quantized
    assert sorted(calls) == [1472] * 30 + [1529] * 30  # every scan ran as two halves
    assert halves == single
    store.close()
