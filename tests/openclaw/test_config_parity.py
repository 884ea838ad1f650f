"""memdeck reads OpenClaw 2026.9's ``memory.search`` as OpenClaw 2026.9.6 resolves it.

200 generated configurations, valid for 2026.9.6 (shared ``memory.search``, an
agent's ``agents.list[].memory.search``, ``session.dmScope``), are resolved by
OpenClaw's own ``resolveMemorySearchConfig`` (through node/resolve_config.mjs)
and by :func:`engine.config.loader.load_settings`; every key memdeck uses must
come out equal.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from engine.config.loader import load_settings
from engine.config.settings import PROVIDER_DEFAULT_MODELS, Settings

CASES = 200
PROVIDERS = ["openai", "gemini", "voyage", "mistral", "ollama", "local", "none", "auto", ""]


def _maybe(rng: random.Random, p: float = 0.5) -> bool:
    return rng.random() < p


def _search_block(rng: random.Random, tmp: Path) -> dict[str, Any]:
    block: dict[str, Any] = {}
    if _maybe(rng, 0.15):
        block["enabled"] = rng.random() < 0.5
    if _maybe(rng, 0.3):
        block["rememberAcrossConversations"] = _maybe(rng)
    if _maybe(rng, 0.4):
        block["sources"] = rng.choice([["memory"], ["sessions"], ["memory", "sessions"], []])
    if _maybe(rng, 0.4):
        block["experimental"] = {"sessionMemory": _maybe(rng)}
    if _maybe(rng, 0.6):
        block["provider"] = rng.choice(PROVIDERS)
    if _maybe(rng, 0.3):
        block["model"] = rng.choice(["text-embedding-3-large", "nomic-embed-text", "m-1"])
    if _maybe(rng, 0.3):
        block["fallback"] = rng.choice(["none", "openai", "gemini", "local"])
    if _maybe(rng, 0.3):
        remote: dict[str, Any] = {}
        if _maybe(rng):
            remote["baseUrl"] = rng.choice(["http://127.0.0.1:9/v1", "https://example.test/v1"])
        if _maybe(rng):
            remote["apiKey"] = "sk-test-" + str(rng.randint(0, 999))
        if _maybe(rng):
            remote["batch"] = {"enabled": _maybe(rng)}
        block["remote"] = remote
    if _maybe(rng, 0.2):
        block["local"] = {"modelPath": str(tmp / f"model-{rng.randint(0, 9)}.gguf")}
    if _maybe(rng, 0.3):
        items: list[Any] = []
        for _ in range(rng.randint(1, 3)):
            folder = str(tmp / rng.choice(["notes", "docs", "kb"]))
            if _maybe(rng):
                items.append(folder)
            else:
                entry: dict[str, Any] = {"path": folder}
                if _maybe(rng, 0.7):
                    entry["pattern"] = rng.choice(["*.md", "**/*.md", "projects/**", " "])
                items.append(entry)
        block["extraPaths"] = items
    if _maybe(rng, 0.3):
        block["multimodal"] = {"enabled": False}
        if _maybe(rng):
            block["multimodal"]["maxFileBytes"] = rng.randint(1, 50_000_000)
    if _maybe(rng, 0.2):
        block["store"] = {
            "fts": {"tokenizer": rng.choice(["unicode61", "trigram"])},
            "vector": {"enabled": _maybe(rng)},
        }
    if _maybe(rng, 0.5):
        query: dict[str, Any] = {}
        if _maybe(rng):
            query["maxResults"] = rng.randint(1, 40)
        if _maybe(rng):
            query["minScore"] = round(rng.random(), 3)
        block["query"] = query
    if _maybe(rng, 0.2):
        block["cache"] = {"enabled": _maybe(rng)}
    if _maybe(rng, 0.1):
        block["inputType"] = "search_document"
    return block


def _config(rng: random.Random, tmp: Path) -> tuple[dict[str, Any], str]:
    config: dict[str, Any] = {"memory": {"search": _search_block(rng, tmp)}}
    agent_id = "main"
    if _maybe(rng, 0.5):
        agent_id = rng.choice(["main", "ops", "writer"])
        entry: dict[str, Any] = {"id": agent_id}
        if _maybe(rng, 0.7):
            entry["memory"] = {"search": _search_block(rng, tmp)}
        config["agents"] = {"list": [{"id": "other"}, entry]}
    if _maybe(rng, 0.2):
        config["session"] = {"dmScope": rng.choice(["main", "per-peer", "per-channel-peer"])}
    return config, agent_id


def _openclaw_view(resolved: dict[str, Any] | None) -> dict[str, Any]:
    """OpenClaw's resolution reduced to the keys memdeck uses."""
    if resolved is None:
        return {"enabled": False}
    q, h = resolved["query"], resolved["query"]["hybrid"]
    remote = resolved.get("remote") or {}
    extra = {
        (x, "") if isinstance(x, str) else (x["path"], x.get("pattern", ""))
        for x in resolved["extraPaths"]
    }
    return {
        "enabled": True,
        "provider": resolved["provider"],
        "model": resolved["model"],
        "fallback": resolved["fallback"],
        "remote": [
            remote.get("baseUrl"),
            remote.get("apiKey"),
            (remote.get("batch") or {}).get("enabled", False),
        ],
        "local_model": (resolved.get("local") or {}).get("modelPath"),
        "extra": sorted(extra),
        "max_results": q["maxResults"],
        "min_score": q["minScore"],
        "hybrid": [h["enabled"], h["vectorWeight"], h["textWeight"], h["candidateMultiplier"]],
        "mmr": [h["mmr"]["enabled"], h["mmr"]["lambda"]],
        "decay": [h["temporalDecay"]["enabled"], h["temporalDecay"]["halfLifeDays"]],
        "chunking": [resolved["chunking"]["tokens"], resolved["chunking"]["overlap"]],
        "cache": [resolved["cache"]["enabled"], resolved["cache"]["maxEntries"]],
        "store": [resolved["store"]["fts"]["tokenizer"], resolved["store"]["vector"]["enabled"]],
        "searched": sorted(resolved["searchSources"]),
        "session_memory": resolved["experimental"]["sessionMemory"],
        "multimodal": [resolved["multimodal"]["enabled"], resolved["multimodal"]["maxFileBytes"]],
        "sync": [
            resolved["sync"]["watch"],
            resolved["sync"]["onSessionStart"],
            resolved["sync"]["onSearch"],
            resolved["sync"]["intervalMinutes"],
            resolved["sync"]["sessions"]["deltaBytes"],
            resolved["sync"]["sessions"]["deltaMessages"],
        ],
    }


def _memdeck_view(s: Settings, openclaw_model: str) -> dict[str, Any]:
    ms = s.memory_search
    if not ms.enabled:
        return {"enabled": False}
    h = ms.query.hybrid
    # OpenClaw names a provider's default model only when that provider's plugin
    # is loaded (openai and ollama are built in); memdeck always knows it.
    model = ms.model or ""
    if not ms.model and not openclaw_model:
        model = ""
    elif not ms.model:
        model = PROVIDER_DEFAULT_MODELS.get(ms.provider, "")
    extra = {(p, "") for p in ms.extra_paths} | {
        (x.path, x.pattern) for x in ms.extra_path_patterns
    }
    return {
        "enabled": True,
        "provider": ms.provider,
        "model": model,
        "fallback": ms.fallback,
        "remote": [ms.remote.base_url, ms.remote.api_key, ms.remote.batch.enabled],
        "local_model": ms.local.model_path if ms.local.explicit else None,
        "extra": sorted(extra),
        "max_results": ms.query.max_results,
        "min_score": ms.query.min_score,
        "hybrid": [h.enabled, h.vector_weight, h.text_weight, h.candidate_multiplier],
        "mmr": [h.mmr.enabled, h.mmr.lambda_],
        "decay": [h.temporal_decay.enabled, h.temporal_decay.half_life_days],
        "chunking": [ms.chunking.tokens, ms.chunking.overlap],
        "cache": [ms.cache.enabled, ms.cache.max_entries],
        "store": [ms.store.fts_tokenizer, ms.store.vector_enabled],
        "searched": sorted(ms.sources if ms.session_memory else ("memory",)),
        "session_memory": ms.session_memory,
        "multimodal": [ms.multimodal.enabled, ms.multimodal.max_file_bytes],
        "sync": [
            ms.sync.watch,
            ms.sync.on_session_start,
            ms.sync.on_search,
            ms.sync.interval_minutes,
            ms.sync.sessions.delta_bytes,
            ms.sync.sessions.delta_messages,
        ],
    }


def test_200_generated_memory_search_configs_resolve_as_openclaw_does(openclaw, tmp_path: Path):
    rng = random.Random(20260906)
    cases = [_config(rng, tmp_path) for _ in range(CASES)]
    results = openclaw.node_json(
        "resolve_config.mjs", [{"config": c, "agentId": a} for c, a in cases]
    )
    assert len(results) == CASES
    env = {"HOME": str(tmp_path / "home"), "OPENCLAW_STATE_DIR": str(tmp_path / "state")}
    mismatches: list[str] = []
    disabled = 0
    for number, ((config, agent_id), result) in enumerate(zip(cases, results, strict=True)):
        assert "error" not in result, (config, result)
        path = tmp_path / f"openclaw-{number}.json"
        path.write_text(json.dumps(config))
        settings = load_settings(config_path=path, agent_id=agent_id, env=env)
        theirs = _openclaw_view(result["resolved"])
        ours = _memdeck_view(settings, theirs.get("model", ""))
        disabled += not theirs["enabled"]
        assert settings.config_layout.startswith("memory.search")
        for key in sorted(set(theirs) | set(ours)):
            if theirs.get(key) != ours.get(key):
                mismatches.append(
                    f"case {number} {key}: openclaw {theirs.get(key)!r} memdeck {ours.get(key)!r}"
                    f"\n  {json.dumps(config)}"
                )
    assert not mismatches, f"{len(mismatches)} differences:\n" + "\n".join(mismatches[:20])
    assert 0 < disabled < CASES  # the generator covers enabled:false and enabled configs
