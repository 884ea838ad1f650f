"""The server's BLAS thread limit (engine/mcp/blas.py) on the OpenBLAS numpy really loaded."""

from __future__ import annotations

import ctypes

import pytest

from engine.mcp import blas


@pytest.fixture
def threads_before():
    before = blas.blas_threads()
    if before is None:
        pytest.skip("numpy here is not built on a bundled OpenBLAS")
    yield before
    lib = blas._openblas()
    for name in blas._SETTERS:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn(ctypes.c_int(before))
            break


def test_limits_numpys_openblas_to_one_thread(threads_before, monkeypatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert blas.limit_blas_threads(1) is True
    assert blas.blas_threads() == 1


def test_an_explicit_openblas_num_threads_is_left_alone(threads_before, monkeypatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    assert blas.limit_blas_threads(1) is False
    assert blas.blas_threads() == threads_before
