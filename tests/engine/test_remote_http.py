"""The shared HTTP path of remote providers, against a real loopback server:
retries, Retry-After, give-up rules, timeouts, redaction, request sizing and
key resolution."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path

import httpx
import pytest

from engine.config.loader import load_settings
from engine.embeddings.base import ProviderError
from engine.embeddings.http_retry import (
    HttpTransport,
    Redactor,
    RetryPolicy,
    parse_retry_after,
)
from engine.embeddings.remote import create_remote_provider
from engine.embeddings.remote_endpoint import (
    merge_headers,
    remote_available,
    resolve_endpoint,
    resolve_key,
)
from engine.embeddings.request_batches import split_by_bytes
from tests.provider_servers import FAST_ENV as FAST
from tests.provider_servers import TEST_KEY as KEY
from tests.provider_servers import ProviderServer, Reply, always, fail_first


def openai(make_settings, server: ProviderServer, env=FAST, **changes):
    settings = make_settings(
        **{"provider": "openai", "remote.base_url": server.url + "/v1", "remote.api_key": KEY},
        **changes,
    )
    return create_remote_provider("openai", settings, env)


# -- pure parts ----------------------------------------------------------------
def test_backoff_doubles_with_bounded_jitter_and_cap() -> None:
    policy = RetryPolicy()
    for attempt, nominal in enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 8.0]):
        for _ in range(50):
            d = policy.backoff(attempt)
            assert nominal * 0.8 - 1e-9 <= d <= min(8.0, nominal * 1.2) + 1e-9


def test_policy_from_env_reads_overrides_and_ignores_garbage() -> None:
    env = {
        "MEMDECK_REMOTE_BACKOFF_MS": "10",
        "MEMDECK_REMOTE_RETRIES": "x",
        "MEMDECK_REMOTE_TIMEOUT_S": "-3",
    }
    p = RetryPolicy.from_env(env)
    assert (p.base_delay, p.max_retries, p.timeout, p.max_delay) == (0.01, 3, 60.0, 8.0)


def test_retry_after_forms() -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": "2"})) == 2.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert parse_retry_after(httpx.Headers({"retry-after": date}), now=1445412480.0) == 10.0
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


def test_split_by_bytes_respects_budget_and_keeps_oversized_alone() -> None:
    texts = ["a" * 3000, "b" * 3000, "c" * 3000, "é" * 5000, "d" * 10]
    groups = split_by_bytes(texts, 8000)
    assert [list(g) for g in groups] == [[0, 1], [2], [3], [4]]
    assert [list(g) for g in split_by_bytes(["x"] * 5, 8000, max_items=2)] == [[0, 1], [2, 3], [4]]
    assert split_by_bytes([], 8000) == []


def test_redactor_hides_key_bearer_and_url_keys() -> None:
    r = Redactor(["sk-secret-value", "Bearer sk-secret-value"])
    assert r("bad key sk-secret-value at https://x/y?key=abc123&z=1") == (
        "bad key *** at https://x/y?key=***&z=1"
    )


def test_key_resolution_order(make_settings) -> None:
    env = {"OPENAI_API_KEY": "from-env", "GEMINI_API_KEY": "gem-env"}
    keys = {"openai": "from-config", "google": "g"}
    s = make_settings(**{"remote.api_key": "from-remote", "provider": "openai"})
    s_cfg = dataclasses.replace(s, provider_api_keys=keys)
    assert resolve_key("openai", s_cfg, env) == ("from-remote", "remote.apiKey")
    plain = make_settings(provider="openai")
    plain_cfg = dataclasses.replace(plain, provider_api_keys=keys)
    assert resolve_key("openai", plain_cfg, env) == (
        "from-config",
        "models.providers.openai.apiKey",
    )
    assert resolve_key("openai", plain, env) == ("from-env", "OPENAI_API_KEY")
    assert resolve_key("voyage", plain, env) == (None, None)
    # Gemini's config entry is called "google" in OpenClaw
    assert resolve_key("gemini", plain_cfg, env) == ("g", "models.providers.google.apiKey")
    assert remote_available("gemini", plain, env) and not remote_available("mistral", plain, env)


def test_remote_block_does_not_leak_into_a_remote_fallback(make_settings) -> None:
    s = make_settings(
        **{
            "provider": "openai",
            "fallback": "gemini",
            "remote.api_key": "openai-key",
            "remote.base_url": "http://proxy.local/v1",
        }
    )
    ep = resolve_endpoint("gemini", s, {"GEMINI_API_KEY": "g-key"})
    assert (ep.api_key, ep.base_url) == (
        "g-key",
        "https://generativelanguage.googleapis.com/v1beta",
    )
    # but a local primary hands remote.* to its remote fallback (OpenClaw's local→openai setup)
    s2 = make_settings(**{"provider": "local", "fallback": "openai", "remote.api_key": "k"})
    assert resolve_endpoint("openai", s2, {}).key_source == "remote.apiKey"


def test_headers_merge_case_insensitively_remote_wins(make_settings) -> None:
    assert merge_headers({"X-Org": "a", "X-Keep": "1"}, {"x-org": "b"}) == {
        "x-org": "b",
        "X-Keep": "1",
    }
    s = make_settings(**{"provider": "openai", "remote.headers": {"x-team": "remote"}})
    s = dataclasses.replace(s, provider_headers={"openai": {"X-Team": "cfg", "X-A": "1"}})
    assert resolve_endpoint("openai", s, {}).headers == {"x-team": "remote", "X-A": "1"}


def test_missing_key_is_a_clear_error(make_settings) -> None:
    s = make_settings(provider="voyage")
    with pytest.raises(ProviderError, match="VOYAGE_API_KEY"):
        create_remote_provider("voyage", s, {})


# -- against the loopback server ---------------------------------------------------
def test_429_then_success_counts_one_retry(make_settings, server) -> None:
    server.faults = fail_first(1, Reply(429, {"error": {"message": "slow down"}}))
    p = openai(make_settings, server)
    seen = []
    vecs = p.embed_documents(["alpha beta", "gamma"], progress=seen.append)
    assert vecs.shape == (2, 16)
    assert len(server.embed_requests()) == 2  # the 429, then the retry
    assert p.transport.stats.retries == 1
    assert seen[-1].items_done == 2 and seen[-1].items_total == 2
    p.close()


def test_500_storm_gives_up_after_three_retries(make_settings, server) -> None:
    server.faults = always(Reply(503, {"error": {"message": "upstream down"}}))
    p = openai(make_settings, server)
    with pytest.raises(ProviderError) as err:
        p.embed_query("anything")
    assert err.value.retryable and err.value.status == 503
    assert "gave up after 4 attempts" in str(err.value)
    assert len(server.embed_requests()) == 4
    p.close()


def test_rate_limit_text_on_400_is_retried(make_settings, server) -> None:
    body = {"error": {"message": "Rate limit reached for requests"}}
    server.faults = fail_first(2, Reply(400, body))
    p = openai(make_settings, server)
    assert p.embed_query("hello").shape == (16,)
    assert p.transport.stats.retries == 2
    p.close()


@pytest.mark.parametrize(
    ("headers", "least"), [({"Retry-After": "1"}, 0.95), ({"retry-after-ms": "300"}, 0.29)]
)
def test_retry_after_is_honoured(make_settings, server, headers, least) -> None:
    p = openai(make_settings, server)
    assert p.dims == 16  # the probe happens before the fault plan
    server.faults = fail_first(1, Reply(429, "busy", headers=headers))
    t0 = time.perf_counter()
    p.embed_query("hello")
    waited = time.perf_counter() - t0
    assert waited >= least  # as the server asked, not the 1 ms backoff configured
    assert p.transport.stats.retries == 1
    p.close()


def test_retry_after_beyond_limit_fails_fast(make_settings, server) -> None:
    server.faults = always(Reply(429, "busy", headers={"Retry-After": "3600"}))
    p = openai(make_settings, server, env={**FAST, "MEMDECK_REMOTE_MAX_RETRY_AFTER_S": "5"})
    t0 = time.perf_counter()
    with pytest.raises(ProviderError, match="asks to wait 3600 s"):
        p.embed_query("x")
    assert time.perf_counter() - t0 < 5
    assert len(server.embed_requests()) == 1
    p.close()


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_and_not_found_are_not_retried_and_never_show_the_key(
    make_settings, server, status
) -> None:
    # a server that echoes the key back, as some do
    server.faults = always(Reply(status, {"error": {"message": f"Incorrect API key {KEY}"}}))
    p = openai(make_settings, server)
    with pytest.raises(ProviderError) as err:
        p.embed_query("x")
    assert err.value.status == status and not err.value.retryable
    assert KEY not in str(err.value) and "***" in str(err.value)
    assert len(server.embed_requests()) == 1
    assert KEY not in repr(p.describe())
    p.close()


def test_wrong_key_is_rejected_by_server(make_settings, server) -> None:
    url = server.url + "/v1"
    settings = make_settings(
        **{"provider": "openai", "remote.base_url": url, "remote.api_key": "sk-wrong-0000"}
    )
    p = create_remote_provider("openai", settings, FAST)
    with pytest.raises(ProviderError, match=r"HTTP 401 unauthorized.*check the API key"):
        p.embed_query("x")
    p.close()


def test_malformed_json_is_a_clear_error(make_settings, server) -> None:
    server.faults = always(Reply(200, "<html>proxy error</html>"))
    p = openai(make_settings, server)
    with pytest.raises(ProviderError, match="invalid JSON: <html>proxy error</html>"):
        p.embed_query("x")
    assert len(server.embed_requests()) == 1
    p.close()


def test_wrong_dims_are_rejected(make_settings, server) -> None:
    p = openai(make_settings, server)
    assert p.dims == 16
    server.wrong_dims = 7
    with pytest.raises(ProviderError, match="returned 7-dimensional vectors, expected 16"):
        p.embed_documents(["x"])
    p.close()


def test_hung_server_times_out_then_gives_up(make_settings, server) -> None:
    server.faults = always(Reply(hang=True))
    env = {**FAST, "MEMDECK_REMOTE_TIMEOUT_S": "0.3", "MEMDECK_REMOTE_RETRIES": "1"}
    p = openai(make_settings, server, env=env)
    t0 = time.perf_counter()
    with pytest.raises(ProviderError, match=r"no answer from .* within 0.3 s \(gave up after 2"):
        p.embed_query("x")
    assert 0.6 <= time.perf_counter() - t0 < 10
    p.close()


def test_unreachable_server_is_retried_then_reported(make_settings) -> None:
    settings = make_settings(
        **{"provider": "openai", "remote.base_url": "http://127.0.0.1:9/v1", "remote.api_key": KEY}
    )
    p = create_remote_provider("openai", settings, {**FAST, "MEMDECK_REMOTE_RETRIES": "2"})
    with pytest.raises(ProviderError, match=r"cannot reach http://127.0.0.1:9/v1/embeddings"):
        p.embed_query("x")
    assert p.transport.stats.retries == 2
    p.close()


def test_documents_are_split_by_estimated_bytes(make_settings, server) -> None:
    p = openai(make_settings, server)
    texts = [f"doc {i} " + "w" * 1500 for i in range(11)]  # ~1.5 kB each → 5 per request
    vecs = p.embed_documents(texts)
    assert vecs.shape == (11, 16)
    bodies = [r.json for r in server.embed_requests()]
    assert [len(b["input"]) for b in bodies] == [5, 5, 1]
    assert all(sum(len(t.encode()) for t in b["input"]) <= 8000 for b in bodies)
    # order is preserved even though the server answers data[] reversed
    again = p.embed_documents([texts[3]])
    assert float(again[0] @ vecs[3]) == pytest.approx(1.0, abs=1e-6)
    p.close()


def test_transport_reports_each_retry(server) -> None:
    server.faults = fail_first(2, Reply(502, "bad gateway"))
    seen: list[tuple[int, str]] = []
    t = HttpTransport(
        headers={"Authorization": f"Bearer {KEY}"},
        policy=RetryPolicy(base_delay=0.001),
        redactor=Redactor([KEY]),
        label="openai",
    )
    out = t.request(
        "POST",
        server.url + "/v1/embeddings",
        json_body={"model": "m", "input": ["a"]},
        on_retry=lambda n, _d, why: seen.append((n, why)),
    )
    assert len(out["data"]) == 1
    assert [n for n, _ in seen] == [1, 2] and "HTTP 502" in seen[0][1]
    t.close()


def test_redirects_are_not_followed_so_keys_stay_home(make_settings, server) -> None:
    with ProviderServer(api_key=None) as elsewhere:
        server.faults = always(
            Reply(307, "", headers={"Location": elsewhere.url + "/v1/embeddings"})
        )
        p = openai(make_settings, server)
        with pytest.raises(ProviderError, match=r"redirects \(HTTP 307\) to http://127"):
            p.embed_query("x")
        assert elsewhere.requests == []
        p.close()


@pytest.mark.parametrize(
    ("document", "key"),
    [
        ({"memory": {"search": {"provider": "openai"}}}, "memory.search.remote.apiKey"),
        (
            {"agents": {"defaults": {"memorySearch": {"provider": "openai"}}}},
            "agents.defaults.memorySearch.remote.apiKey",
        ),
    ],
)
def test_a_missing_key_is_named_as_the_file_writes_it(
    tmp_path: Path, document: dict[str, object], key: str
) -> None:
    """The message cites the key where this file's layout keeps it (2026.9 or seed)."""
    config = tmp_path / "openclaw.json"
    config.write_text(json.dumps(document))
    env = {"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(tmp_path / "state")}
    settings = load_settings(config_path=config, workspace=tmp_path, env=env)
    with pytest.raises(ProviderError, match=f"openai: no API key; set {re.escape(key)}, "):
        create_remote_provider("openai", settings, env)
