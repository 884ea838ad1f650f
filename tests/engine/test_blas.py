"""numpy's BLAS on one thread (engine/blas.py), on the OpenBLAS numpy really loaded."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import pytest

from engine import blas


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


def _command_then_threads(tmp_path, env_threads: str | None) -> tuple[str, int]:
    """Run ``memdeck status`` through the command's entry point in a fresh process,
    then report the variable and the thread count of the OpenBLAS it loaded."""
    env = {k: v for k, v in os.environ.items() if k != blas.THREADS_VARIABLE}
    env.update(HOME=str(tmp_path), MEMDECK_HOME=str(tmp_path / "memdeck"))
    if env_threads is not None:
        env[blas.THREADS_VARIABLE] = env_threads
    (tmp_path / "ws").mkdir(exist_ok=True)
    code = (
        "import contextlib, io, json, os, sys\n"
        "from engine.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['-w', {str(tmp_path / 'ws')!r}, 'status', '--json'])\n"
        "from engine.blas import blas_threads\n"
        "assert 'numpy' in sys.modules\n"
        "print(json.dumps([os.environ.get('OPENBLAS_NUM_THREADS'), blas_threads()]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    variable, threads = json.loads(out.stdout.splitlines()[-1])
    return variable, threads


def test_the_command_loads_numpy_with_one_blas_thread(threads_before, tmp_path) -> None:
    assert _command_then_threads(tmp_path, None) == ("1", 1)


def test_the_command_keeps_the_users_blas_threads(threads_before, tmp_path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("OpenBLAS keeps to one thread on one core")
    assert _command_then_threads(tmp_path, "2") == ("2", 2)
