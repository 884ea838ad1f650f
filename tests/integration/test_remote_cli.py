"""``memdeck status`` / ``memdeck index`` as real processes, configured by an
openclaw.json (JSON5) that points each provider at a loopback test server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.provider_servers import FAST_ENV as FAST
from tests.provider_servers import TEST_KEY as KEY
from tests.provider_servers import Reply, always, write_notes


@pytest.fixture
def run(state_dir: Path, workspace_dir: Path):
    env = cli_env(state_dir, FAST)
    write_notes(workspace_dir)

    def go(config: str, *args: str, extra_env: dict[str, str] | None = None):
        cfg = state_dir / "openclaw.json"
        cfg.write_text(config, encoding="utf-8")
        return run_cli(
            *args, "--config", str(cfg), "-w", str(workspace_dir), env={**env, **(extra_env or {})}
        )

    return go


def config(provider: str, base: str, *, key: str | None = KEY, extra: str = "") -> str:
    key_line = f'apiKey: "{key}",' if key else ""
    return f"""{{
  // written by the test, JSON5 like a user's file
  agents: {{ defaults: {{ memorySearch: {{
    provider: "{provider}",
    {extra}
    remote: {{ baseUrl: "{base}", {key_line} headers: {{ "X-Trace": "cli-test" }} }},
  }} }} }},
}}"""


CASES = [
    # provider, path under the server, expected model, expected dims, extra config
    ("openai", "/v1", "text-embedding-3-small", 16, ""),
    ("mistral", "/v1", "mistral-embed", 16, ""),
    ("voyage", "/v1", "voyage-4-large", 16, ""),
    ("gemini", "/v1beta", "gemini-embedding-001", 16, ""),
    (
        "gemini",
        "/v1beta",
        "gemini-embedding-2-preview",
        1536,
        'model: "gemini-embedding-2-preview", outputDimensionality: 1536,',
    ),
    ("ollama", "", "nomic-embed-text", 16, ""),
    ("openai", "/v1", "my-local-embedder", 16, 'model: "my-local-embedder",'),
]


@pytest.mark.parametrize(("provider", "path", "model", "dims", "extra"), CASES)
def test_status_shows_provider_model_endpoint_and_dims(
    run, server, provider, path, model, dims, extra
) -> None:
    if provider == "ollama":
        server.api_key = None
    key = None if provider == "ollama" else KEY
    cfg = config(provider, server.url + path, key=key, extra=extra)
    assert run(cfg, "index").returncode == 0  # a custom endpoint's size is learned here
    sent = len(server.requests)
    r = run(cfg, "status", "--json")
    assert r.returncode == 0, r.stderr
    assert len(server.requests) == sent, "status asks the provider nothing: dims from the index"
    st = json.loads(r.stdout)
    assert (st["provider"], st["model"], st["dims"]) == (provider, model, dims)
    assert st["provider_detail"]["endpoint"] == server.url + path
    assert st["provider_detail"]["api_key"] == ("<redacted> from remote.apiKey" if key else None)
    assert st["provider_detail"]["headers"] == ["X-Trace"]
    assert KEY not in r.stdout + r.stderr
    assert {req.headers.get("x-trace") for req in server.requests} <= {"cli-test"}
    if provider not in ("openai", "gemini"):
        return  # the human-readable form is the same code; two providers show it
    text = run(cfg, "status")
    assert text.returncode == 0, text.stderr
    assert f"provider    {provider} (provider: {provider})" in text.stdout
    assert f"model       {model}   dims {dims}" in text.stdout
    assert f"endpoint    {server.url + path}" in text.stdout
    assert KEY not in text.stdout + text.stderr


def test_switching_provider_is_one_full_reindex_across_processes(run, server) -> None:
    openai_cfg = config("openai", server.url + "/v1")
    first = json.loads(run(openai_cfg, "index", "--json").stdout)
    assert first["full"] is True
    voyage_cfg = config("voyage", server.url + "/v1")
    st = json.loads(run(voyage_cfg, "status", "--json").stdout)
    assert st["needs_full_reindex"] is True
    switched = run(voyage_cfg, "index", "--json")
    assert switched.returncode == 0, switched.stderr
    assert json.loads(switched.stdout)["full"] is True
    again = json.loads(run(voyage_cfg, "index", "--json").stdout)
    assert again["full"] is False
    st = json.loads(run(voyage_cfg, "status", "--json").stdout)
    assert st["indexed_fingerprint"]["provider"] == "voyage" and not st["needs_full_reindex"]


def test_rejected_key_is_reported_without_the_key(run, server) -> None:
    server.faults = always(Reply(401, {"error": {"message": f"Incorrect API key: {KEY}"}}))
    cfg = config("openai", server.url + "/v1")
    r = run(cfg, "index")  # status sends nothing; the first request is the index's
    assert "provider error: openai: HTTP 401 unauthorized" in r.stdout
    assert "Incorrect API key: ***" in r.stdout
    assert KEY not in r.stdout + r.stderr
