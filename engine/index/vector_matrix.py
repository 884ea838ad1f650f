"""The numpy vector path's rows in memory, exact or quantized.

``chunks.embedding`` (float32 blobs, or 8-bit ones for pooled vectors:
``chunk_vector_codec``) stays the single source of truth; this is a scan
accelerator kept in step with the table.

Small indexes keep the float32 rows and answer with one matrix-vector product:
below ``QUANTIZE_FROM`` rows that scan costs ~1 ms and its answers are the
stored vectors' cosines as they are. From ``QUANTIZE_FROM`` rows on, the float32
matrix (1,536 B a row at 384 dims, 154 MB at 100k) is the largest thing memdeck
holds and its scan reads all of it per query, so each row is kept as

* its projection on the ``PROJECTION_DIMS`` principal axes of the vectors
  loaded (float32, 384 B a row at 96 axes): a quarter of the bytes to scan, and
  on real MiniLM vectors a far better shortlist than a sign-bit sketch of the
  same or smaller size;
* int8 codes with one float32 scale per row (``row ≈ scale · codes``).

A search ranks every row by its projection's dot product with the query's,
keeps the best ``shortlist_size`` rows, ranks those by their int8 approximation
of the dot product, and computes the exact float32 cosine of the best
``rescore_size`` of them from their stored vectors. Every cosine handed back is
that exact one; the approximations only choose which rows are rescored. A pooled
vector's blob is itself int8 codes and a scale: its row keeps those codes and the
scale, so its stored vector is made again in memory, to the bit, instead of read
(``chunk_vector_codec.from_codes``). README "Speed and memory" has the
measurements behind the constants.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.index import chunk_vector_codec

#: rows at which the matrix is quantized (below: float32 rows, the exact scan)
QUANTIZE_FROM = 30_000
#: principal axes the first pass scans (fewer axes than the vectors have dims)
PROJECTION_DIMS = 96
#: rows (a strided sample) the principal axes are computed from
AXES_SAMPLE = 20_000
#: the first pass's shortlist: this fraction of the rows, and at least
#: ``SHORTLIST_PER_HIT`` rows per asked hit
SHORTLIST_FRACTION = 1 / 25
SHORTLIST_PER_HIT = 40
#: the int8 ranking's best rows whose exact cosine is computed: asked hits times
#: this factor, plus ``RESCORE_EXTRA``
RESCORE_FACTOR = 2
RESCORE_EXTRA = 16
#: rows read per query while loading the matrix
PAGE = 4096

#: rows from which a scan runs as two halves at once once :func:`split_scans` is on
SPLIT_FROM = 8_192

#: the halves of a split scan meet at a multiple of this many rows
SPLIT_ALIGN = 64

#: shortlists from which the int8 scoring runs as two halves at once (the rows are
#: gathered from all over the codes: a 4,000-row shortlist costs about 1.3 ms)
SPLIT_SHORTLIST_FROM = 2_048

#: the helper thread of split scans (None: every scan is one product on this thread)
_helper: ThreadPoolExecutor | None = None


def split_scans(enabled: bool = True) -> bool:
    """Scan matrices of :data:`SPLIT_FROM` rows or more as two halves at once, the
    second on a helper thread; True when on (it needs two cores).

    For a process that runs numpy's BLAS on one thread (``memdeck mcp``,
    ``engine/blas.py``): OpenBLAS's own threads spin after each product and
    took a core from the next query's embedding, so the server runs it on one,
    but the scan, right after the query vector, is the one product worth two cores
    (10k × 384 float32: 1.5 ms inside a search, where llama.cpp just pushed the
    matrix out of the cache). The helper blocks while idle; it never spins.
    The halves split at a multiple of :data:`SPLIT_ALIGN` rows: BLAS kernels take
    rows in small blocks and the last few rows of a product go through another
    kernel (last bits differ), so each row lands in the same kind of block either
    way and every cosine is the single product's to the bit.
    """
    global _helper
    if enabled and (os.cpu_count() or 1) >= 2:
        if _helper is None:
            _helper = ThreadPoolExecutor(1, thread_name_prefix="memdeck-scan")
        return True
    if _helper is not None:
        _helper.shutdown(wait=False)
        _helper = None
    return False


def split_scans_beside_one_blas_thread() -> bool:
    """Turn :func:`split_scans` on when numpy's BLAS runs on one thread, as the
    ``memdeck`` command sets it (``engine/blas.py``); True when on. The long-lived
    searchers call this: ``memdeck mcp`` and the app."""
    from engine.blas import blas_threads

    return blas_threads() == 1 and split_scans()


def _best(rows: np.ndarray, q: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(row numbers, scores) of the ``size`` rows of ``rows @ q`` that score highest,
    in no particular order.

    With :func:`split_scans` on, each half is scored and cut to its own best
    ``size`` on its own thread, and the two lists are cut again: the best ``size``
    of the whole are among the best ``size`` of the half each is in, so the rows
    are the single scan's. The halves meet at a multiple of :data:`SPLIT_ALIGN`
    rows (BLAS kernels take rows in small blocks and the last few rows of a product
    go through another kernel, whose last bits differ), so each row lands in the
    same kind of block either way and every score is the single product's to the
    bit. Cutting 100k scores costs about as much as scoring them.
    """
    n = rows.shape[0]
    size = min(size, n)
    helper = _helper
    if helper is None or n < SPLIT_FROM:
        return _best_of(rows, q, size)
    half = n // 2 // SPLIT_ALIGN * SPLIT_ALIGN
    second = helper.submit(_best_of, rows[half:], q, size)
    first_rows, first_scores = _best_of(rows[:half], q, size)
    second_rows, second_scores = second.result()
    found = np.concatenate([first_rows, second_rows + half])
    scores = np.concatenate([first_scores, second_scores])
    keep = _top(scores, size)
    return found[keep], scores[keep]


def _int8_scores(
    codes: np.ndarray, scales: np.ndarray, rows: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """The int8 approximation of ``rows``' dot products with ``q``, in their order;
    as two halves at once when :func:`split_scans` is on and the rows are many
    (each half meets the other at a multiple of :data:`SPLIT_ALIGN`, as in :func:`_best`)."""
    helper = _helper
    if helper is None or len(rows) < SPLIT_SHORTLIST_FROM:
        return _int8_part(codes, scales, rows, q)
    half = len(rows) // 2 // SPLIT_ALIGN * SPLIT_ALIGN
    second = helper.submit(_int8_part, codes, scales, rows[half:], q)
    first = _int8_part(codes, scales, rows[:half], q)
    return np.concatenate([first, second.result()])


def _int8_part(
    codes: np.ndarray, scales: np.ndarray, rows: np.ndarray, q: np.ndarray
) -> np.ndarray:
    return np.asarray((codes[rows].astype(np.float32) @ q) * scales[rows])


def _best_of(rows: np.ndarray, q: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_best` on this thread."""
    scores = np.asarray(rows @ q)
    keep = _top(scores, min(size, len(scores)))
    return keep, scores[keep]


def _top(scores: np.ndarray, size: int) -> np.ndarray:
    """Positions of the ``size`` highest of ``scores``, unordered (no full sort)."""
    n = len(scores)
    if size >= n:
        return np.arange(n)
    return np.argpartition(scores, n - size)[n - size :]


#: stored vectors of chunk ids (the ids without a stored vector are left out)
ReadVectors = Callable[[Sequence[int]], Mapping[int, np.ndarray]]
#: where the matrix reads its rows: a query on the store's ``chunks`` table
Rows = Callable[[str, Sequence[Any]], Sequence[Sequence[Any]]]


def shortlist_size(n: int, limit: int) -> int:
    """How many rows the first pass keeps for ``limit`` hits out of ``n``."""
    return min(n, max(SHORTLIST_PER_HIT * limit, math.ceil(n * SHORTLIST_FRACTION)))


def rescore_size(limit: int) -> int:
    """How many int8-ranked rows get their exact cosine computed."""
    return RESCORE_FACTOR * limit + RESCORE_EXTRA


def matrix_bytes(n: int, dims: int) -> int:
    """Bytes a matrix of ``n`` rows holds (ids and update marks included): float32
    rows below :data:`QUANTIZE_FROM`, int8 codes, two scales and the projections above."""
    per_row = 8 + 8  # ids, updated
    if n >= QUANTIZE_FROM:
        per_row += dims + 4 + 4 + min(PROJECTION_DIMS, dims) * 4
    else:
        per_row += dims * 4
    return n * per_row


def _quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and per-row scales with ``rows ≈ scales[:, None] * codes``."""
    peak = np.abs(rows).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(rows / scales[:, None]).astype(np.int8)
    return codes, scales


def principal_axes(blocks: Iterable[np.ndarray], dims: int, count: int) -> np.ndarray:
    """(dims × count) float32: the ``count`` principal axes of the rows in
    ``blocks``, as columns. Only the (dims × dims) moments are held, never a copy
    of the rows."""
    moments = np.zeros((dims, dims), dtype=np.float64)
    total = np.zeros(dims, dtype=np.float64)
    rows = 0
    for block in blocks:
        moments += (block.T @ block).astype(np.float64)
        total += block.sum(axis=0, dtype=np.float64)
        rows += len(block)
    mean = total / max(1, rows)
    _, axes = np.linalg.eigh(moments - rows * np.outer(mean, mean))  # ascending
    return np.ascontiguousarray(axes[:, ::-1][:, :count], dtype=np.float32)


@dataclass(frozen=True)
class _Page:
    """Rows read from ``chunks``: ids, ``updated_at``, vectors, and which are pooled
    with those rows' stored codes and scales (``chunk_vector_codec.DecodedRows``)."""

    ids: np.ndarray
    updated: np.ndarray
    vectors: np.ndarray
    compact: np.ndarray
    codes: np.ndarray
    scales: np.ndarray


class VectorMatrix:
    """Stored vectors in a preallocated buffer with spare rows.

    ``updated`` holds each row's ``chunks.updated_at``: a chunk id that was deleted
    and inserted again (SQLite reuses the highest rowids) is recognised as new.
    Rows are in no particular order.
    """

    def __init__(
        self,
        key: object,
        sources: tuple[str, ...],
        dims: int,
        capacity: int,
        *,
        quantized: bool,
    ):
        self.key = key
        self.sources = sources
        self.dims = dims
        self.quantized = quantized
        self.ids = np.empty(capacity, dtype=np.int64)
        self.updated = np.empty(capacity, dtype=np.float64)
        self.n = 0
        self.exact = np.empty((0 if quantized else capacity, dims), dtype=np.float32)
        self.codes = np.empty((capacity if quantized else 0, dims), dtype=np.int8)
        self.scales = np.empty(capacity if quantized else 0, dtype=np.float32)
        #: a pooled row's stored scale (its codes are the stored ones); NaN for a row
        #: whose stored vector is float32 (read from the table when rescored)
        self.stored_scales = np.empty(capacity if quantized else 0, dtype=np.float32)
        width = min(PROJECTION_DIMS, dims)
        self.projected = np.empty((capacity if quantized else 0, width), dtype=np.float32)
        self.axes = np.zeros((dims, width), dtype=np.float32)

    @property
    def capacity(self) -> int:
        return len(self.ids)

    def nbytes(self) -> int:
        """Bytes held by the rows' buffers."""
        parts = (
            self.ids,
            self.updated,
            self.exact,
            self.codes,
            self.scales,
            self.stored_scales,
            self.projected,
        )
        return sum(a.nbytes for a in parts)

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, rows) in memory: float32 rows, or the int8 codes times their scales."""
        ids = self.ids[: self.n]
        if not self.quantized:
            return ids, self.exact[: self.n]
        return ids, self.approx(slice(0, self.n))

    def _marks(self) -> str:
        return ",".join("?" * len(self.sources))

    # -- building -------------------------------------------------------------------
    def _put(self, page: _Page, *, project: bool = True) -> None:
        """Append a page of rows (the caller checked the capacity), projected on
        ``self.axes`` unless ``project`` is false (a load projects once it knows the
        axes)."""
        at, count = self.n, len(page.ids)
        self.ids[at : at + count] = page.ids
        self.updated[at : at + count] = page.updated
        if self.quantized:
            codes, scales = _quantize(page.vectors)
            stored = np.full(count, np.nan, dtype=np.float32)
            pooled = page.compact
            if pooled.any():  # a pooled vector: its own codes, and its scale kept
                codes[pooled] = page.codes
                stored[pooled] = page.scales
                length = np.linalg.norm(page.codes * page.scales[:, None], axis=1)
                scales[pooled] = np.where(length > 0, page.scales / length, 0.0)
            self.codes[at : at + count] = codes
            self.scales[at : at + count] = scales
            self.stored_scales[at : at + count] = stored
            if project:
                self.projected[at : at + count] = (codes * scales[:, None]) @ self.axes
        else:
            self.exact[at : at + count] = page.vectors
        self.n += count

    def _decode(self, rows: Sequence[Sequence[Any]]) -> _Page:
        """The rows whose blob has this matrix's size (a wrong-sized row is skipped,
        not fatal), and of them the pooled ones' stored codes and scales."""
        present = [r for r in rows if r[2] is not None]
        got = chunk_vector_codec.decode_parts([r[2] for r in present], self.dims)
        good = [r for r, fits in zip(present, got.ok, strict=True) if fits]
        page = _Page(
            np.fromiter((r[0] for r in good), dtype=np.int64, count=len(good)),
            np.fromiter((r[1] for r in good), dtype=np.float64, count=len(good)),
            got.vectors,
            got.compact,
            got.codes,
            got.scales,
        )
        finite = np.isfinite(page.vectors).all(axis=1)
        if finite.all():
            return page
        # damaged bytes: never ranked (``Store.check`` reports them)
        pooled_finite = finite[page.compact]
        return _Page(
            page.ids[finite],
            page.updated[finite],
            np.ascontiguousarray(page.vectors[finite]),
            page.compact[finite],
            page.codes[pooled_finite],
            page.scales[pooled_finite],
        )

    @classmethod
    def load(
        cls,
        rows: Rows,
        count: int,
        key: object,
        sources: tuple[str, ...],
        dims: int,
        *,
        quantize_from: int | None = None,
    ) -> VectorMatrix:
        """Read every vector in pages straight into the buffer (peak ≈ one matrix).

        ``count`` is the number of stored vectors now (rows that arrive while
        loading cost another pass); at ``quantize_from`` (default
        ``QUANTIZE_FROM``) rows or more the matrix is quantized.
        """
        threshold = QUANTIZE_FROM if quantize_from is None else quantize_from
        while True:
            vm = cls._load_once(rows, count, key, sources, dims, threshold)
            if isinstance(vm, VectorMatrix):
                return vm
            count = vm

    @classmethod
    def _load_once(
        cls,
        rows: Rows,
        count: int,
        key: object,
        sources: tuple[str, ...],
        dims: int,
        quantize_from: int,
    ) -> VectorMatrix | int:
        quantized = count >= quantize_from
        vm = cls(key, sources, dims, count + max(64, count // 50), quantized=quantized)
        last = -(2**63)
        while True:
            page = rows(
                "select id, updated_at, embedding from chunks where embedding is not null"
                f" and id > ? and source in ({vm._marks()}) order by id limit {PAGE}",
                [last, *sources],
            )
            if not page:
                break
            last = page[-1][0]
            got = vm._decode(page)
            if vm.n + len(got.ids) > vm.capacity:  # grew while loading: one more pass
                return vm.n + len(got.ids) + count // 10
            vm._put(got, project=False)
        if quantized and vm.n:
            # the axes come from the rows loaded (a strided sample of them); rows
            # added by later edits are projected on the same axes
            step = max(1, vm.n // AXES_SAMPLE)
            sample = range(0, vm.n, step * PAGE // 8)
            vm.axes = principal_axes(
                (vm.approx(slice(i, min(vm.n, i + step * PAGE // 8), step)) for i in sample),
                dims,
                vm.axes.shape[1],
            )
            for start in range(0, vm.n, PAGE):
                part = slice(start, min(vm.n, start + PAGE))
                vm.projected[part] = vm.approx(part) @ vm.axes
        return vm

    def approx(self, rows: slice | np.ndarray) -> np.ndarray:
        """float32 rows from the int8 codes and their scales."""
        return self.codes[rows].astype(np.float32) * self.scales[rows, None]

    def refresh(self, rows: Rows, key: object) -> bool:
        """Apply the table's changes in place; False when a full reload is better."""
        listing = rows(
            "select id, updated_at, null from chunks where embedding is not null"
            f" and source in ({self._marks()})",
            list(self.sources),
        )
        cur_ids = np.fromiter((r[0] for r in listing), dtype=np.int64, count=len(listing))
        cur_upd = np.fromiter((r[1] for r in listing), dtype=np.float64, count=len(listing))
        n = self.n
        if n == 0:
            return False
        order = np.argsort(self.ids[:n], kind="stable")
        sorted_ids = self.ids[:n][order]
        pos = np.searchsorted(sorted_ids, cur_ids)
        pos_ok = pos < n
        found = np.zeros(len(cur_ids), dtype=bool)
        found[pos_ok] = sorted_ids[pos[pos_ok]] == cur_ids[pos_ok]
        rows_of_cur = np.where(found, order[np.minimum(pos, n - 1)], -1)
        same = found & (self.updated[np.maximum(rows_of_cur, 0)] == cur_upd)
        keep = np.zeros(n, dtype=bool)
        keep[rows_of_cur[same]] = True
        added = cur_ids[~same]
        holes = np.flatnonzero(~keep)
        if len(added) + len(holes) > max(1000, n // 4):
            return False
        if n - len(holes) + len(added) > self.capacity:
            return False
        # Fill holes by moving the last rows into them (order does not matter).
        for h in holes[::-1]:
            self._move(self.n - 1, int(h))
            self.n -= 1
        for start in range(0, len(added), 500):
            part = [int(i) for i in added[start : start + 500]]
            marks = ",".join("?" * len(part))
            got = rows(f"select id, updated_at, embedding from chunks where id in ({marks})", part)
            self._put(self._decode(got))
        self.key = key
        return True

    def _move(self, src: int, dst: int) -> None:
        if src == dst:
            return
        self.ids[dst] = self.ids[src]
        self.updated[dst] = self.updated[src]
        if self.quantized:
            self.codes[dst] = self.codes[src]
            self.scales[dst] = self.scales[src]
            self.stored_scales[dst] = self.stored_scales[src]
            self.projected[dst] = self.projected[src]
        else:
            self.exact[dst] = self.exact[src]

    # -- searching ------------------------------------------------------------------
    def search(
        self, q: np.ndarray, limit: int, read_vectors: ReadVectors
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the ``limit`` best rows, best first.

        ``read_vectors`` gives the stored vectors the quantized scan rescores
        with; the exact scan never calls it.
        """
        n = self.n
        if n == 0 or q.shape[0] != self.dims or limit <= 0:
            return []
        q = np.ascontiguousarray(q, dtype=np.float32)
        if not self.quantized:
            # One sgemv over the C-contiguous float32 rows (no copy, no promotion:
            # the query is float32 too; two halves at once when split_scans is on),
            # bound by memory bandwidth; then the k best without sorting the rest.
            top, sims = _best(self.exact[:n], q, limit)
            order = np.lexsort((top, -sims))  # best first, ties by row
            return [(int(self.ids[top[i]]), float(sims[i])) for i in order]
        shortlist = self.shortlist(q, shortlist_size(n, limit))
        approx = _int8_scores(self.codes, self.scales, shortlist, q)
        keep = min(len(shortlist), rescore_size(limit))
        if keep < len(shortlist):
            best = np.argpartition(-approx, keep - 1)[:keep]
            shortlist = shortlist[best]
        held = self.stored_scales[shortlist]
        inline = np.isfinite(held)  # pooled rows: the stored vector made again here
        scored = [
            (int(cid), float(np.dot(vec, q)))
            for cid, vec in zip(
                self.ids[shortlist[inline]],
                chunk_vector_codec.from_codes(self.codes[shortlist[inline]], held[inline]),
                strict=True,
            )
        ]
        wanted = [int(i) for i in self.ids[shortlist[~inline]]]
        stored = read_vectors(wanted) if wanted else {}
        for cid in wanted:
            vec = stored.get(cid)
            if vec is not None and vec.shape == q.shape and np.isfinite(vec).all():
                scored.append((cid, float(np.dot(vec, q))))
        scored.sort(key=lambda hit: (-hit[1], hit[0]))
        return scored[:limit]

    def shortlist(self, q: np.ndarray, size: int) -> np.ndarray:
        """Row numbers of the ``size`` rows whose projections score best against
        the query's (one matrix-vector product over the projections)."""
        n = self.n
        if size >= n:
            return np.arange(n)
        return _best(self.projected[:n], q @ self.axes, size)[0]
