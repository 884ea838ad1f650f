"""Unit-vector blobs (``engine.index.line_codec``): the 5-bit layout and the older ones."""

from __future__ import annotations

import numpy as np
import pytest

from engine.index import line_codec

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dims", [5, 6, 8, 13, 384])
def test_each_number_comes_back_within_half_a_step(dims: int) -> None:
    mat = RNG.normal(size=(9, dims)).astype(np.float32)
    keys = [int(k) for k in RNG.integers(0, 2**63, size=9)]
    blob = line_codec.encode(mat, keys)
    padded = -(-dims // 8) * 8
    # key, scale, then the low four bits two to a byte and the fifth eight to a byte
    assert len(blob) == 9 * (8 + 4 + padded // 2 + padded // 8)
    back, got_keys = line_codec.decode(blob, 9, dims)
    # the codes: each number within half a step of the row's (step = its peak ÷ 15),
    # the peak itself exactly ±15 steps; read back scaled to length 1
    step = np.abs(mat).max(axis=1, keepdims=True) / 15
    coded = np.rint(mat / step) * step
    assert np.all(np.abs(coded - mat) <= step / 2 + 1e-6)
    assert np.allclose(back, coded / np.linalg.norm(coded, axis=1, keepdims=True), atol=1e-6)
    assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-6)
    assert got_keys is not None and [int(k) for k in got_keys] == keys


def test_384_dimensions_take_252_bytes_a_unit() -> None:
    mat = RNG.normal(size=(3, 384)).astype(np.float32)
    assert len(line_codec.encode(mat, [1, 2, 3])) == 3 * 252


def test_a_known_row_in_both_planes() -> None:
    # codes −15, −1, 0, 1, 15, 7, −8, 2 (scale 1) + 15 → 0, 14, 15, 16, 30, 22, 7, 17
    row = np.array([[-15, -1, 0, 1, 15, 7, -8, 2]], dtype=np.float32)
    blob = line_codec.encode(row, [0])
    body = blob[8 + 4 :]
    low = [c & 15 for c in (0, 14, 15, 16, 30, 22, 7, 17)]
    assert list(body[:4]) == [low[0] | low[1] << 4, low[2] | low[3] << 4,
                              low[4] | low[5] << 4, low[6] | low[7] << 4]  # fmt: skip
    # fifth bits: 16, 30, 22 and 17 have it (numbers 3, 4, 5 and 7)
    assert body[4] == 0b10111000
    assert np.allclose(line_codec.decode(blob, 1, 8)[0], row / np.linalg.norm(row), atol=1e-7)


def test_the_older_layouts_read_as_they_are() -> None:
    mat = RNG.normal(size=(4, 16)).astype(np.float32)
    keys = np.arange(4, dtype=np.uint64)
    # 8-bit codes with a scale (the layout before 5 bits)
    scale = (np.abs(mat).max(axis=1) / 127).astype(np.float32)
    codes = np.rint(mat / scale[:, None]).astype(np.int8)
    back, got = line_codec.decode(keys.tobytes() + scale.tobytes() + codes.tobytes(), 4, 16)
    coded = codes * scale[:, None]
    assert got is not None
    assert np.allclose(back, coded / np.linalg.norm(coded, axis=1, keepdims=True), atol=1e-6)
    # float16 with keys, float32 without
    half = keys.tobytes() + mat.astype(np.float16).tobytes()
    assert np.allclose(line_codec.decode(half, 4, 16)[0], mat, atol=1e-2)
    back32, none = line_codec.decode(mat.tobytes(), 4, 16)
    assert none is None and np.array_equal(back32, mat)
    with pytest.raises(ValueError, match="a line-vector blob of 100 bytes"):
        line_codec.decode(b"\0" * 100, 4, 16)


def test_many_matrices_decode_as_each_alone() -> None:
    """A search decodes its candidates' matrices together: the same rows, in order,
    whatever the layout; a blob of no layout is None."""
    five = [RNG.normal(size=(n, 384)).astype(np.float32) for n in (3, 1, 7)]
    blobs = [(line_codec.encode(m, list(range(len(m)))), len(m), 384) for m in five]
    small = RNG.normal(size=(2, 6)).astype(np.float32)
    blobs.insert(1, (line_codec.encode(small, [0, 1]), 2, 6))
    eight = RNG.normal(size=(2, 16)).astype(np.float32)
    scale = (np.abs(eight).max(axis=1) / 127).astype(np.float32)
    codes = np.rint(eight / scale[:, None]).astype(np.int8)
    blobs.append(
        (np.arange(2, dtype=np.uint64).tobytes() + scale.tobytes() + codes.tobytes(), 2, 16)
    )
    blobs.append((b"\0" * 100, 4, 16))
    got = line_codec.decode_matrices(blobs)
    for (blob, lines, dims), mat in zip(blobs[:-1], got[:-1], strict=True):
        assert mat is not None and np.array_equal(mat, line_codec.decode(blob, lines, dims)[0])
    assert got[-1] is None
