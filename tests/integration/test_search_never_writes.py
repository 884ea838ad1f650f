"""Searching never writes and never spends, counted on a real server.

``memdeck status``, ``search`` and ``get`` are real processes pointed at a
loopback embedding server (``tests/provider_servers.py``) through a custom
``remote.baseUrl`` — the case where the vector size is not documented and
used to be learned by a probe request on every call. Every request that
reaches the server is counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer, write_notes


@pytest.fixture
def memdeck(state_dir: Path, workspace_dir: Path, server: ProviderServer):
    write_notes(workspace_dir)
    cfg = state_dir / "openclaw.json"
    cfg.write_text(
        "{ agents: { defaults: { memorySearch: { provider: 'openai',"
        f" remote: {{ baseUrl: '{server.url}/v1', apiKey: '{TEST_KEY}' }} }} }} }} }}",
        encoding="utf-8",
    )
    env = cli_env(state_dir, FAST_ENV)

    def run(*args: str):
        return run_cli(*args, "--config", str(cfg), "-w", str(workspace_dir), env=env)

    return run


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_never_indexed_workspace_status_search_get_write_nothing_and_send_nothing(
    memdeck, server: ProviderServer, state_dir: Path, workspace_dir: Path
) -> None:
    before = _files(state_dir) | _files(workspace_dir)
    r = memdeck("status", "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["provider"] == "openai" and st["dims"] is None, "size unknown until indexed"
    assert st["files"] == 0 and st["files_on_disk"] == 2 and st["indexed_fingerprint"] is None
    text = memdeck("status")
    assert "(not built yet: run memdeck index)" in text.stdout

    r = memdeck("search", "coffee")
    assert r.returncode == 1
    assert f"no index yet for workspace {workspace_dir}: run `memdeck index` first" in r.stderr
    r = memdeck("get", "MEMORY.md")
    assert r.returncode == 0 and "flat white" in r.stdout

    assert server.requests == [], server.paths()
    assert _files(state_dir) | _files(workspace_dir) == before, "nothing created"


def test_indexed_workspace_dims_come_from_the_index(
    memdeck, server: ProviderServer, state_dir: Path
) -> None:
    r = memdeck("index", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["chunks"] == 2
    built = len(server.embed_requests())
    assert built >= 2, "a probe and the documents"

    st = json.loads(memdeck("status", "--json").stdout)
    assert st["dims"] == 16 and st["provider_detail"]["dims_source"] == "index"
    assert st["needs_full_reindex"] is False and st["dirty"] is False
    assert len(server.embed_requests()) == built, "status sends nothing"

    again = json.loads(memdeck("index", "--json").stdout)
    assert (again["full"], again["files_indexed"], again["chunks_embedded"]) == (False, 0, 0)
    assert len(server.embed_requests()) == built, "an unchanged index sends nothing"

    r = memdeck("search", "coffee", "--json", "--min-score", "0")
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    assert found["mode"] == "hybrid" and found["results"][0]["path"] == "MEMORY.md"
    queries = server.embed_requests()[built:]
    assert [q.json["input"] for q in queries] == [["coffee"]], "only the query is embedded"


def test_forced_reindex_asks_the_endpoint_again(memdeck, server: ProviderServer) -> None:
    assert memdeck("index").returncode == 0
    server.dims = 24  # the endpoint now serves another model behind the same URL
    r = memdeck("index", "--force", "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(memdeck("status", "--json").stdout)
    assert st["dims"] == 24 and st["embedded_chunks"] == 2
