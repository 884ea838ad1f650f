"""One BLAS thread for the server process.

numpy's OpenBLAS starts a thread per core and, after each call it spreads over
them, keeps those threads spinning for a while before they sleep. A search
runs one matrix-vector product (the vector side) and, beside it, the query
embedding on a llama.cpp thread and SQLite on the calling thread: on two cores
the spinning BLAS thread takes a core from them. With one BLAS thread the
in-process ``memory_search`` on the 10,000-chunk benchmark went from 12.2 to
10.3 ms at p50 (README "MCP: memory_search per call"); the product itself got
0.3 ms slower. A server answers many searches, often at once, so it runs BLAS on
one thread, as the process's callers already share the cores.

The thread count is set through OpenBLAS's own ``set_num_threads`` on the
library numpy loaded (found beside numpy, as its wheels ship it). An explicit
``OPENBLAS_NUM_THREADS`` in the environment is the user's choice and is left
alone; a numpy built on another BLAS is left alone too.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

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
    if os.environ.get("OPENBLAS_NUM_THREADS"):
        return False
    lib = _openblas()
    for name in _SETTERS if lib is not None else ():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn(ctypes.c_int(n))
            return True
    return False
