"""How a chunk's unit vectors are stored: 5-bit codes with a scale and a key per unit.

The calibrated ranking embeds every unit (line or paragraph) of every chunk, so
these matrices are most of an index. As float32 they were stored twice (the
matrix and every unit in the embedding cache) and made a chat log's index ~39
times its Markdown. Now they are stored once, each row as 5-bit codes (−15…15) and
one float32 scale (the row's largest magnitude ÷ 15): 252 bytes a unit at 384
dimensions, against 396 in 8 bits and 1,536 in float32. Rows of codes are read back
scaled to length 1, as the model gives them. LoCoMo, Cranfield, the
names benchmark and the off-topic queries rank as with 8 bits; 4 bits lost 0.3–0.4
point of LoCoMo ([size options](../../docs/benchmarks/2026-11-29-size-options.md),
[pooled chunks](../../docs/benchmarks/2026-11-29-pooled-chunks.md)). The breakdown
prints the decoded cosines, so its arithmetic adds up as before.

Each row carries the first 8 bytes of its unit text's sha256, so a chunk that was
edited gets the vectors of its unchanged units back from its old matrix instead
of from the embedding provider (``engine.index.line_vectors``).

Layout of one blob for ``lines`` units of ``dims`` numbers, with ``dims`` rounded
up to a multiple of 8 (``padded``): ``lines`` uint64 unit keys, ``lines`` float32
scales, then per unit its codes + 15 (0…30) in two planes, the low four bits two
to a byte (``padded ÷ 2`` bytes, the first number in the low half) and the fifth
bit eight to a byte (``padded ÷ 8`` bytes, the first number in the lowest bit).
Three older layouts are read as they are: keys, scales and ``lines × dims`` int8
codes (the scale the largest magnitude ÷ 127); keys then ``lines × dims`` float16;
``lines × dims`` float32 without keys.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

#: bytes per unit besides its numbers: the key
_KEY_BYTES = 8


class LineMatrix(NamedTuple):
    """A chunk's unit vectors (units × dims) and each unit's :func:`unit_key`."""

    matrix: np.ndarray
    keys: tuple[int, ...]


def unit_key(text: str) -> int:
    """The first 8 bytes of ``text``'s sha256 as an unsigned integer."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


#: the largest code: a row's largest magnitude is coded ±LEVELS
LEVELS = 15


def _padded(dims: int) -> int:
    return -(-dims // 8) * 8


def _code_bytes(dims: int) -> int:
    """Bytes of one unit's 5-bit codes (both planes)."""
    return _padded(dims) // 2 + _padded(dims) // 8


def encode(matrix: np.ndarray, keys: list[int]) -> bytes:
    """One blob for ``matrix`` (units × dims) and its units' keys."""
    mat = np.ascontiguousarray(matrix, dtype=np.float32)
    lines, dims = mat.shape
    if lines == 0:
        return b""
    if dims <= 4:  # the layouts' sizes would collide: float32 as it is
        return bytes(mat.tobytes())
    peak = np.abs(mat).max(axis=1)
    scale = np.where(peak > 0, peak / LEVELS, 1.0).astype(np.float32)
    codes = np.zeros((lines, _padded(dims)), dtype=np.uint8)
    codes[:, :dims] = np.clip(np.rint(mat / scale[:, None]), -LEVELS, LEVELS) + LEVELS
    low = (codes[:, 0::2] & 15) | ((codes[:, 1::2] & 15) << 4)
    high = np.packbits(codes >> 4, axis=1, bitorder="little")
    body = np.concatenate([low, high], axis=1)
    return b"".join([np.asarray(keys, dtype=np.uint64).tobytes(), scale.tobytes(), body.tobytes()])


def decode_matrices(blobs: list[tuple[bytes, int, int]]) -> list[np.ndarray | None]:
    """The matrices of many (blob, lines, dims), in order; None for a blob of no
    layout. A search reads ~50 candidates' matrices: the 5-bit ones of one width are
    decoded together, which costs a fraction of decoding each on its own."""
    out: list[np.ndarray | None] = [None] * len(blobs)
    groups: dict[int, list[int]] = {}
    for i, (blob, lines, dims) in enumerate(blobs):
        if dims > 4 and lines and len(blob) == lines * (_KEY_BYTES + 4 + _code_bytes(dims)):
            groups.setdefault(dims, []).append(i)
        else:
            try:
                out[i] = decode(blob, lines, dims)[0]
            except ValueError:
                out[i] = None
    for dims, members in groups.items():
        width = _code_bytes(dims)
        scales, bodies, sizes = [], [], []
        for i in members:
            blob, lines, _ = blobs[i]
            scales.append(
                np.frombuffer(blob, dtype=np.float32, count=lines, offset=_KEY_BYTES * lines)
            )
            bodies.append(np.frombuffer(blob, dtype=np.uint8, offset=(_KEY_BYTES + 4) * lines))
            sizes.append(lines)
        rows = _rows_5bit(np.concatenate(bodies).reshape(-1, width), np.concatenate(scales), dims)
        at = 0
        for i, n in zip(members, sizes, strict=True):
            out[i] = rows[at : at + n]
            at += n
    return out


def _rows_5bit(body: np.ndarray, scale: np.ndarray, dims: int) -> np.ndarray:
    """Rows of 5-bit codes (both planes, one row per unit) times their scales."""
    half = _padded(dims) // 2
    low, high = body[:, :half], body[:, half:]
    codes = np.empty((body.shape[0], _padded(dims)), dtype=np.int16)
    codes[:, 0::2] = low & 15
    codes[:, 1::2] = low >> 4
    codes |= np.unpackbits(high, axis=1, bitorder="little").astype(np.int16) << 4
    out = (codes[:, :dims] - LEVELS).astype(np.float32)
    out *= scale[:, None]
    return unit_rows(out)


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """Float32 rows scaled back to length 1 in place, as the model gives them. Codes
    move a row's length by up to a few hundredths, which a cosine read from it would
    carry (a chunk of one unit, whose pooled vector is that unit's, showed a cosine
    of 1.0026 with it)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows /= np.where(norms > 0, norms, 1.0)
    return rows


def _decode_5bit(blob: bytes, lines: int, dims: int) -> np.ndarray:
    scale = np.frombuffer(blob, dtype=np.float32, count=lines, offset=_KEY_BYTES * lines)
    body = np.frombuffer(blob, dtype=np.uint8, offset=(_KEY_BYTES + 4) * lines)
    return _rows_5bit(body.reshape(lines, _code_bytes(dims)), scale, dims)


def is_current(blob: bytes, lines: int, dims: int) -> bool:
    """Whether a blob is in the layout :func:`encode` writes now."""
    if dims <= 4:
        return len(blob) == lines * dims * 4
    return len(blob) == lines * (_KEY_BYTES + 4 + _code_bytes(dims))


def decode(blob: bytes, lines: int, dims: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(units × dims float32 matrix, unit keys or None for a float32 blob)."""
    if len(blob) == lines * dims * 4:
        return np.frombuffer(blob, dtype=np.float32).reshape(lines, dims), None
    keys = np.frombuffer(blob, dtype=np.uint64, count=lines)
    if len(blob) == lines * (_KEY_BYTES + 4 + _code_bytes(dims)):
        return _decode_5bit(blob, lines, dims), keys
    if len(blob) == lines * (_KEY_BYTES + 4 + dims):
        scale = np.frombuffer(blob, dtype=np.float32, count=lines, offset=_KEY_BYTES * lines)
        codes = np.frombuffer(blob, dtype=np.int8, offset=(_KEY_BYTES + 4) * lines)
        return unit_rows(codes.reshape(lines, dims).astype(np.float32) * scale[:, None]), keys
    if len(blob) == lines * (2 * dims + _KEY_BYTES):
        half = np.frombuffer(blob, dtype=np.float16, offset=_KEY_BYTES * lines)
        return half.astype(np.float32).reshape(lines, dims), keys
    raise ValueError(f"a line-vector blob of {len(blob)} bytes for {lines}×{dims}")
