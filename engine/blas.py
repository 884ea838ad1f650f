"""numpy's BLAS on one thread in memdeck's processes.

numpy's OpenBLAS starts a thread per core when it loads and, after each call it
spreads over them, keeps those threads spinning for a while before they sleep.
memdeck's products are matrix-vector ones (the vector side of a search, a few
normalisations while indexing) that a second BLAS thread barely speeds up, while
the spinning thread takes a core from llama.cpp's threads and SQLite beside it.
Measured on 2 cores, one ``memdeck search --mode fts`` process: 0.52 CPU-s and
0.40 s wall with OpenBLAS's default, 0.35 CPU-s and 0.34 s with one thread
(docs/benchmarks/2026-11-27-cost.md); in the MCP server one thread took the
10,000-chunk ``memory_search`` from 12.2 to 10.3 ms at p50.

So the ``memdeck`` command asks for one thread before numpy loads
(:func:`one_blas_thread`, the command line's first step), through
``OPENBLAS_NUM_THREADS``, the variable OpenBLAS reads when it loads: a process
the command starts inherits it. A process that already loaded numpy (a host
embedding the engine) can use :func:`limit_blas_threads`, OpenBLAS's own
``set_num_threads`` on the library numpy loaded (found beside numpy, as its
wheels ship it). An ``OPENBLAS_NUM_THREADS`` the user set is their choice and is
left alone by both; a numpy built on another BLAS is left alone too.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

#: the variable OpenBLAS reads when it loads
THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GETTERS = tuple(name.replace("set_num", "get_num") for name in _SETTERS)


def _openblas() -> ctypes.CDLL | None:
    """numpy's OpenBLAS (already loaded: this returns the same handle), if it has one."""
    import numpy as np

    base = Path(np.__file__).parent
    for folder in (base.parent / "numpy.libs", base / ".dylibs"):
        if not folder.is_dir():
            continue
        for lib in sorted(folder.iterdir()):
            if "openblas" not in lib.name:
                continue
            try:
                return ctypes.CDLL(str(lib))
            except OSError:
                continue
    return None


def blas_threads() -> int | None:
    """How many threads numpy's OpenBLAS uses (None: not OpenBLAS, or not found)."""
    lib = _openblas()
    for name in _GETTERS if lib is not None else ():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            return int(fn())
    return None


def limit_blas_threads(n: int = 1) -> bool:
    """Run numpy's BLAS on ``n`` threads; False when left as it was (see the module doc)."""
    if os.environ.get(THREADS_VARIABLE):
        return False
    lib = _openblas()
    for name in _SETTERS if lib is not None else ():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn(ctypes.c_int(n))
            return True
    return False


def one_blas_thread() -> bool:
    """Have numpy's OpenBLAS load with one thread; True when this set it.

    Before numpy is imported only: in a process that loaded it already the host
    chose (see :func:`limit_blas_threads`). A value the user set is kept."""
    if os.environ.get(THREADS_VARIABLE) or "numpy" in sys.modules:
        return False
    os.environ[THREADS_VARIABLE] = "1"
    return True
