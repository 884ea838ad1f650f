"""How a chunk's vector is kept in ``chunks.embedding``: float32, or 8 bits with a scale.

A vector the model gave for a chunk's text stays float32 (``dims × 4`` bytes): the
embedding cache shares it byte for byte with its entry, and the ``openclaw``
profile's cosines must equal OpenClaw's. A vector memdeck pooled from the chunk's
unit vectors (``engine.index.pooled_chunks``) is memdeck's own, made from 5-bit
rows, so it is kept compact: ``dims`` int8 codes, then one float32 scale (the
largest magnitude ÷ 127), ``dims + 4`` bytes (388 at 384 dimensions against 1,536),
read back scaled to length 1 as the model's are.
The two sizes never coincide, so a blob says which it is; a blob of neither size
is damage (``Store.check`` reports it, the search skips it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.index.line_codec import unit_rows

#: the largest code: a vector's largest magnitude is coded ±LEVELS
LEVELS = 127


def compact_size(dims: int) -> int:
    return dims + 4


def encode(vec: np.ndarray, *, compact: bool) -> bytes:
    """The blob of ``vec``: float32, or (``compact``) int8 codes and a float32 scale."""
    v = np.asarray(vec, dtype=np.float32).reshape(-1)
    if not compact:
        return bytes(v.tobytes())
    peak = float(np.abs(v).max()) if v.size else 0.0
    scale = np.float32(peak / LEVELS if peak > 0 else 1.0)
    codes = np.clip(np.rint(v / scale), -LEVELS, LEVELS).astype(np.int8)
    return bytes(codes.tobytes() + np.asarray([scale], dtype=np.float32).tobytes())


def decode(blob: bytes, dims: int) -> np.ndarray | None:
    """The vector of one blob, or None when it is neither size for ``dims``."""
    ok, rows = decode_rows([blob], dims)
    return rows[0] if ok[0] else None


@dataclass(frozen=True)
class DecodedRows:
    """Blobs decoded together. ``vectors`` are those of the blobs of either size, in
    order; of them, the ``compact`` ones also keep their stored ``codes`` and
    ``scales`` (rows in the same order), from which :func:`from_codes` makes their
    vectors again to the bit."""

    ok: np.ndarray  # per blob: either size
    vectors: np.ndarray  # (kept × dims) float32
    compact: np.ndarray  # per kept row: an 8-bit blob
    codes: np.ndarray  # (compact rows × dims) int8
    scales: np.ndarray  # (compact rows) float32


def decode_rows(blobs: Sequence[bytes], dims: int) -> tuple[np.ndarray, np.ndarray]:
    """(which blobs were either size, their vectors as one float32 matrix in order)."""
    got = decode_parts(blobs, dims)
    return got.ok, got.vectors


def decode_parts(blobs: Sequence[bytes], dims: int) -> DecodedRows:
    """:func:`decode_rows`, with the compact blobs' codes and scales as stored."""
    ok = np.fromiter(
        (len(b) in (dims * 4, compact_size(dims)) for b in blobs), dtype=bool, count=len(blobs)
    )
    kept = [b for b, good in zip(blobs, ok, strict=True) if good]
    out = np.empty((len(kept), dims), dtype=np.float32)
    compact = np.fromiter((len(b) != dims * 4 for b in kept), dtype=bool, count=len(kept))
    wide = np.flatnonzero(~compact)
    narrow = np.flatnonzero(compact)
    if len(wide):
        out[wide] = np.frombuffer(b"".join(kept[i] for i in wide), dtype=np.float32).reshape(
            len(wide), dims
        )
    codes = np.empty((0, dims), dtype=np.int8)
    scales = np.empty(0, dtype=np.float32)
    if len(narrow):
        raw = np.frombuffer(b"".join(kept[i] for i in narrow), dtype=np.uint8)
        raw = raw.reshape(len(narrow), dims + 4)
        codes = np.ascontiguousarray(raw[:, :dims]).view(np.int8)
        scales = np.ascontiguousarray(raw[:, dims:]).view(np.float32).reshape(-1)
        out[narrow] = from_codes(codes, scales)
    return DecodedRows(ok, out, compact, codes, scales)


def from_codes(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Compact rows' vectors from their int8 codes and scales, read back at length 1
    (each row's value depends on that row alone)."""
    return unit_rows(codes.astype(np.float32) * scales[:, None])
