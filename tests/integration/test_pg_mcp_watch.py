"""``memdeck mcp`` and ``memdeck watch`` as real processes on the PostgreSQL store.

* the MCP SDK's client gets from ``memory_search`` exactly what ``memdeck search
  --json`` prints, and the search lands in the namespace's recall history;
* two ``memdeck watch`` processes keep two workspaces (one chosen by namespace, one
  by agent id) in one database: a line appended to either is searchable in its
  namespace and not in the other;
* the DSN's password appears nowhere: not in any process's stdout or stderr, not in
  any file under the state folders, not in the server's log.

Real server (``tests.pg_fixtures``), a loopback embedding server, real processes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import anyio
import pytest

from engine.index.pg_store import PgStore
from engine.memory.recall import load_searches
from tests.cli_process import REPO, cli_env, run_cli
from tests.mcp_process import stdio_client, structured
from tests.pg_server import PgServer
from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer, write_notes

pytest.importorskip("psycopg", reason="psycopg is installed by scripts/setup.sh")
SECRET = "Pg-Mcp-Watch-Pw-31"


def _config(state: Path, server: ProviderServer) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    cfg = state / "openclaw.json"
    cfg.write_text(
        "{ agents: { defaults: { memorySearch: { provider: 'openai',"
        f" remote: {{ baseUrl: '{server.url}/v1', apiKey: '{TEST_KEY}' }} }} }} }} }}",
        encoding="utf-8",
    )
    return cfg


def _secret_dsn(pg_dsn: str) -> str:
    return pg_dsn.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@")


def files_with_secret(*roots: Path) -> list[Path]:
    """Every file under ``roots`` that contains the password (should be none)."""
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and SECRET.encode() in path.read_bytes():
                found.append(path)
    return found


def test_mcp_search_equals_the_cli_and_is_recorded(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer, server: ProviderServer
) -> None:
    ws = write_notes(tmp_path / "ws", {"memory/2026-03-02.md": "Coffee beans from Porto.\n"})
    state = tmp_path / "state"
    cfg = _config(state, server)
    extra = {
        **FAST_ENV,
        "MEMDECK_STORE_BACKEND": "postgres",
        "MEMDECK_PG_DSN": _secret_dsn(pg_dsn),
        "MEMDECK_PG_NAMESPACE": "mcp-team",
    }
    env = cli_env(state, extra)
    outputs: list[str] = []

    def memdeck(*args: str) -> subprocess.CompletedProcess[str]:
        r = run_cli(*args, "--config", str(cfg), "-w", str(ws), env=env)
        outputs.extend([r.stdout, r.stderr])
        return r

    assert memdeck("index").returncode == 0
    query = {"query": "flat white coffee", "minScore": 0.0, "maxResults": 4}
    errlog = tmp_path / "mcp-stderr.txt"

    async def go() -> tuple[object, object]:
        with errlog.open("w") as err:
            async with stdio_client(
                "--config", str(cfg), "-w", str(ws), env=env, name="claude-code", errlog=err
            ) as c:
                found = structured(await c.call_tool("memory_search", query))
                status = structured(await c.call_tool("memory_status", {}))
        return found, status

    found, status = anyio.run(go)
    cli = memdeck("search", "flat white coffee", "--json", "--min-score", "0", "--max-results", "4")
    assert cli.returncode == 0, cli.stderr
    assert found == json.loads(cli.stdout)
    assert found["results"][0]["path"] == "MEMORY.md" and found["mode"] == "hybrid"  # type: ignore[index]
    assert (status["vector"], status["fts"], status["dirty"]) == ("pgvector", "tsvector", False)  # type: ignore[index]
    # the store is named, in memory_status and in the banner: PostgreSQL, never a SQLite file
    assert status["store"] == "postgres" and status["store_version"].startswith("PostgreSQL ")  # type: ignore[index]
    assert status["index"].endswith("(namespace mcp-team)")  # type: ignore[index]
    (banner,) = [line for line in errlog.read_text().splitlines() if " · index " in line]
    assert f" · index {status['index']} ({status['store_version']}) · " in banner, banner  # type: ignore[index]
    assert ".sqlite" not in banner
    outputs.append(json.dumps(status))

    store = PgStore(pg_dsn, "mcp-team")
    try:
        searches = [(s.client, s.query) for s in load_searches(store)]  # type: ignore[arg-type]
    finally:
        store.close()
    assert searches == [("cli", "flat white coffee"), ("claude-code", "flat white coffee")]

    outputs.append(errlog.read_text())
    assert not [o for o in outputs if SECRET in o]
    assert files_with_secret(state, ws) == []


class Watcher:
    """``memdeck watch --json`` in the background, its events read line by line."""

    def __init__(self, *args: str, env: dict[str, str], err: IO[str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine.cli.main", *args, "watch", "--json"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        self.lines: list[str] = []

    def next_sync_done(self) -> dict[str, object]:
        """Read events until the next finished sync (the watcher ends on its own
        if anything goes wrong, which ends this loop too)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            event = json.loads(line)
            if event["event"] == "SyncFailed":
                raise AssertionError(f"sync failed: {event}")
            if event["event"] == "SyncDone":
                return dict(event)
        raise AssertionError(f"watch ended (exit {self.proc.wait()}): {self.lines}")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=60)
        self.lines.append(out)
        return self.proc.returncode


def test_two_watchers_on_two_workspaces_share_one_database(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer, server: ProviderServer
) -> None:
    dsn = _secret_dsn(pg_dsn)
    runs = []
    for tag, who in (("a", ("--agent", "main")), ("b", ("--agent", "bob"))):
        ws = write_notes(tmp_path / f"ws-{tag}", {"memory/2026-03-05.md": f"# Log {tag}\n"})
        state = tmp_path / f"state-{tag}"
        cfg = _config(state, server)
        extra = {**FAST_ENV, "MEMDECK_STORE_BACKEND": "postgres", "MEMDECK_PG_DSN": dsn}
        if tag == "a":
            extra["MEMDECK_PG_NAMESPACE"] = "team-a"  # a chosen namespace; b: its agent id
        env = cli_env(state, extra)
        args = (*who, "--config", str(cfg), "-w", str(ws))
        err = (tmp_path / f"watch-{tag}.err").open("w")
        runs.append((tag, ws, env, args, Watcher(*args, env=env, err=err), err))

    outputs: list[str] = []

    def search(env: dict[str, str], args: tuple[str, ...], word: str) -> list[str]:
        r = run_cli(*args, "search", word, "--json", "--min-score", "0", env=env)
        outputs.extend([r.stdout, r.stderr])
        assert r.returncode == 0, r.stderr
        return [h["path"] for h in json.loads(r.stdout)["results"] if word in h["snippet"]]

    try:
        for _tag, _ws, _env, _args, watcher, _err in runs:
            assert watcher.next_sync_done()["files_indexed"] == 3  # the start-up sync
        for tag, ws, _env, _args, watcher, _err in runs:
            with (ws / "memory" / "2026-03-05.md").open("a", encoding="utf-8") as fh:
                fh.write(f"- 10:00 The {tag}quokka census moved to Friday.\n")
            done = watcher.next_sync_done()
            assert done["files_indexed"] == 1 and done["files_removed"] == 0
        for tag, _ws, env, args, _watcher, _err in runs:
            other = "b" if tag == "a" else "a"
            assert search(env, args, f"{tag}quokka") == ["memory/2026-03-05.md"]
            assert search(env, args, f"{other}quokka") == []  # the other namespace's line
        for _tag, _ws, _env, _args, watcher, err in runs:
            assert watcher.stop() == 0
            err.close()
    finally:
        for *_rest, watcher, err in runs:
            if watcher.proc.poll() is None:
                watcher.proc.kill()
                watcher.proc.wait()
            err.close()
    store = PgStore(pg_dsn, "bob")  # the agent id became the namespace
    try:
        assert store.counts()["files"] == 3 and store.integrity_check() == "ok"
    finally:
        store.close()
    outputs += ["".join(w.lines) for *_r, w, _e in runs]
    outputs += [(tmp_path / f"watch-{t}.err").read_text() for t in "ab"]
    assert not [o for o in outputs if SECRET in o]
    server_log = pg_server.data_dir.parent / "server.log"
    assert files_with_secret(tmp_path) == []
    assert SECRET not in server_log.read_text(errors="replace")
