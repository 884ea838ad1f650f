"""How a chunk's unit vectors are stored: 8-bit codes with a scale and a key per unit.

The calibrated ranking embeds every unit (line or paragraph) of every chunk, so
these matrices are most of an index. As float32 they were stored twice (the
matrix and every unit in the embedding cache) and made a chat log's index ~39
times its Markdown. Now they are stored once, each row as 8-bit codes and one
float32 scale (the row's largest magnitude ÷ 127): a quarter of float32's bytes.
A cosine taken from the decoded rows differs from float32's by at most ~0.002
(p99 0.001 over LoCoMo conversation 5's 780 units against 200 perturbed queries),
and the LoCoMo, Cranfield, off-topic and names benchmarks rank as with float16
(docs/benchmarks/2026-11-28-cost.md). The breakdown prints the decoded cosines,
so its arithmetic adds up as before.

Each row carries the first 8 bytes of its unit text's sha256, so a chunk that was
edited gets the vectors of its unchanged units back from its old matrix instead
of from the embedding provider (``engine.index.line_vectors``).

Layout of one blob for ``lines`` units of ``dims`` numbers: ``lines`` uint64 unit
keys, ``lines`` float32 scales, then ``lines × dims`` int8 codes. Two older
layouts are read as they are: keys then ``lines × dims`` float16, and ``lines ×
dims`` float32 without keys.
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


def encode(matrix: np.ndarray, keys: list[int]) -> bytes:
    """One blob for ``matrix`` (units × dims) and its units' keys."""
    mat = np.ascontiguousarray(matrix, dtype=np.float32)
    lines, dims = mat.shape
    if lines == 0:
        return b""
    if dims <= 4:  # the layouts' sizes would collide: float32 as it is
        return bytes(mat.tobytes())
    peak = np.abs(mat).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(mat / scale[:, None]), -127, 127).astype(np.int8)
    return b"".join([np.asarray(keys, dtype=np.uint64).tobytes(), scale.tobytes(), codes.tobytes()])


def decode(blob: bytes, lines: int, dims: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(units × dims float32 matrix, unit keys or None for a float32 blob)."""
    if len(blob) == lines * dims * 4:
        return np.frombuffer(blob, dtype=np.float32).reshape(lines, dims), None
    keys = np.frombuffer(blob, dtype=np.uint64, count=lines)
    if len(blob) == lines * (_KEY_BYTES + 4 + dims):
        scale = np.frombuffer(blob, dtype=np.float32, count=lines, offset=_KEY_BYTES * lines)
        codes = np.frombuffer(blob, dtype=np.int8, offset=(_KEY_BYTES + 4) * lines)
        return codes.reshape(lines, dims).astype(np.float32) * scale[:, None], keys
    if len(blob) == lines * (2 * dims + _KEY_BYTES):
        half = np.frombuffer(blob, dtype=np.float16, offset=_KEY_BYTES * lines)
        return half.astype(np.float32).reshape(lines, dims), keys
    raise ValueError(f"a line-vector blob of {len(blob)} bytes for {lines}×{dims}")
