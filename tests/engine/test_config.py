"""engine.config.loader / engine.paths: openclaw.json → Settings.

Every test runs in ``tmp_path`` with an explicit ``env`` dict whose HOME is a
temp folder, so nothing here reads or writes the real home directory. Expected
defaults are written out as docs/architecture.md and README state them (not read back from
engine.settings), so a wrong default in either place fails a test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config import paths
from engine.config.loader import ConfigError, load_settings, read_json5
from engine.config.settings import Settings

MS = "agents.defaults.memorySearch"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def write_config(home: Path, text: str | bytes, name: str = "openclaw.json") -> Path:
    """Write a config at the default location (``~/.openclaw/openclaw.json``)."""
    path = home / ".openclaw" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def memory_search(block: dict) -> str:
    """A config whose agents.defaults.memorySearch is *block*."""
    return json.dumps({"agents": {"defaults": {"memorySearch": block}}})


def load(home: Path, env: dict[str, str], text: str | None = None, **kwargs) -> Settings:
    if text is not None:
        write_config(home, text)
    return load_settings(env=env, **kwargs)


def warned(settings: Settings, *parts: str) -> bool:
    return any(all(p in w for p in parts) for w in settings.warnings)


# --------------------------------------------------------------------------- defaults


def test_no_config_file_gives_every_spec_default(home: Path, env: dict[str, str]) -> None:
    s = load_settings(env=env)
    ms = s.memory_search
    assert s.config_path is None
    assert s.warnings == ()
    assert s.raw == {}
    assert s.agent_id == "main"
    assert s.state_dir == home / ".openclaw"
    assert s.workspace == home / ".openclaw" / "workspace"
    assert s.index_path == home / ".openclaw" / "memory" / "main.memdeck.sqlite"
    assert (s.backend, s.citations, s.tools_enabled) == ("builtin", "auto", True)
    assert (s.provider_api_keys, s.provider_base_urls, s.provider_headers) == ({}, {}, {})

    assert ms.enabled is True
    assert ms.provider == "auto"
    assert ms.model is None
    assert ms.fallback == "none"
    assert (ms.remote.base_url, ms.remote.api_key, ms.remote.headers) == (None, None, {})
    batch = ms.remote.batch
    assert (batch.enabled, batch.wait, batch.concurrency) == (False, True, 2)
    assert (batch.poll_interval_ms, batch.timeout_minutes) == (2000, 60)
    assert ms.output_dimensionality == 3072
    assert ms.local.model_path == (
        "hf:ggml-org/embeddinggemma-300m-qat-q8_0-GGUF/embeddinggemma-300m-qat-Q8_0.gguf"
    )
    assert ms.local.model_cache_dir is None
    assert ms.local.explicit is False
    assert ms.extra_paths == ()
    assert (ms.chunking.tokens, ms.chunking.overlap) == (400, 80)
    assert (ms.query.max_results, ms.query.min_score) == (6, 0.35)
    hybrid = ms.query.hybrid
    assert hybrid.enabled is True
    assert (hybrid.vector_weight, hybrid.text_weight) == (0.7, 0.3)
    assert hybrid.candidate_multiplier == 4
    assert (hybrid.mmr.enabled, hybrid.mmr.lambda_, hybrid.mmr.similarity) == (
        False,
        0.7,
        "jaccard",
    )
    assert (hybrid.temporal_decay.enabled, hybrid.temporal_decay.half_life_days) == (False, 30)
    assert (hybrid.normalization, hybrid.rrf_k) == ("minmax", 60)
    assert (ms.cache.enabled, ms.cache.max_entries) == (True, 50000)
    assert ms.store.path is None
    assert (ms.store.vector_enabled, ms.store.extension_path) == (True, None)
    assert ms.store.fts_tokenizer == "unicode61"
    sync = ms.sync
    assert (sync.watch, sync.on_session_start, sync.on_search) == (True, True, True)
    assert sync.interval_minutes == 0
    assert (sync.sessions.delta_bytes, sync.sessions.delta_messages) == (100000, 50)
    assert ms.session_memory is False
    assert ms.sources == ("memory",)
    assert ms.multimodal.enabled is False
    assert ms.multimodal.max_file_bytes == 10000000


def test_empty_object_matches_no_file(home: Path, env: dict[str, str]) -> None:
    path = write_config(home, "{}")
    s = load_settings(env=env)
    assert s.config_path == path
    assert s.memory_search == load_settings(env={"HOME": str(home / "nowhere")}).memory_search
    assert s.warnings == ()


def test_blank_file_is_defaults_with_a_warning(home: Path, env: dict[str, str]) -> None:
    path = write_config(home, "  \n\n")
    s = load_settings(env=env)
    assert s.config_path == path
    assert s.memory_search.chunking.tokens == 400
    assert warned(s, str(path), "empty")


# --------------------------------------------------------------------------- mapping


def test_every_memory_search_key_maps_to_its_field(home: Path, env: dict[str, str]) -> None:
    block = {
        "enabled": False,
        "provider": "gemini",
        "model": "gemini-embedding-2-preview",
        "fallback": "openai",
        "remote": {
            "baseUrl": "https://example.test/v1/",
            "apiKey": "sk-test",
            "headers": {"X-Team": "memdeck"},
            "batch": {
                "enabled": True,
                "wait": False,
                "concurrency": 5,
                "pollIntervalMs": 500,
                "timeoutMinutes": 15,
            },
        },
        "outputDimensionality": 768,
        "local": {"modelPath": "/models/mini.gguf", "modelCacheDir": "/cache/models"},
        "extraPaths": ["../team-docs", "/srv/notes"],
        "chunking": {"tokens": 256, "overlap": 32},
        "query": {
            "maxResults": 12,
            "minScore": 0.2,
            "hybrid": {
                "enabled": False,
                "vectorWeight": 0.6,
                "textWeight": 0.4,
                "candidateMultiplier": 8,
                "fusion": "rrf",
                "normalization": "zscore",
                "rrfK": 30,
                "mmr": {"enabled": True, "lambda": 0.5, "similarity": "cosine"},
                "temporalDecay": {"enabled": True, "halfLifeDays": 14},
            },
        },
        "cache": {"enabled": False, "maxEntries": 1000},
        "store": {
            "path": "/data/{agentId}.sqlite",
            "vector": {"enabled": False, "extensionPath": "/lib/vec0.so"},
            "fts": {"tokenizer": "trigram"},
        },
        "sync": {
            "watch": False,
            "onSessionStart": False,
            "onSearch": False,
            "intervalMinutes": 10,
            "sessions": {"deltaBytes": 2048, "deltaMessages": 7},
        },
        "experimental": {"sessionMemory": True},
        "sources": ["memory", "sessions"],
        "multimodal": {"enabled": True, "modalities": ["image"], "maxFileBytes": 1234},
    }
    s = load(home, env, memory_search(block))
    ms = s.memory_search
    assert s.warnings == ()
    assert (ms.enabled, ms.provider, ms.model, ms.fallback) == (
        False,
        "gemini",
        "gemini-embedding-2-preview",
        "openai",
    )
    assert ms.remote.base_url == "https://example.test/v1/"
    assert ms.remote.api_key == "sk-test"
    assert ms.remote.headers == {"X-Team": "memdeck"}
    b = ms.remote.batch
    assert (b.enabled, b.wait, b.concurrency, b.poll_interval_ms, b.timeout_minutes) == (
        True,
        False,
        5,
        500,
        15,
    )
    assert ms.output_dimensionality == 768
    assert ms.local.model_path == "/models/mini.gguf"
    assert ms.local.explicit is True
    assert ms.local.model_cache_dir == Path("/cache/models")
    assert ms.extra_paths == ("../team-docs", "/srv/notes")
    assert (ms.chunking.tokens, ms.chunking.overlap) == (256, 32)
    q = ms.query
    assert (q.max_results, q.min_score) == (12, 0.2)
    h = q.hybrid
    assert h.enabled is False
    assert h.vector_weight == pytest.approx(0.6)
    assert h.text_weight == pytest.approx(0.4)
    assert (h.candidate_multiplier, h.fusion, h.normalization, h.rrf_k) == (
        8,
        "rrf",
        "zscore",
        30,
    )
    assert (h.mmr.enabled, h.mmr.lambda_, h.mmr.similarity) == (True, 0.5, "cosine")
    assert (h.temporal_decay.enabled, h.temporal_decay.half_life_days) == (True, 14)
    assert (ms.cache.enabled, ms.cache.max_entries) == (False, 1000)
    assert ms.store.path == Path("/data/main.sqlite")
    assert s.index_path == Path("/data/main.sqlite")
    assert (ms.store.vector_enabled, ms.store.extension_path) == (False, "/lib/vec0.so")
    assert ms.store.fts_tokenizer == "trigram"
    sy = ms.sync
    assert (sy.watch, sy.on_session_start, sy.on_search, sy.interval_minutes) == (
        False,
        False,
        False,
        10,
    )
    assert (sy.sessions.delta_bytes, sy.sessions.delta_messages) == (2048, 7)
    assert ms.session_memory is True
    assert ms.sources == ("memory", "sessions")
    assert (ms.multimodal.enabled, ms.multimodal.modalities) == (True, ("image",))
    assert ms.multimodal.max_file_bytes == 1234


def test_other_sections(home: Path, env: dict[str, str]) -> None:
    text = """{
      memory: { backend: "qmd", citations: "off", qmd: { command: "/opt/qmd", paths: [] } },
      plugins: { slots: { memory: "none" } },
      models: { providers: {
        openai: { apiKey: "sk-openai", baseUrl: "https://proxy.test/v1", headers: { A: "1" } },
        google: { apiKey: "g-key", models: [{ id: "x" }] },
      } },
      agents: { defaults: { compaction: { reserveTokensFloor: 1000 } } },
    }"""
    s = load(home, env, text)
    assert (s.backend, s.citations, s.tools_enabled) == ("qmd", "off", False)
    assert s.provider_api_keys == {"openai": "sk-openai", "google": "g-key"}
    assert s.provider_base_urls == {"openai": "https://proxy.test/v1"}
    assert s.provider_headers == {"openai": {"A": "1"}}
    # Sections other modules own are kept verbatim.
    assert s.raw["memory"]["qmd"] == {"command": "/opt/qmd", "paths": []}
    assert s.raw["agents"]["defaults"]["compaction"] == {"reserveTokensFloor": 1000}
    assert s.warnings == ()


def test_plugins_slot_other_than_none_keeps_tools(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, '{plugins: {slots: {memory: "memory-core"}}}')
    assert s.tools_enabled is True


def test_secret_reference_api_key_is_skipped_with_warning(home: Path, env: dict[str, str]) -> None:
    text = '{models: {providers: {openai: {apiKey: {source: "env", id: "OPENAI_API_KEY"}}}}}'
    s = load(home, env, text)
    assert s.provider_api_keys == {}
    assert warned(s, "models.providers.openai.apiKey", "ignored")


def test_null_means_unset(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"provider": None, "query": {"maxResults": None}}))
    assert s.memory_search.provider == "auto"
    assert s.memory_search.query.max_results == 6


def test_blank_model_means_provider_default(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"model": "  "}))
    assert s.memory_search.model is None


def test_multimodal_all_means_every_modality(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"multimodal": {"modalities": ["all"]}}))
    assert s.memory_search.multimodal.modalities == ("image", "audio")


def test_sessions_source_needs_session_memory(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"sources": ["memory", "sessions"]}))
    assert s.memory_search.sources == ("memory",)
    assert warned(s, f"{MS}.sources", "sessionMemory")


def test_empty_sources_fall_back_to_memory(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"sources": []}))
    assert s.memory_search.sources == ("memory",)


# --------------------------------------------------------------------------- clamping


@pytest.mark.parametrize(
    ("vector", "text", "expected"),
    [
        (2, 2, (0.5, 0.5)),
        (0, 0, (0.7, 0.3)),
        (-1, 0.5, (0.0, 1.0)),
        (0.6, 0.6, (0.5, 0.5)),
        (1, 0, (1.0, 0.0)),
    ],
)
def test_weights_clamped_then_normalised(
    home: Path, env: dict[str, str], vector: float, text: float, expected: tuple[float, float]
) -> None:
    block = {"query": {"hybrid": {"vectorWeight": vector, "textWeight": text}}}
    s = load(home, env, memory_search(block))
    hybrid = s.memory_search.query.hybrid
    assert (hybrid.vector_weight, hybrid.text_weight) == pytest.approx(expected)
    assert warned(s, f"{MS}.query.hybrid") == (expected != (vector, text))


def test_single_weight_is_normalised_against_the_default_other(
    home: Path, env: dict[str, str]
) -> None:
    s = load(home, env, memory_search({"query": {"hybrid": {"vectorWeight": 0.5}}}))
    hybrid = s.memory_search.query.hybrid
    assert hybrid.vector_weight == pytest.approx(0.625)
    assert hybrid.text_weight == pytest.approx(0.375)


def test_weights_summing_to_one_produce_no_warning(home: Path, env: dict[str, str]) -> None:
    block = {"query": {"hybrid": {"vectorWeight": 0.1, "textWeight": 0.9}}}
    s = load(home, env, memory_search(block))
    assert s.warnings == ()
    assert s.memory_search.query.hybrid.text_weight == pytest.approx(0.9)


CLAMPS = [
    ({"query": {"hybrid": {"candidateMultiplier": 50}}}, "query.hybrid.candidateMultiplier", 20),
    ({"query": {"hybrid": {"candidateMultiplier": 0}}}, "query.hybrid.candidateMultiplier", 1),
    ({"query": {"hybrid": {"candidateMultiplier": -3}}}, "query.hybrid.candidateMultiplier", 1),
    ({"query": {"hybrid": {"candidateMultiplier": 4.7}}}, "query.hybrid.candidateMultiplier", 4),
    ({"query": {"minScore": 1.5}}, "query.minScore", 1.0),
    ({"query": {"minScore": -0.2}}, "query.minScore", 0.0),
    ({"query": {"hybrid": {"mmr": {"lambda": 2}}}}, "query.hybrid.mmr.lambda", 1.0),
    ({"query": {"hybrid": {"mmr": {"lambda": -1}}}}, "query.hybrid.mmr.lambda", 0.0),
    (
        {"query": {"hybrid": {"temporalDecay": {"halfLifeDays": 0}}}},
        "query.hybrid.temporalDecay.halfLifeDays",
        1,
    ),
    (
        {"query": {"hybrid": {"temporalDecay": {"halfLifeDays": 0.5}}}},
        "query.hybrid.temporalDecay.halfLifeDays",
        1,
    ),
    (
        {"query": {"hybrid": {"temporalDecay": {"halfLifeDays": 7.9}}}},
        "query.hybrid.temporalDecay.halfLifeDays",
        7,
    ),
    ({"chunking": {"tokens": 400, "overlap": 500}}, "chunking.overlap", 399),
    ({"chunking": {"overlap": -5}}, "chunking.overlap", 0),
    ({"chunking": {"tokens": 0}}, "chunking.tokens", 1),
    ({"query": {"maxResults": 0}}, "query.maxResults", 1),
    ({"cache": {"maxEntries": 0}}, "cache.maxEntries", 1),
    ({"query": {"hybrid": {"rrfK": 0}}}, "query.hybrid.rrfK", 1),
    ({"remote": {"batch": {"concurrency": 0}}}, "remote.batch.concurrency", 1),
    ({"sync": {"sessions": {"deltaBytes": -1}}}, "sync.sessions.deltaBytes", 0),
    ({"multimodal": {"maxFileBytes": 0}}, "multimodal.maxFileBytes", 1),
]


def _field(settings: Settings, key: str) -> object:
    mapping = {
        "query.hybrid.candidateMultiplier": lambda m: m.query.hybrid.candidate_multiplier,
        "query.minScore": lambda m: m.query.min_score,
        "query.hybrid.mmr.lambda": lambda m: m.query.hybrid.mmr.lambda_,
        "query.hybrid.temporalDecay.halfLifeDays": (
            lambda m: m.query.hybrid.temporal_decay.half_life_days
        ),
        "chunking.overlap": lambda m: m.chunking.overlap,
        "chunking.tokens": lambda m: m.chunking.tokens,
        "query.maxResults": lambda m: m.query.max_results,
        "cache.maxEntries": lambda m: m.cache.max_entries,
        "query.hybrid.rrfK": lambda m: m.query.hybrid.rrf_k,
        "remote.batch.concurrency": lambda m: m.remote.batch.concurrency,
        "sync.sessions.deltaBytes": lambda m: m.sync.sessions.delta_bytes,
        "multimodal.maxFileBytes": lambda m: m.multimodal.max_file_bytes,
    }
    return mapping[key](settings.memory_search)


@pytest.mark.parametrize(("block", "key", "expected"), CLAMPS)
def test_clamps_are_applied_and_recorded(
    home: Path, env: dict[str, str], block: dict, key: str, expected: float
) -> None:
    s = load(home, env, memory_search(block))
    assert _field(s, key) == expected
    assert warned(s, f"{MS}.{key}")


def test_tokens_zero_forces_overlap_zero(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"chunking": {"tokens": 0}}))
    assert (s.memory_search.chunking.tokens, s.memory_search.chunking.overlap) == (1, 0)


def test_default_overlap_adapts_silently_to_small_tokens(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"chunking": {"tokens": 50}}))
    assert s.memory_search.chunking.overlap == 49
    assert s.warnings == ()


def test_in_range_values_produce_no_warning(home: Path, env: dict[str, str]) -> None:
    block = {
        "query": {"minScore": 0, "hybrid": {"candidateMultiplier": 20, "mmr": {"lambda": 1}}},
        "chunking": {"tokens": 10, "overlap": 9},
    }
    s = load(home, env, memory_search(block))
    assert s.warnings == ()


@pytest.mark.parametrize("value", [768, 1536, 3072])
def test_output_dimensionality_accepts_the_three_sizes(
    home: Path, env: dict[str, str], value: int
) -> None:
    s = load(home, env, memory_search({"outputDimensionality": value}))
    assert s.memory_search.output_dimensionality == value


@pytest.mark.parametrize("value", [1000, 0, "768"])
def test_output_dimensionality_rejects_anything_else(
    home: Path, env: dict[str, str], value: object
) -> None:
    with pytest.raises(ConfigError) as info:
        load(home, env, memory_search({"outputDimensionality": value}))
    assert f"{MS}.outputDimensionality" in str(info.value)
    assert "768" in str(info.value)


# --------------------------------------------------------------------------- JSON5


def test_json5_comments_trailing_commas_unquoted_keys(home: Path, env: dict[str, str]) -> None:
    text = """
    // OpenClaw config, as people really write it
    {
      agents: {
        defaults: {
          /* block comment */
          memorySearch: {
            provider: 'openai',          // single quotes
            query: { maxResults: 0x0A, minScore: .5, },
            extraPaths: ["notes",],
          },
        },
      },
    }
    """
    s = load(home, env, text)
    assert s.memory_search.provider == "openai"
    assert s.memory_search.query.max_results == 10
    assert s.memory_search.query.min_score == 0.5
    assert s.memory_search.extra_paths == ("notes",)


def test_malformed_json5_names_file_line_and_column(home: Path, env: dict[str, str]) -> None:
    path = write_config(home, '{\n  agents: {\n    defaults: { workspace: "x" "y" },\n  },\n}\n')
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    message = str(info.value)
    assert str(path) in message
    assert "line 3" in message
    assert "column 32" in message  # the opening quote of "y"
    assert info.value.file == path


def test_unterminated_document_reports_position(home: Path, env: dict[str, str]) -> None:
    path = write_config(home, "{ agents: {")
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert "openclaw.json" in str(info.value)
    assert "line 1" in str(info.value)
    assert info.value.file == path


def test_top_level_must_be_an_object(home: Path, env: dict[str, str]) -> None:
    for text in ("[1, 2]", '"hello"', "42"):
        write_config(home, text)
        with pytest.raises(ConfigError) as info:
            load_settings(env=env)
        assert "top level" in str(info.value)
        assert "openclaw.json" in str(info.value)


def test_non_utf8_file_is_a_clear_error(home: Path, env: dict[str, str]) -> None:
    path = write_config(home, b'{\n  memory: { citations: "caf\xe9" }\n}\n')
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    message = str(info.value)
    assert str(path) in message
    assert "UTF-8" in message
    assert "0xe9" in message
    assert "line 2" in message


def test_utf8_bom_is_accepted(home: Path, env: dict[str, str]) -> None:
    write_config(home, b'\xef\xbb\xbf{ memory: { citations: "on" } }')
    assert load_settings(env=env).citations == "on"


def test_directory_instead_of_file(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=tmp_path, env=env)
    assert "directory" in str(info.value)


def test_read_json5_returns_empty_marker_for_blank_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json5"
    path.write_text("\n", encoding="utf-8")
    assert read_json5(path) is None
    assert read_json5(path, empty={}) == {}


# --------------------------------------------------------------------------- types


TYPE_ERRORS = [
    ({"enabled": "yes"}, "enabled", "boolean", '"yes"'),
    ({"query": {"minScore": "high"}}, "query.minScore", "number", '"high"'),
    ({"query": {"maxResults": True}}, "query.maxResults", "number", "true"),
    ({"extraPaths": "docs"}, "extraPaths", "array of strings", '"docs"'),
    ({"extraPaths": ["a", 3]}, "extraPaths[1]", "string", "3"),
    ({"chunking": 5}, "chunking", "object", "5"),
    ({"query": {"hybrid": {"mmr": {"lambda": True}}}}, "query.hybrid.mmr.lambda", "number", "true"),
    ({"remote": {"headers": {"X-A": 1}}}, "remote.headers.X-A", "string", ""),
    ({"store": {"path": 7}}, "store.path", "string", "7"),
    ({"sources": ["memory", "mail"]}, "sources[1]", "one of", '"mail"'),
    ({"multimodal": {"modalities": ["video"]}}, "multimodal.modalities[0]", "one of", '"video"'),
    ({"sync": {"watch": 1}}, "sync.watch", "boolean", "1"),
]


@pytest.mark.parametrize(("block", "key", "expected", "found"), TYPE_ERRORS)
def test_wrong_type_names_key_expectation_and_value(
    home: Path, env: dict[str, str], block: dict, key: str, expected: str, found: str
) -> None:
    path = write_config(home, memory_search(block))
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    message = str(info.value)
    assert f"{MS}.{key}:" in message
    assert expected in message
    assert found in message
    assert str(path) in message
    assert info.value.key == f"{MS}.{key}"


def test_nan_and_infinity_are_rejected(home: Path, env: dict[str, str]) -> None:
    write_config(home, "{agents: {defaults: {memorySearch: {query: {minScore: NaN}}}}}")
    with pytest.raises(ConfigError, match="finite number"):
        load_settings(env=env)
    write_config(home, "{agents: {defaults: {memorySearch: {chunking: {tokens: Infinity}}}}}")
    with pytest.raises(ConfigError, match=r"chunking\.tokens"):
        load_settings(env=env)


def test_long_values_are_truncated_in_messages(home: Path, env: dict[str, str]) -> None:
    write_config(home, memory_search({"provider": "x" * 500}))
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert "…" in str(info.value)
    assert len(str(info.value)) < 400


def test_secrets_are_not_echoed(home: Path, env: dict[str, str]) -> None:
    write_config(home, memory_search({"remote": {"apiKey": 987654321}}))
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert "remote.apiKey" in str(info.value)
    assert "987654321" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "key", "suggestion"),
    [
        (memory_search({"provider": "opnai"}), f"{MS}.provider", '"openai"'),
        (memory_search({"fallback": "auto"}), f"{MS}.fallback", ""),
        (memory_search({"query": {"hybrid": {"fusion": "rff"}}}), f"{MS}.query.hybrid.fusion", ""),
        (
            memory_search({"query": {"hybrid": {"normalization": "min-max"}}}),
            f"{MS}.query.hybrid.normalization",
            '"minmax"',
        ),
        (
            memory_search({"query": {"hybrid": {"mmr": {"similarity": "cos"}}}}),
            f"{MS}.query.hybrid.mmr.similarity",
            "",
        ),
        (
            memory_search({"store": {"fts": {"tokenizer": "snowball"}}}),
            f"{MS}.store.fts.tokenizer",
            "",
        ),
        ('{memory: {backend: "qdm"}}', "memory.backend", '"qmd"'),
        ('{memory: {citations: "yes"}}', "memory.citations", ""),
    ],
)
def test_enumerations_are_validated(
    home: Path, env: dict[str, str], text: str, key: str, suggestion: str
) -> None:
    write_config(home, text)
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    message = str(info.value)
    assert f"{key}:" in message
    assert "expected one of" in message
    assert suggestion in message


@pytest.mark.parametrize("provider", ["openai", "gemini", "voyage", "mistral", "ollama", "local"])
def test_every_provider_is_accepted(home: Path, env: dict[str, str], provider: str) -> None:
    s = load(home, env, memory_search({"provider": provider, "fallback": provider}))
    assert (s.memory_search.provider, s.memory_search.fallback) == (provider, provider)


def test_parent_of_a_key_must_be_an_object(home: Path, env: dict[str, str]) -> None:
    write_config(home, '{agents: {defaults: {memorySearch: {query: {hybrid: "on"}}}}}')
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert f"{MS}.query.hybrid:" in str(info.value)
    assert "object" in str(info.value)


def test_agents_and_memory_sections_must_be_objects(home: Path, env: dict[str, str]) -> None:
    for text, key in [
        ("{agents: []}", "agents"),
        ("{agents: {defaults: 1}}", "agents.defaults"),
        ("{agents: {defaults: {memorySearch: true}}}", MS),
        ("{memory: 'qmd'}", "memory"),
        ("{agents: {list: {}}}", "agents.list"),
        ("{agents: {list: [{workspace: '/x'}]}}", "agents.list[0].id"),
    ]:
        write_config(home, text)
        with pytest.raises(ConfigError) as info:
            load_settings(env=env)
        assert f"{key}:" in str(info.value), text


# --------------------------------------------------------------------------- unknown keys


def test_unknown_key_warns_with_suggestion(home: Path, env: dict[str, str]) -> None:
    block = {"query": {"hybrd": {"enabled": False}, "maxResults": 3}, "chunkng": {}}
    s = load(home, env, memory_search(block))
    assert s.memory_search.query.max_results == 3
    assert s.memory_search.query.hybrid.enabled is True  # the typo did not apply
    assert warned(s, f"{MS}.query.hybrd", "unknown key", '"hybrid"')
    assert warned(s, f"{MS}.chunkng", '"chunking"')


def test_unknown_key_without_close_match_has_no_suggestion(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"zzzzzz": 1}))
    assert warned(s, f"{MS}.zzzzzz", "unknown key")
    assert not warned(s, "did you mean")


def test_unknown_memory_key_warns(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, '{memory: {backnd: "qmd"}}')
    assert s.backend == "builtin"
    assert warned(s, "memory.backnd", '"backend"')


def test_openclaw_keys_memdeck_ignores_do_not_warn(home: Path, env: dict[str, str]) -> None:
    block = {
        "store": {"driver": "sqlite"},
        "sync": {"watchDebounceMs": 1500},
        "qmd": {"extraCollections": [{"path": "/x", "name": "x"}]},
    }
    text = json.dumps(
        {
            "agents": {"defaults": {"memorySearch": block, "model": "x"}},
            "gateway": {"port": 1},
            "channels": {},
        }
    )
    assert load(home, env, text).warnings == ()


# --------------------------------------------------------------------------- agents


AGENTS = {
    "agents": {
        "defaults": {
            "workspace": "~/shared-ws",
            "memorySearch": {
                "provider": "openai",
                "extraPaths": ["shared"],
                "sources": ["memory", "sessions"],
                "experimental": {"sessionMemory": True},
                "query": {
                    "maxResults": 10,
                    "hybrid": {"vectorWeight": 0.6, "textWeight": 0.4, "mmr": {"enabled": True}},
                },
                "remote": {"headers": {"A": "1", "B": "2"}},
            },
        },
        "list": [
            {"id": "main"},
            {
                "id": "work",
                "workspace": "~/work-ws",
                "memorySearch": {
                    "model": "text-embedding-3-large",
                    "extraPaths": ["mine", "shared"],
                    "sources": ["memory"],
                    "query": {"hybrid": {"textWeight": 0.6, "mmr": {"lambda": 0.3}}},
                    "remote": {"headers": {"B": "agent"}},
                },
            },
        ],
    }
}


def test_agent_override_deep_merges(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, json.dumps(AGENTS), agent_id="work")
    ms = s.memory_search
    assert s.agent_id == "work"
    assert s.workspace == home / "work-ws"
    assert ms.provider == "openai"  # inherited
    assert ms.model == "text-embedding-3-large"  # overridden
    assert ms.query.max_results == 10  # sibling of an overridden object kept
    hybrid = ms.query.hybrid
    assert (hybrid.vector_weight, hybrid.text_weight) == pytest.approx((0.5, 0.5))  # 0.6/0.6
    assert (hybrid.mmr.enabled, hybrid.mmr.lambda_) == (True, 0.3)  # merged one level down
    assert ms.sources == ("memory",)  # arrays replace
    assert ms.remote.headers == {"A": "1", "B": "agent"}
    # extraPaths is OpenClaw's exception: agent paths add to the shared ones.
    assert ms.extra_paths == ("shared", "mine")
    assert warned(s, "agents.list[1].memorySearch.query.hybrid")


def test_listed_agent_without_override_uses_defaults(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, json.dumps(AGENTS), agent_id="main")
    assert s.workspace == home / "shared-ws"
    assert s.memory_search.model is None
    assert s.memory_search.sources == ("memory", "sessions")
    assert s.memory_search.extra_paths == ("shared",)


def test_agent_error_points_at_the_agent_entry(home: Path, env: dict[str, str]) -> None:
    config = {
        "agents": {
            "defaults": {"memorySearch": {"query": {"minScore": 0.5}}},
            "list": [{"id": "work", "memorySearch": {"query": {"minScore": "low"}}}],
        }
    }
    write_config(home, json.dumps(config))
    with pytest.raises(ConfigError) as info:
        load_settings(env=env, agent_id="work")
    assert "agents.list[0].memorySearch.query.minScore:" in str(info.value)


def test_agent_unknown_key_warns_at_agent_path(home: Path, env: dict[str, str]) -> None:
    config = {"agents": {"list": [{"id": "work", "memorySearch": {"providr": "openai"}}]}}
    s = load(home, env, json.dumps(config), agent_id="work")
    assert warned(s, "agents.list[0].memorySearch.providr", '"provider"')


def test_unknown_agent_id_is_an_error_naming_known_ids(home: Path, env: dict[str, str]) -> None:
    write_config(home, json.dumps(AGENTS))
    with pytest.raises(ConfigError) as info:
        load_settings(env=env, agent_id="wrok")
    message = str(info.value)
    assert '"main"' in message
    assert '"work"' in message
    assert "wrok" in message


def test_unknown_agent_allowed_when_list_is_empty(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"store": {"path": "/idx/{agentId}.db"}}), agent_id="ops")
    assert s.agent_id == "ops"
    assert s.memory_search.store.path == Path("/idx/ops.db")
    assert s.workspace == home / ".openclaw" / "workspace"


def test_default_agent_need_not_be_listed(home: Path, env: dict[str, str]) -> None:
    config = {"agents": {"list": [{"id": "work"}]}}
    s = load(home, env, json.dumps(config))
    assert s.agent_id == "main"


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".."])
def test_agent_ids_cannot_escape_the_state_dir(home: Path, env: dict[str, str], bad: str) -> None:
    with pytest.raises(ConfigError, match="agent id"):
        load_settings(env=env, agent_id=bad)


# --------------------------------------------------------------------------- paths in config


def test_workspace_argument_beats_config(home: Path, env: dict[str, str], tmp_path: Path) -> None:
    write_config(home, json.dumps(AGENTS))
    s = load_settings(env=env, agent_id="work", workspace=tmp_path / "cli-ws")
    assert s.workspace == tmp_path / "cli-ws"
    s = load_settings(env=env, workspace=Path("~/notes"))
    assert s.workspace == home / "notes"


def test_relative_paths_resolve_against_the_config_folder(
    tmp_path: Path, env: dict[str, str]
) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    config = folder / "custom.json5"
    block = {
        "store": {"path": "index/{agentId}.sqlite"},
        "local": {"modelPath": "models/m.gguf", "modelCacheDir": "cache"},
        "extraPaths": ["../team-docs"],
    }
    config.write_text(
        json.dumps({"agents": {"defaults": {"workspace": "ws", "memorySearch": block}}}),
        encoding="utf-8",
    )
    s = load_settings(env=env, config_path=config, agent_id="main")
    assert s.config_path == config
    assert s.workspace == folder / "ws"
    assert s.memory_search.store.path == folder / "index" / "main.sqlite"
    assert s.memory_search.local.model_path == str(folder / "models" / "m.gguf")
    assert s.memory_search.local.model_cache_dir == folder / "cache"
    assert s.memory_search.extra_paths == ("../team-docs",)  # resolved later, by workspace


def test_tilde_expands_against_env_home(home: Path, env: dict[str, str]) -> None:
    block = {"store": {"path": "~/idx/{agentId}.sqlite"}, "local": {"modelPath": "~/m.gguf"}}
    s = load(home, env, memory_search(block))
    assert s.memory_search.store.path == home / "idx" / "main.sqlite"
    assert s.memory_search.local.model_path == str(home / "m.gguf")
    assert s.memory_search.local.explicit is True


def test_hf_model_uri_is_kept_verbatim(home: Path, env: dict[str, str]) -> None:
    uri = "hf:someone/repo/model.gguf"
    s = load(home, env, memory_search({"local": {"modelPath": uri}}))
    assert s.memory_search.local.model_path == uri
    assert s.memory_search.local.explicit is True


# --------------------------------------------------------------------------- env


def test_env_substitution(home: Path, env: dict[str, str]) -> None:
    env = {**env, "EMBED_KEY": "sk-from-env", "TEAM": "core"}
    block = {
        "remote": {"apiKey": "${EMBED_KEY}", "headers": {"X-Team": "team-${TEAM}"}},
        "model": "$${NOT_EXPANDED}",
    }
    s = load(home, env, memory_search(block))
    assert s.memory_search.remote.api_key == "sk-from-env"
    assert s.memory_search.remote.headers == {"X-Team": "team-core"}
    assert s.memory_search.model == "${NOT_EXPANDED}"


def test_unset_env_reference_is_unset_with_warning(home: Path, env: dict[str, str]) -> None:
    s = load(home, env, memory_search({"remote": {"apiKey": "${MISSING_KEY}"}}))
    assert s.memory_search.remote.api_key is None
    assert warned(s, f"{MS}.remote.apiKey", "$MISSING_KEY")


def test_state_dir_env_moves_config_and_index(tmp_path: Path, env: dict[str, str]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "openclaw.json").write_text('{memory: {citations: "off"}}', encoding="utf-8")
    s = load_settings(env={**env, "OPENCLAW_STATE_DIR": str(state)})
    assert s.state_dir == state
    assert s.config_path == state / "openclaw.json"
    assert s.citations == "off"
    assert s.index_path == state / "memory" / "main.memdeck.sqlite"


def test_config_path_env(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "elsewhere.json"
    config.write_text('{memory: {backend: "qmd"}}', encoding="utf-8")
    s = load_settings(env={**env, "OPENCLAW_CONFIG_PATH": str(config)})
    assert s.config_path == config
    assert s.backend == "qmd"


def test_config_path_env_to_missing_file_warns(tmp_path: Path, env: dict[str, str]) -> None:
    s = load_settings(env={**env, "OPENCLAW_CONFIG_PATH": str(tmp_path / "gone.json")})
    assert s.config_path is None
    assert warned(s, "OPENCLAW_CONFIG_PATH", "gone.json")


def test_explicit_config_argument_beats_env(tmp_path: Path, env: dict[str, str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{memory: {citations: "on"}}', encoding="utf-8")
    b.write_text('{memory: {citations: "off"}}', encoding="utf-8")
    s = load_settings(config_path=b, env={**env, "OPENCLAW_CONFIG_PATH": str(a)})
    assert s.citations == "off"


def test_explicit_missing_config_is_an_error(tmp_path: Path, env: dict[str, str]) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=missing, env=env)
    assert str(missing) in str(info.value)
    assert "not found" in str(info.value)


def test_config_error_is_a_value_error() -> None:
    err = ConfigError("bad", file=Path("/x/openclaw.json"), key="memory.backend")
    assert isinstance(err, ValueError)
    assert str(err) == "/x/openclaw.json: memory.backend: bad"
    assert (err.file, err.key, err.detail) == (Path("/x/openclaw.json"), "memory.backend", "bad")


# --------------------------------------------------------------------------- engine.config.paths


def test_state_dir_default(home: Path, env: dict[str, str]) -> None:
    assert paths.state_dir(env) == home / ".openclaw"


def test_state_dir_env_override_with_tilde(home: Path, env: dict[str, str]) -> None:
    assert paths.state_dir({**env, "OPENCLAW_STATE_DIR": "~/state"}) == home / "state"


def test_state_dir_blank_env_is_ignored(home: Path, env: dict[str, str]) -> None:
    assert paths.state_dir({**env, "OPENCLAW_STATE_DIR": "  "}) == home / ".openclaw"


def test_moltbot_fallback_only_without_openclaw(home: Path, env: dict[str, str]) -> None:
    (home / ".moltbot").mkdir()
    assert paths.state_dir(env) == home / ".moltbot"
    assert paths.config_path(env) == home / ".moltbot" / "openclaw.json"
    (home / ".openclaw").mkdir()
    assert paths.state_dir(env) == home / ".openclaw"


def test_moltbot_fallback_loses_to_env(home: Path, env: dict[str, str], tmp_path: Path) -> None:
    (home / ".moltbot").mkdir()
    state = tmp_path / "explicit"
    assert paths.state_dir({**env, "OPENCLAW_STATE_DIR": str(state)}) == state


def test_load_settings_reads_config_from_moltbot(home: Path, env: dict[str, str]) -> None:
    (home / ".moltbot").mkdir()
    (home / ".moltbot" / "openclaw.json").write_text("{memory: {citations: 'off'}}")
    s = load_settings(env=env)
    assert s.state_dir == home / ".moltbot"
    assert s.citations == "off"


def test_config_path_rules(home: Path, env: dict[str, str], tmp_path: Path) -> None:
    assert paths.config_path(env) == home / ".openclaw" / "openclaw.json"
    state = tmp_path / "s"
    assert paths.config_path({**env, "OPENCLAW_STATE_DIR": str(state)}) == state / "openclaw.json"
    custom = {**env, "OPENCLAW_STATE_DIR": str(state), "OPENCLAW_CONFIG_PATH": "~/c.json5"}
    assert paths.config_path(custom) == home / "c.json5"


def test_memdeck_home_rules(home: Path, env: dict[str, str], tmp_path: Path) -> None:
    assert paths.memdeck_home(env) == home / ".config" / "memdeck"
    xdg = {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert paths.memdeck_home(xdg) == tmp_path / "xdg" / "memdeck"
    own = {**xdg, "MEMDECK_HOME": "~/md"}
    assert paths.memdeck_home(own) == home / "md"


def test_sessions_dir(tmp_path: Path) -> None:
    assert paths.sessions_dir(tmp_path, "work") == tmp_path / "agents" / "work" / "sessions"


def test_expand_user(home: Path, env: dict[str, str]) -> None:
    assert paths.expand_user("~", env) == home
    assert paths.expand_user("~/a/b", env) == home / "a" / "b"
    assert paths.expand_user("/abs/~x", env) == Path("/abs/~x")
    assert paths.expand_user("rel", env) == Path("rel")


def test_a_folder_given_on_the_command_line_gets_its_own_index(
    home: Path, env: dict[str, str], tmp_path: Path
) -> None:
    agent = load_settings(env=env)
    other = load_settings(env=env, workspace=tmp_path / "notes")
    same = load_settings(env=env, workspace=home / ".openclaw" / "workspace")
    assert agent.index_path == home / ".openclaw" / "memory" / "main.memdeck.sqlite"
    assert same.index_path == agent.index_path
    assert other.index_path.parent == agent.index_path.parent
    assert other.index_path.name.startswith("main.") and other.index_path != agent.index_path
    assert load_settings(env=env, workspace=tmp_path / "notes").index_path == other.index_path
