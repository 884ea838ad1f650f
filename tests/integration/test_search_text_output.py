"""`memdeck search` text output says why a result under minScore is in the list.

Real processes, hybrid search through a loopback OpenAI-style embedding server. With
a minScore nothing reaches, memdeck's keyword rescue keeps the keyword hit, and the
`openclaw` profile drops its floor to 0; the text names the rule on the result. The
JSON answer keeps the tool's shape (no extra key).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer, write_notes

pytestmark = pytest.mark.subprocess

QUERY = "flat white coffee"


@pytest.fixture
def search(tmp_path: Path) -> Iterator[Callable[..., tuple[int, str]]]:
    with ProviderServer(api_key=TEST_KEY) as server:
        workspace = write_notes(tmp_path / "ws")
        config = tmp_path / "openclaw.json"
        config.write_text(
            "{ memory: { search: { provider: 'openai',"
            f" remote: {{ baseUrl: '{server.url}/v1', apiKey: '{TEST_KEY}' }} }} }} }}",
            encoding="utf-8",
        )
        env = cli_env(tmp_path / "state", FAST_ENV)
        where = ("--config", str(config), "-w", str(workspace))
        assert run_cli("index", *where, env=env).returncode == 0

        def run(*args: str) -> tuple[int, str]:
            r = run_cli(*args, *where, env=env)
            assert r.returncode == 0, r.stderr
            assert "Traceback" not in r.stderr
            return r.returncode, r.stdout

        yield run


def test_a_rescued_result_says_so(search) -> None:
    _, text = search("search", QUERY, "--min-score", "0.99")
    lines = text.splitlines()
    assert lines[0].startswith("1 result · mode hybrid")
    assert lines[2].startswith("1. MEMORY.md:1-3  score ")
    assert lines[3] == (
        "   below minScore 0.99: kept by the keyword rescue (no hit reached it; keyword "
        "hits ≥ min(minScore, textWeight) = 0.3000 stay)"
    )
    _, text = search("search", "--min-score", "0", QUERY)  # above minScore: no note
    assert "below minScore" not in text and "1. MEMORY.md:1-3" in text
    _, out = search("search", QUERY, "--min-score", "0.99", "--json")
    (hit,) = json.loads(out)["results"]
    assert set(hit) == {"path", "startLine", "endLine", "score", "snippet", "source", "citation"}


def test_openclaws_floor_says_so(search) -> None:
    _, text = search("--profile", "openclaw", "search", QUERY, "--min-score", "0.99")
    lines = text.splitlines()
    assert lines[0].endswith("· profile openclaw")
    assert lines[2].startswith("1. MEMORY.md:1-4  score ")  # OpenClaw's own line numbers
    assert lines[3] == (
        "   below minScore 0.99: nothing passed it, so OpenClaw drops the floor to 0 for "
        "keyword hits"
    )
