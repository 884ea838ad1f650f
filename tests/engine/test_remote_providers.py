"""Each remote provider through the real Engine against a loopback server that
speaks its wire format: URL, headers, body, parsing, status, search."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.core import Engine
from engine.events import SyncDone
from tests.engine_fixtures import write
from tests.provider_servers import FAST_ENV as FAST
from tests.provider_servers import TEST_KEY as KEY
from tests.provider_servers import ProviderServer, Reply, always, write_notes


@pytest.fixture
def notes(workspace_dir: Path) -> Path:
    return write_notes(workspace_dir)


@pytest.fixture
def build(make_settings, engines) -> Callable[..., Engine]:
    def make(
        provider: str,
        base_url: str | None,
        *,
        env: dict[str, str] | None = None,
        api_key: str | None = KEY,
        settings_changes: dict[str, Any] | None = None,
        **ms: Any,
    ) -> Engine:
        changes: dict[str, Any] = {"provider": provider, **ms}
        if base_url is not None:
            changes["remote.base_url"] = base_url
        if api_key is not None:
            changes["remote.api_key"] = api_key
        settings = make_settings(**changes)
        if settings_changes:
            settings = dataclasses.replace(settings, **settings_changes)
        eng = Engine(settings, env={**FAST, **(env or {})})
        engines.append(eng)
        return eng

    return make


def top_path(eng: Engine, query: str) -> str:
    outcome = eng.search(query, eng.default_options().with_(min_score=0))
    assert outcome.mode == "hybrid"
    assert outcome.retrieval.vector_hits, outcome.retrieval.vector_error
    return outcome.results[0].path


def test_openai_wire_format_status_and_search(build, server, notes) -> None:
    eng = build("openai", server.url + "/v1", **{"remote.headers": {"X-Team": "memdeck"}})
    done = eng.sync()
    assert done.full and done.chunks_embedded == 2 and not done.errors
    reqs = server.embed_requests()
    assert {r.path for r in reqs} == {"/v1/embeddings"}
    assert reqs[0].json["input"] == ["memdeck dimension probe"]  # custom endpoint: size asked
    first = reqs[1]
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.headers["x-team"] == "memdeck"
    assert first.headers["content-type"] == "application/json"
    body = first.json
    assert body["model"] == "text-embedding-3-small"
    # one request: each chunk, then its units (lines with a word, headings left out)
    # as inputs of their own; a chunk ends at the file's last line, without its newline
    assert len(reqs) == 2
    assert sorted(body["input"]) == sorted(
        [
            "# Memory\n\nDana prefers flat white coffee.",
            "Dana prefers flat white coffee.",
            "# 2026-03-01\n\nAtlas rollback plan drafted.",
            "Atlas rollback plan drafted.",
        ]
    )
    assert body["input"].index("Dana prefers flat white coffee.") == (
        body["input"].index("# Memory\n\nDana prefers flat white coffee.") + 1
    )
    st = eng.status()
    assert (st.provider, st.model, st.dims) == ("openai", "text-embedding-3-small", 16)
    detail = st.provider_detail
    assert detail["endpoint"] == server.url + "/v1"
    assert detail["api_key"] == "<redacted> from remote.apiKey"
    assert KEY not in repr(st)
    assert top_path(eng, "flat white coffee") == "MEMORY.md"
    assert server.embed_requests()[-1].json["input"] == ["flat white coffee"]


def test_mistral_uses_env_key_and_its_default_model(build, server, notes) -> None:
    eng = build("mistral", server.url + "/v1", api_key=None, env={"MISTRAL_API_KEY": KEY})
    eng.sync()
    body = server.embed_requests()[0]
    assert body.json["model"] == "mistral-embed"
    assert body.headers["authorization"] == f"Bearer {KEY}"
    assert eng.status().provider_detail["api_key"] == "<redacted> from MISTRAL_API_KEY"
    assert top_path(eng, "atlas rollback") == "memory/2026-03-01.md"


def test_custom_openai_compatible_endpoint_merges_headers_without_key(build, notes) -> None:
    with ProviderServer(api_key=None) as open_server:
        eng = build(
            "openai",
            open_server.url + "/v1",
            api_key=None,
            model="bge-small-en",
            settings_changes={
                "provider_headers": {"openai": {"X-Tenant": "from-config", "X-Region": "eu"}}
            },
            **{"remote.headers": {"x-tenant": "from-remote"}},
        )
        eng.sync()
        req = open_server.embed_requests()[0]
        assert req.json["model"] == "bge-small-en"
        assert "authorization" not in req.headers
        assert req.headers["x-tenant"] == "from-remote"  # remote wins, case-insensitively
        assert req.headers["x-region"] == "eu"
        detail = eng.status().provider_detail
        assert detail["api_key"] is None and sorted(detail["headers"]) == ["X-Region", "x-tenant"]
        assert top_path(eng, "coffee") == "MEMORY.md"


def test_voyage_sends_input_type_document_then_query(build, server, notes) -> None:
    eng = build("voyage", server.url + "/v1")
    eng.sync()
    docs = server.embed_requests()
    assert docs[0].path == "/v1/embeddings"
    assert docs[0].json["model"] == "voyage-4-large"
    assert {r.json["input_type"] for r in docs} == {"document"}
    assert top_path(eng, "flat white coffee") == "MEMORY.md"
    assert server.embed_requests()[-1].json["input_type"] == "query"


def test_gemini_001_query_and_batch_documents(build, server, notes) -> None:
    eng = build("gemini", server.url + "/v1beta")
    eng.sync()
    docs = [r for r in server.embed_requests() if r.path.endswith(":batchEmbedContents")]
    assert docs and docs[0].path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert docs[0].headers["x-goog-api-key"] == KEY
    assert "authorization" not in docs[0].headers
    request = docs[0].json["requests"][0]
    assert request["taskType"] == "RETRIEVAL_DOCUMENT"
    assert request["model"] == "models/gemini-embedding-001"
    assert "outputDimensionality" not in request
    assert top_path(eng, "atlas rollback") == "memory/2026-03-01.md"
    query = server.embed_requests()[-1]
    assert query.path.endswith(":embedContent")
    assert query.json["taskType"] == "RETRIEVAL_QUERY"
    assert query.json["content"] == {"parts": [{"text": "atlas rollback"}]}


def test_gemini_embedding_2_sends_output_dimensionality(build, server, notes) -> None:
    eng = build(
        "gemini",
        server.url + "/v1beta",
        model="gemini-embedding-2-preview",
        output_dimensionality=768,
    )
    st = eng.status()
    assert st.dims == 768
    assert server.embed_requests() == []  # the size is the requested one: no probe
    eng.sync()
    req = server.embed_requests()[0].json["requests"][0]
    assert req["outputDimensionality"] == 768
    assert eng.store.dims == 768
    assert top_path(eng, "flat white coffee") == "MEMORY.md"


def test_gemini_embedding_2_rejects_unsupported_dimensionality(build, server, notes) -> None:
    eng = build(
        "gemini",
        server.url + "/v1beta",
        model="gemini-embedding-2-preview",
        output_dimensionality=1000,
    )
    st = eng.status()
    assert st.provider == "none" and "768, 1536, 3072" in st.provider_error


def test_ollama_native_api_without_key(build, notes) -> None:
    with ProviderServer(api_key=None) as srv:
        eng = build("ollama", srv.url + "/v1", api_key=None)  # the /v1 shim is stripped
        eng.sync()
        reqs = srv.embed_requests()
        assert {r.path for r in reqs} == {"/api/embeddings"}
        assert len(reqs) == 3  # probe + one request per chunk
        assert set(reqs[1].json) == {"model", "prompt"}
        assert reqs[1].json["model"] == "nomic-embed-text"
        assert eng.status().provider_detail["endpoint"] == srv.url
        assert top_path(eng, "coffee") == "MEMORY.md"


def test_auto_detection_picks_first_remote_key_in_order(build, notes) -> None:
    eng = build(
        "auto",
        None,
        api_key=None,
        env={"VOYAGE_API_KEY": "v", "GEMINI_API_KEY": "g"},
        **{"local.explicit": True, "local.model_path": "/nonexistent/model.gguf"},
    )
    st = eng.status()
    assert st.provider == "gemini"
    assert st.provider_reason == "auto: gemini API key found"
    assert st.provider_detail["endpoint"] == "https://generativelanguage.googleapis.com/v1beta"
    assert st.dims == 3072  # documented size of the public endpoint: no request made


def test_switching_provider_is_exactly_one_full_reindex(build, server, notes) -> None:
    first = build("openai", server.url + "/v1")
    assert first.sync().full
    first.close()
    second = build("voyage", server.url + "/v1")
    dones: list[SyncDone] = []
    second.bus.subscribe(lambda e: dones.append(e) if isinstance(e, SyncDone) else None)
    assert second.status().needs_full_reindex
    switched = second.sync()
    assert switched.full and switched.chunks_embedded == 2
    again = second.sync()
    assert not again.full and again.chunks_embedded == 0
    assert [d.full for d in dones] == [True, False]
    assert second.store.fingerprint()["provider"] == "voyage"


OUTAGES = {
    "500 storm": lambda: always(Reply(500, {"error": {"message": "boom"}})),
    "malformed JSON": lambda: always(Reply(200, "{not json")),
    "wrong dims": None,
    "hung server": lambda: always(Reply(hang=True)),
}


@pytest.mark.parametrize("outage", list(OUTAGES))
def test_an_outage_loses_nothing_and_the_next_sync_recovers(build, server, notes, outage) -> None:
    env = {"MEMDECK_REMOTE_TIMEOUT_S": "0.3", "MEMDECK_REMOTE_RETRIES": "1"}
    eng = build("openai", server.url + "/v1", env=env)
    assert eng.sync().chunks_embedded == 2
    write(notes, "memory/2026-03-02.md", "# 2026-03-02\n\nOat milk for the office.\n")
    if outage == "wrong dims":
        server.wrong_dims = 5
    else:
        server.faults = OUTAGES[outage]()
    failed = eng.sync()
    assert failed.errors and failed.errors[0].startswith("embedding failed: openai")
    assert KEY not in " ".join(failed.errors)
    st = eng.status()
    assert st.chunks == 3 and st.embedded_chunks == 2  # the new file is FTS-searchable
    assert "embedding failed" in st.file_errors["memory/2026-03-02.md"]
    kw = eng.search("oat milk", eng.default_options().with_(min_score=0, mode="fts"))
    assert kw.results[0].path == "memory/2026-03-02.md"
    server.faults, server.wrong_dims = None, None
    healed = eng.sync()
    assert healed.chunks_embedded == 1 and not healed.errors and not healed.full
    assert eng.status().embedded_chunks == 3


def test_endpoint_down_at_start_keeps_the_index_with_remembered_dims(build, server, notes) -> None:
    first = build("openai", server.url + "/v1")
    assert first.sync().chunks_embedded == 2
    assert first.status().provider_detail["dims_source"] == "probed"
    first.close()
    server.faults = always(Reply(503, "maintenance"))
    second = build("openai", server.url + "/v1", env={"MEMDECK_REMOTE_RETRIES": "0"})
    sent = len(server.requests)
    st = second.status()
    assert st.provider == "openai" and st.dims == 16 and not st.needs_full_reindex
    assert st.provider_detail["dims_source"] == "index", "the index's size: no probe at all"
    assert len(server.requests) == sent
    done = second.sync()
    assert not done.full and done.chunks_embedded == 0
    assert second.status().embedded_chunks == 2  # nothing was thrown away
