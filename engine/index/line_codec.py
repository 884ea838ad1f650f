"""How a chunk's unit vectors are stored: half-precision rows with a key per unit.

The calibrated ranking embeds every unit (line or paragraph) of every chunk, so
these matrices are most of an index. As float32 they were stored twice (the
matrix and every unit in the embedding cache) and made a chat log's index ~39
times its Markdown. Now they are stored once, as float16: half the bytes, and a
cosine taken from the decoded rows differs from float32's by about 1e-4 (a unit
vector's components are well inside half precision's range). 8-bit codes would
halve that again, but move cosines in the third decimal, which changes the
numbers a user checks by hand in the breakdown.

Each row carries the first 8 bytes of its unit text's sha256, so a chunk that was
edited gets the vectors of its unchanged units back from its old matrix instead
of from the embedding provider (``engine.index.line_vectors``).

Layout of one blob for ``lines`` units of ``dims`` numbers: ``lines`` uint64 unit
keys, then ``lines × dims`` float16. A blob of ``lines × dims`` float32 (what
older indexes hold) is read as it is, without keys.
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
    if dims * 4 == dims * 2 + _KEY_BYTES:  # 4 dimensions: the two layouts would be one size
        return bytes(mat.tobytes())
    parts: list[bytes] = [np.asarray(keys, dtype=np.uint64).tobytes()]
    return b"".join([*parts, mat.astype(np.float16).tobytes()])


def decode(blob: bytes, lines: int, dims: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(units × dims float32 matrix, unit keys or None for a float32 blob)."""
    if len(blob) == lines * dims * 4:
        return np.frombuffer(blob, dtype=np.float32).reshape(lines, dims), None
    if len(blob) != lines * (2 * dims + _KEY_BYTES):
        raise ValueError(f"a line-vector blob of {len(blob)} bytes for {lines}×{dims}")
    keys = np.frombuffer(blob, dtype=np.uint64, count=lines)
    half = np.frombuffer(blob, dtype=np.float16, offset=_KEY_BYTES * lines)
    return half.astype(np.float32).reshape(lines, dims), keys
