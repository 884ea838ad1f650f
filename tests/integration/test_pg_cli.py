"""``memdeck index``/``status``/``search`` as real processes on the PostgreSQL store.

Pointed at the store by ``MEMDECK_STORE_BACKEND=postgres`` and ``MEMDECK_PG_DSN``
(a DSN with a password: the test server trusts every login), with a loopback
embedding server. Nothing printed may contain the password.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer, write_notes

pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")
SECRET = "Cli-Pw-Hidden-77"


def test_cli_index_status_search_on_postgres(
    tmp_path: Path, pg_dsn: str, server: ProviderServer
) -> None:
    ws = write_notes(tmp_path / "ws")
    state = tmp_path / "state"
    state.mkdir()
    cfg = state / "openclaw.json"
    cfg.write_text(
        "{ agents: { defaults: { memorySearch: { provider: 'openai',"
        f" remote: {{ baseUrl: '{server.url}/v1', apiKey: '{TEST_KEY}' }} }} }} }} }}",
        encoding="utf-8",
    )
    dsn = pg_dsn.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@")
    env = cli_env(state, {**FAST_ENV, "MEMDECK_STORE_BACKEND": "postgres", "MEMDECK_PG_DSN": dsn})

    def memdeck(*args: str):
        r = run_cli(*args, "--config", str(cfg), "-w", str(ws), env=env)
        assert SECRET not in r.stdout + r.stderr, args
        return r

    r = memdeck("index", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["chunks"] == 2
    st = json.loads(memdeck("status", "--json").stdout)
    assert st["vector"] == "pgvector" and st["chunks"] == 2 and st["dirty"] is False
    assert st["index"].startswith("postgresql://postgres:***@127.0.0.1:")
    text = memdeck("status")
    assert text.returncode == 0
    assert "(PostgreSQL 18." in text.stdout and "SQLite" not in text.stdout  # not "SQLite 18.3"
    assert "fts         tsvector (unicode61 terms, FTS5 bm25)" in text.stdout
    assert st["store"] == "postgres" and st["sqlite_version"] is None
    r = memdeck("search", "flat white coffee", "--json")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["results"]
    assert hits[0]["path"] == "MEMORY.md"
    assert not (state / "memory").exists() or not list((state / "memory").glob("*.sqlite"))
    import psycopg

    def live_space() -> str:
        with psycopg.connect(pg_dsn) as conn:
            return str(conn.execute("select space from memdeck_namespaces").fetchone()[0])

    before = live_space()
    r = memdeck("index", "--force", "--json")  # a new generation, then one switch
    assert r.returncode == 0, r.stderr
    assert live_space() != before
    st = json.loads(memdeck("status", "--json").stdout)
    assert st["chunks"] == 2 and st["dirty"] is False

    env["MEMDECK_PG_DSN"] = f"postgresql://postgres:{SECRET}@127.0.0.1:1/nowhere"
    r = memdeck("status")  # nothing listens on port 1: a clear error, password masked
    assert r.returncode != 0 and "***" in r.stderr and "PostgreSQL store" in r.stderr
