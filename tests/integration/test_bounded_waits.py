"""Bounded waits on embedding providers, against real loopback servers.

One server trickles its answer one byte every 2 s (httpx's read timeout restarts
with each byte, so only an overall deadline ends it); one accepts and never
answers. ``index``, ``search`` and ``status`` must end on their own, say why,
and a search must degrade to keyword-only visibly (``mode``, ``fallback``,
``reason``). The subprocess timeout is only the guard that keeps a regression
from hanging the suite; the assertions are on exit codes and messages.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.provider_servers import TEST_KEY, ProviderServer, Recorded, Reply, write_notes

#: a 2 s deadline per request, one retry: a hung command would otherwise take minutes
ENV = {
    "MEMDECK_REMOTE_TIMEOUT_S": "2",
    "MEMDECK_REMOTE_RETRIES": "1",
    "MEMDECK_REMOTE_BACKOFF_MS": "1",
    "MEMDECK_SEARCH_BUDGET_S": "3",
}


def _config(state_dir: Path, server: ProviderServer) -> Path:
    cfg = state_dir / "openclaw.json"
    remote = {"baseUrl": server.url + "/v1", "apiKey": TEST_KEY}
    ms = {"provider": "openai", "remote": remote}
    cfg.write_text(json.dumps({"agents": {"defaults": {"memorySearch": ms}}}))
    return cfg


def trickle(server: ProviderServer):
    def plan(_i: int, rec: Recorded) -> Reply:
        return dataclasses.replace(server._route(rec), trickle_s=2.0)

    return plan


def hang(_i: int, _rec: Recorded) -> Reply:
    return Reply(hang=True)


@pytest.mark.parametrize("misbehave", ["trickle", "hang"])
def test_a_misbehaving_server_from_the_start(
    server: ProviderServer, state_dir: Path, workspace_dir: Path, misbehave: str
) -> None:
    """No good answer ever: index exits 2 naming the deadline, search answers
    keyword-only with the reason, status ends and shows the provider error."""
    write_notes(workspace_dir)
    server.faults = trickle(server) if misbehave == "trickle" else hang
    args = ("--config", str(_config(state_dir, server)), "-w", str(workspace_dir))
    env = cli_env(state_dir, ENV)
    index = run_cli("index", *args, env=env)
    assert index.returncode == 2, index.stderr
    assert "embedding provider failed at start" in index.stderr
    assert "no answer from" in index.stderr and "within 2 s" in index.stderr
    search = run_cli("search", "flat white", "--json", *args, env=env)
    assert search.returncode == 0, search.stderr
    answer = json.loads(search.stdout)
    assert answer["results"][0]["path"] == "MEMORY.md"
    assert answer["mode"] == "fts"
    # search sends nothing it cannot use: the index holds no vectors, and it says
    # why — the provider the last index could not use, and how it failed
    reason = answer["reason"]
    assert reason.startswith("the last index could not use the embedding provider (openai: ")
    assert "no answer from" in reason and "within 2 s" in reason
    assert answer["fallback"] == {"from": "hybrid", "to": "fts", "reason": answer["reason"]}
    status = run_cli("status", "--json", *args, env=env)
    assert status.returncode == 0, status.stderr
    st = json.loads(status.stdout)
    assert st["embedded_chunks"] == 0 and st["chunks"] == 2


@pytest.mark.parametrize("misbehave", ["trickle", "hang"])
def test_after_a_good_answer_search_keeps_its_budget(
    server: ProviderServer, state_dir: Path, workspace_dir: Path, misbehave: str
) -> None:
    """The index has vectors (dims known), then the server stops answering: the
    query embedding is abandoned at the search budget and the search says
    keyword-only instead of labelling keyword hits "hybrid"."""
    write_notes(workspace_dir)
    args = ("--config", str(_config(state_dir, server)), "-w", str(workspace_dir))
    env = cli_env(state_dir, {**ENV, "MEMDECK_REMOTE_TIMEOUT_S": "30"})
    good = run_cli("index", *args, env=env)
    assert good.returncode == 0, good.stderr
    server.faults = trickle(server) if misbehave == "trickle" else hang
    search = run_cli("search", "flat white", "--json", *args, env=env)
    assert search.returncode == 0, search.stderr
    answer = json.loads(search.stdout)
    assert answer["mode"] == "fts"
    assert "longer than the search budget (3 s" in answer["reason"]
    assert answer["results"][0]["path"] == "MEMORY.md"
    text = run_cli("search", "flat white", *args, env=env)
    assert "keyword-only: the query embedding took longer than the search budget" in text.stderr


def test_index_exits_2_when_embedding_fails_mid_sync(
    server: ProviderServer, state_dir: Path, workspace_dir: Path
) -> None:
    """A good start, then every document request fails: `index` says so and exits 2."""
    write_notes(workspace_dir)
    args = ("--config", str(_config(state_dir, server)), "-w", str(workspace_dir))
    env = cli_env(state_dir, ENV)
    assert run_cli("index", *args, env=env).returncode == 0
    (workspace_dir / "memory" / "new.md").write_text("a brand new note about tea\n")
    server.faults = lambda _i, rec: (
        Reply(500, {"error": {"message": "overloaded"}}) if "tea" in json.dumps(rec.json) else None
    )
    r = run_cli("index", *args, env=env)
    assert r.returncode == 2
    assert "embedding failed" in r.stderr and "indexed keyword-only" in r.stderr


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply(500, {"error": {"message": "internal error"}}), "HTTP 500"),
        (Reply(401, {"error": {"message": "Incorrect API key"}}), "HTTP 401 unauthorized"),
        (Reply(200, "<html>a captive portal, not JSON</html>"), "not JSON"),
    ],
    ids=["500", "401", "garbage"],
)
def test_a_provider_failing_at_start_makes_index_exit_2(
    server: ProviderServer, state_dir: Path, workspace_dir: Path, reply: Reply, said: str
) -> None:
    """Any failure of the provider at start (the issue saw `(none)` and exit 0): the
    index is built keyword-only, and `index` says so on stderr and exits 2."""
    write_notes(workspace_dir)
    server.faults = lambda _i, _rec: reply
    args = ("--config", str(_config(state_dir, server)), "-w", str(workspace_dir))
    r = run_cli("index", *args, env=cli_env(state_dir, ENV))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "embedding provider failed at start" in r.stderr and said in r.stderr, r.stderr
    assert "indexed keyword-only" in r.stderr
    assert TEST_KEY not in r.stdout + r.stderr
    search = json.loads(
        run_cli("search", "flat white", "--json", *args, env=cli_env(state_dir, ENV)).stdout
    )
    assert search["results"][0]["path"] == "MEMORY.md" and search["mode"] == "fts"
