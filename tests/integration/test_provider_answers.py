"""Endpoints that answer wrongly: each answer is checked (count, size, finite,
non-zero, body size) and refused with the reason; the index is left keyword-only
and a search says so instead of ranking with nothing.

A real ``memdeck`` process against the loopback OpenAI-compatible server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.provider_servers import FAST_ENV, TEST_KEY, Reply, write_notes


def _rows(n: int, make) -> dict:
    return {"data": [{"index": i, "embedding": make(i)} for i in range(n)]}


BROKEN = {
    "fewer vectors": (lambda n: _rows(max(0, n - 1), lambda i: [0.1] * 16), "expected"),
    "mixed sizes": (lambda n: _rows(n, lambda i: [0.1] * (16 + i % 2)), "different sizes"),
    "NaN numbers": (lambda n: _rows(n, lambda i: [float("nan")] * 16), "NaN or infinite"),
    "zero vectors": (lambda n: _rows(n, lambda i: [0.0] * 16), "all zeros"),
    "huge size": (lambda n: _rows(n, lambda i: [0.1] * 20_000), "20,000-dimensional"),
    "huge body": (lambda n: _rows(n, lambda i: [0.5] * 30_000), "sent more than"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_answer_is_refused_and_search_says_keyword_only(
    case, server, state_dir: Path, workspace_dir: Path
) -> None:
    make, reason = BROKEN[case]

    def plan(_i, rec):
        return Reply(200, make(len(rec.json["input"])))

    server.faults = plan
    write_notes(workspace_dir)
    cfg = state_dir / "openclaw.json"
    cfg.write_text(
        '{agents: {defaults: {memorySearch: {provider: "openai", model: "my-embedder",'
        f' remote: {{baseUrl: "{server.url}/v1", apiKey: "{TEST_KEY}"}}}}}}}}}}',
        encoding="utf-8",
    )
    cap = {"MEMDECK_MAX_RESPONSE_BYTES": "20000"} if case == "huge body" else {}
    env = cli_env(state_dir, {**FAST_ENV, **cap})
    args = ("--config", str(cfg), "-w", str(workspace_dir))
    out = run_cli("index", *args, env=env)
    assert out.returncode == 2, out
    assert reason in out.stderr and "indexed keyword-only" in out.stderr
    status = json.loads(run_cli("status", *args, "--json", env=env).stdout)
    assert status["embedded_chunks"] == 0 and (status["dims"] or 0) <= 16
    found = run_cli("search", "flat white", *args, "--json", env=env)
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["mode"] == "fts" and answer["results"][0]["path"] == "MEMORY.md"
    assert answer["fallback"] is not None and answer["fallback"]["to"] == "fts"
    assert (
        "memdeck: warning: keyword-only" in run_cli("search", "flat white", *args, env=env).stderr
    )
