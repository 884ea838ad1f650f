"""The engine on the PostgreSQL store: same search answers as on SQLite, several
writer processes on one database, kill -9 mid-reindex, the DSN never shown.

Real server (``tests.pg_fixtures``), real writer processes killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.core import Engine
from engine.index.pg_store import PgStore
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import FIXED_TODAY, write
from tests.integration.sync_support import HashEmbedder, kill_9, spawn_python
from tests.pg_fixtures import engine_for, pg_env

psycopg = pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")

NOTES = {
    "MEMORY.md": "Miso the cat takes a methimazole tablet every morning.\n\n"
    "Dana prefers flat white coffee; Sam drinks espresso.\n",
    "memory/2026-03-14.md": "Booked the train to Porto for the Atlas offsite.\n",
    "memory/2026-02-13.md": "Postgres migration rehearsal went fine; sqlite stays for laptops.\n",
    "memory/2026-02-20.md": "The cat knocked the pills off the shelf again.\n",
    "memory/gtd/NEXT.md": "Buy coffee beans. Renew the rail pass.\n",
}
QUERIES = ["cat medicine", "coffee", "postgres database", "train to Porto", "pills", "Atlas"]


def _answers(engine: Engine) -> dict[str, list[tuple[str, int, float]]]:
    out = {}
    for q in QUERIES:
        outcome = engine.search(q, today=FIXED_TODAY)
        out[q] = [(c.path, c.start_line, c.score) for c in outcome.results]
    return out


def test_search_answers_match_sqlite(tmp_path: Path, pg_dsn: str) -> None:
    ws = tmp_path / "ws"
    for rel, text in NOTES.items():
        write(ws, rel, text)
    lite_env = {"OPENCLAW_STATE_DIR": str(tmp_path / "s1"), "HOME": str(tmp_path / "s1")}
    lite = engine_for(ws, lite_env, ConceptEmbedder())
    pg = engine_for(ws, pg_env(tmp_path / "s2", pg_dsn), ConceptEmbedder())
    try:
        assert isinstance(pg.store, PgStore) and not isinstance(lite.store, PgStore)
        lite.sync()
        pg.sync()
        want, got = _answers(lite), _answers(pg)
        for q in QUERIES:  # equal scores may come in any order (chunk ids differ)
            assert [s for _p, _l, s in got[q]] == [s for _p, _l, s in want[q]], q
            assert sorted(got[q]) == sorted(want[q]), q
        assert got["cat medicine"][0][0] == "memory/2026-02-20.md"  # cat + pills: not empty
        st = pg.status()
        assert st.vector == "pgvector" and st.chunks == lite.status().chunks
        assert "namespace main" in st.index and not st.dirty
        assert pg.db_integrity() == "ok"
        # an incremental sync: one file edited, one removed
        write(ws, "memory/2026-02-20.md", "The cat ate the new wombat treats.\n")
        (ws / "memory" / "gtd" / "NEXT.md").unlink()
        for eng in (lite, pg):
            done = eng.sync()
            assert done.files_indexed == 1 and done.files_removed == 1 and not done.full
        again_lite, again_pg = _answers(lite), _answers(pg)
        for q in QUERIES:
            assert sorted(again_pg[q]) == sorted(again_lite[q]), q
        hits = pg.search("wombat", today=FIXED_TODAY).results
        assert [h.path for h in hits][:1] == ["memory/2026-02-20.md"]
        assert "memory/gtd/NEXT.md" not in pg.store.files()
    finally:
        lite.close()
        pg.close()


REINDEX = """
import json, sys
from engine.config.loader import load_settings
from engine.core import Engine
from engine.events import SyncProgress
from tests.integration.sync_support import HashEmbedder

env = json.loads(sys.argv[2])
engine = Engine(load_settings(workspace=sys.argv[1], env=env),
                provider=HashEmbedder(delay=float(sys.argv[3])), env=env)
def report(event):
    if isinstance(event, SyncProgress) and event.phase == "embed":
        print(json.dumps({"embedded": event.chunks_embedded}), flush=True)
engine.bus.subscribe(report)
engine.sync(reason="start")
print(json.dumps({"done": engine.status().chunks}), flush=True)
engine.close()
"""


def _big_workspace(ws: Path, files: int, tag: str) -> None:
    for i in range(files):
        body = "".join(f"Note {tag} {i}.{j} on topic{j % 11}: " + "words " * 60 + "\n\n"
                       for j in range(8))  # fmt: skip
        write(ws, f"memory/topics/t{i:03d}.md", body)
    write(ws, "MEMORY.md", f"sentinel word {tag}quokka\n")


def _spaces(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select space, count(*) from memdeck_chunks group by space").fetchall()
    return {r[0]: int(r[1]) for r in rows}


def test_kill_9_mid_reindex_keeps_the_live_generation(tmp_path: Path, pg_dsn: str) -> None:
    ws = tmp_path / "ws"
    _big_workspace(ws, 150, "a")
    env = pg_env(tmp_path / "state", pg_dsn)
    old = engine_for(ws, env, None)  # the live generation: FTS-only
    old.sync()
    chunks = old.status().chunks
    live_before = old.store.current_space()  # type: ignore[attr-defined]
    old.close()

    proc = spawn_python("-c", REINDEX, str(ws), json.dumps(env), "0.1")
    assert proc.stdout is not None
    embedded = 0
    for line in proc.stdout:  # kill once a good part of the new generation is written
        embedded = json.loads(line).get("embedded", 0)
        if embedded >= 160:
            break
    assert embedded >= 160, "the reindex ended before it could be killed"
    kill_9(proc)

    spaces = _spaces(pg_dsn)
    assert len(spaces) == 2 and spaces[live_before] == chunks  # an unpublished build is left
    reader = engine_for(ws, env, None)
    try:
        assert reader.store.current_space() == live_before  # type: ignore[attr-defined]
        assert reader.status().chunks == chunks and reader.db_integrity() == "ok"
        hits = reader.search("aquokka").results
        assert [h.path for h in hits] == ["MEMORY.md"]
    finally:
        reader.close()

    again = engine_for(ws, env, HashEmbedder())  # the next writer drops the debris, rebuilds
    try:
        done = again.sync()
        assert done.files_indexed == 151
        st = again.status()
        assert st.chunks == chunks and st.embedded_chunks == chunks and not st.dirty
        assert again.db_integrity() == "ok"
        assert list(_spaces(pg_dsn)) == [again.store.current_space()]  # type: ignore[attr-defined]
        assert again.store.current_space() != live_before  # type: ignore[attr-defined]
    finally:
        again.close()


def test_kill_9_mid_incremental_sync_leaves_every_file_whole(tmp_path: Path, pg_dsn: str) -> None:
    """Each file is one transaction: a writer killed between files leaves some files
    new and the rest old, never half a file, and bm25's statistics agree with the rows;
    the next writer (the advisory lock freed by the server) finishes the job."""
    ws = tmp_path / "ws"
    _big_workspace(ws, 60, "a")
    env = pg_env(tmp_path / "state", pg_dsn)
    first = engine_for(ws, env, HashEmbedder())
    first.sync()
    first.close()
    for i in range(60):  # every chunk of every file changes: 480 chunks to embed again
        path = ws / "memory" / "topics" / f"t{i:03d}.md"
        path.write_text(path.read_text().replace("words", f"wallaby{i}"))
    proc = spawn_python("-c", REINDEX, str(ws), json.dumps(env), "0.1")
    assert proc.stdout is not None
    embedded = 0
    for line in proc.stdout:  # kill in the second flush: the first one's files are written
        embedded = json.loads(line).get("embedded", 0)
        if embedded >= 160:
            break
    assert embedded >= 160, "the sync ended before it could be killed"
    kill_9(proc)

    reader = engine_for(ws, env, None)
    try:
        assert reader.db_integrity() == "ok"  # chunk counts, orphans, bm25 statistics
        found = {h.path for i in range(60) for h in reader.search(f"wallaby{i}").results}
        assert 0 < len(found) < 60, "the kill should land mid-sync"
        assert len(reader.store.files()) == 61  # new or old, every file is there
    finally:
        reader.close()
    again = engine_for(ws, env, HashEmbedder())
    try:
        done = again.sync()
        assert not done.full and 0 < done.files_indexed < 60  # only what was left
        assert again.db_integrity() == "ok" and not again.status().dirty
        assert all(again.search(f"wallaby{i}").results for i in range(60))
    finally:
        again.close()


def test_two_writer_processes_on_two_namespaces(tmp_path: Path, pg_dsn: str) -> None:
    procs = []
    for tag in ("a", "b"):
        ws = tmp_path / f"ws-{tag}"
        _big_workspace(ws, 40, tag)
        env = pg_env(tmp_path / f"state-{tag}", pg_dsn, namespace=f"team-{tag}")
        procs.append((tag, ws, env, spawn_python("-c", REINDEX, str(ws), json.dumps(env), "0")))
    for _tag, _ws, _env, proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        assert json.loads(out.strip().splitlines()[-1])["done"] > 40
    for tag, ws, env, _proc in procs:
        eng = engine_for(ws, env, HashEmbedder())
        try:
            st = eng.status()
            assert st.files == 41 and not st.dirty and eng.db_integrity() == "ok"
            assert eng.search(f"{tag}quokka").results[0].path == "MEMORY.md"
            other = "b" if tag == "a" else "a"
            seen = eng.search(f"{other}quokka").results + eng.search("topic3 words").results
            assert seen and all(f"Note {tag} " in h.text or f"{tag}quokka" in h.text for h in seen)
            assert not any(f"{other}quokka" in h.text or f"Note {other} " in h.text for h in seen)
        finally:
            eng.close()


def test_status_and_errors_never_show_the_password(tmp_path: Path, pg_server) -> None:
    """The test server trusts every login, so a DSN with a password connects."""
    secret = "Pw-Never-Shown-42"
    dsn = f"postgresql://postgres:{secret}@127.0.0.1:{pg_server.port}/postgres"
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "hello postgres\n")
    eng = engine_for(ws, pg_env(tmp_path / "s", dsn, namespace=f"pw-{os.getpid()}"), None)
    try:
        eng.sync()
        shown = repr(eng.status()) + repr(eng.backend.selection) + str(eng.backend.selection)
        assert secret not in shown and "postgres:***@127.0.0.1" in shown
    finally:
        eng.close()
    from engine.core import IndexUnavailable

    bad = dsn.replace(f":{pg_server.port}/", ":1/")  # nothing listens on port 1
    with pytest.raises(IndexUnavailable) as err:
        engine_for(ws, pg_env(tmp_path / "s2", bad), None)
    assert secret not in str(err.value) and "***" in str(err.value)


def test_terms_cut_by_older_rules_rebuild_the_postgres_index_once(
    tmp_path: Path, pg_dsn: str
) -> None:
    """The PostgreSQL store cuts its keyword terms in Python, so the rules' version is
    part of its index fingerprint: an index written under other rules is rebuilt at the
    next sync. SQLite's FTS5 cuts its own terms: its fingerprint has no such key, so an
    SQLite index never rebuilds for it."""
    from engine.index.unicode61 import TERMS_VERSION

    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "Ο λόγος: Σωκράτης and the café.\n")
    pg = engine_for(ws, pg_env(tmp_path / "s", pg_dsn), ConceptEmbedder())
    lite = engine_for(ws, {"OPENCLAW_STATE_DIR": str(tmp_path / "l")}, ConceptEmbedder())
    try:
        assert "terms" not in lite.fingerprint()
        pg.sync()
        stored = pg.store.fingerprint()
        assert stored is not None and stored["terms"] == TERMS_VERSION
        assert pg.status().needs_full_reindex is False
        older = {k: v for k, v in stored.items() if k != "terms"}  # written before the key
        pg.store.set_fingerprint(older)
        assert pg.status().needs_full_reindex is True
        pg.sync()
        assert pg.store.fingerprint() == stored and pg.status().needs_full_reindex is False
        fts = pg.default_options().with_(mode="fts", min_score=0.0)
        hits = pg.search("Σωκράτης", fts, today=FIXED_TODAY).results  # ς is σ on both sides
        assert [r.path for r in hits] == ["MEMORY.md"]
    finally:
        pg.close()
        lite.close()


def test_a_lost_server_fails_each_search_quickly_with_the_right_advice(
    pg_dsn: str, tmp_path: Path
) -> None:
    """The database stops taking connections under a running engine (as a long-lived
    ``memdeck mcp`` meets a PostgreSQL restart): each search answers unavailable within
    the pool's short wait, not 30 s, and says to look at the server rather than
    rebuild the index; once the server takes connections again, searches work."""
    import time

    import psycopg

    from engine.tools import search_memory

    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\n- The staging database is Postgres on 5433\n")
    engine = engine_for(ws, pg_env(tmp_path / "state", pg_dsn), None)
    try:
        engine.sync(reason="test")
        assert search_memory(engine, "staging", min_score=0).to_json()["results"]
        admin, name = pg_dsn.rsplit("/", 1)[0] + "/postgres", pg_dsn.rsplit("/", 1)[1]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"alter database {name} allow_connections false")
            conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where datname = %s",
                (name,),
            )
        for _ in range(2):
            t0 = time.monotonic()
            down = search_memory(engine, "staging", min_score=0).to_json()
            took = time.monotonic() - t0
            assert down.get("disabled") is True, down
            assert "the index needs no rebuild" in down["action"], down
            assert took < 10, took
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"alter database {name} allow_connections true")
        deadline = time.monotonic() + 30
        while not search_memory(engine, "staging", min_score=0).to_json().get("results"):
            assert time.monotonic() < deadline, "the engine never reconnected"
            time.sleep(0.5)
    finally:
        engine.close()
