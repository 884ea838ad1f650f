"""The ``memorySearch`` schema: known keys, allowed values and the builders.

:func:`build_memory_search` turns the merged ``agents.defaults.memorySearch`` +
``agents.list[].memorySearch`` block (already annotated with each value's origin)
into :class:`MemorySearchSettings`. Every default comes from the dataclasses in
:mod:`engine.config.settings`, never a literal here; every range and clamp is
OpenClaw's, so a file the gateway accepts reads the same way in memdeck.
"""

from __future__ import annotations

import math
import re
from typing import Any

from engine.config.reader import MISSING, ConfigReader, unique
from engine.config.settings import (
    FTS_TOKENIZERS,
    FUSIONS,
    MMR_SIMILARITIES,
    NORMALIZATIONS,
    PROVIDERS,
    BatchSettings,
    CacheSettings,
    ChunkingSettings,
    DecaySettings,
    HybridSettings,
    LocalSettings,
    MemorySearchSettings,
    MMRSettings,
    MultimodalSettings,
    QuerySettings,
    RemoteSettings,
    SessionSyncSettings,
    StoreSettings,
    SyncSettings,
    normalize_weights,
)

FALLBACKS = tuple(p for p in PROVIDERS if p != "auto")  # "auto" is not a fallback
OUTPUT_DIMENSIONS = (768, 1536, 3072)
SOURCES = ("memory", "sessions")
MODALITIES = ("image", "audio", "all")

_DEFAULT = MemorySearchSettings()
_HYBRID = _DEFAULT.query.hybrid

# Known keys, for "unknown key" warnings only; ``None`` marks a leaf (or a
# section another module validates, such as ``qmd``). Types and ranges are
# checked by the builders below, which read exactly these keys.
_BATCH_KEYS = dict.fromkeys(("enabled", "wait", "concurrency", "pollIntervalMs", "timeoutMinutes"))
MEMORY_SEARCH_KEYS: dict[str, Any] = {
    "enabled": None,
    "provider": None,
    "model": None,
    "fallback": None,
    "remote": {"baseUrl": None, "apiKey": None, "headers": None, "batch": _BATCH_KEYS},
    "outputDimensionality": None,
    "local": {"modelPath": None, "modelCacheDir": None},
    "extraPaths": None,
    "chunking": {"tokens": None, "overlap": None},
    "query": {
        "maxResults": None,
        "minScore": None,
        "hybrid": {
            "enabled": None,
            "vectorWeight": None,
            "textWeight": None,
            "candidateMultiplier": None,
            "fusion": None,
            "normalization": None,
            "rrfK": None,
            "mmr": {"enabled": None, "lambda": None, "similarity": None},
            "temporalDecay": {"enabled": None, "halfLifeDays": None},
        },
    },
    "cache": {"enabled": None, "maxEntries": None},
    "store": {
        "driver": None,
        "path": None,
        "vector": {"enabled": None, "extensionPath": None, "lines": None},
        "fts": {"tokenizer": None},
    },
    "sync": {
        "watch": None,
        "watchDebounceMs": None,
        "onSessionStart": None,
        "onSearch": None,
        "intervalMinutes": None,
        "sessions": {"deltaBytes": None, "deltaMessages": None},
    },
    "experimental": {"sessionMemory": None},
    "sources": None,
    "multimodal": {"enabled": None, "modalities": None, "maxFileBytes": None},
    "qmd": None,  # agents.list[].memorySearch.qmd.extraCollections: the qmd module's
}


#: the most results one memory_search returns (the config, the CLI and the MCP tool)
MAX_RESULTS_LIMIT = 50


def _stripped(text: str | None) -> str | None:
    """Blank strings mean "not set", as they do for OpenClaw's optional strings."""
    return text.strip() or None if text else None


def _build_remote(ms: ConfigReader) -> RemoteSettings:
    batch, default = ("remote", "batch"), _DEFAULT.remote.batch
    return RemoteSettings(
        base_url=_stripped(ms.string(("remote", "baseUrl"))),
        api_key=_stripped(ms.string(("remote", "apiKey"))),
        headers=ms.string_map(("remote", "headers")),
        batch=BatchSettings(
            enabled=ms.boolean((*batch, "enabled"), default.enabled),
            wait=ms.boolean((*batch, "wait"), default.wait),
            concurrency=ms.integer((*batch, "concurrency"), default.concurrency, lo=1),
            poll_interval_ms=ms.integer((*batch, "pollIntervalMs"), default.poll_interval_ms, lo=0),
            timeout_minutes=ms.number((*batch, "timeoutMinutes"), default.timeout_minutes, lo=0),
        ),
    )


def _build_local(ms: ConfigReader) -> LocalSettings:
    model_path = _stripped(ms.string(("local", "modelPath")))
    # hf: URIs and URLs are not file paths; everything else is resolved like one.
    if model_path and not re.match(r"^(hf:|[a-z][a-z0-9+.-]*://)", model_path, re.I):
        model_path = str(ms.ctx.resolve_path(model_path))
    return LocalSettings(
        model_path=model_path or _DEFAULT.local.model_path,
        model_cache_dir=ms.path(("local", "modelCacheDir")),
        explicit=model_path is not None,
    )


def _build_output_dimensionality(ms: ConfigReader) -> int:
    """Only the three sizes Gemini Embedding 2 produces; anything else is an error, not a clamp."""
    keys = ("outputDimensionality",)
    value = ms.get(keys)
    if value is MISSING:
        return _DEFAULT.output_dimensionality
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ms.ctx.type_error(ms.where(keys), "a number", value)
    if value not in OUTPUT_DIMENSIONS:
        expected = "one of " + ", ".join(str(d) for d in OUTPUT_DIMENSIONS)
        raise ms.ctx.type_error(ms.where(keys), expected, value)
    return int(value)


def _build_weights(ms: ConfigReader) -> tuple[float, float]:
    """Clamp each weight to [0, 1], then scale them to sum to 1 (the default pair if both are 0)."""
    hybrid = ("query", "hybrid")
    vector = ms.number((*hybrid, "vectorWeight"), _HYBRID.vector_weight, lo=0, hi=1)
    text = ms.number((*hybrid, "textWeight"), _HYBRID.text_weight, lo=0, hi=1)
    new_vector, new_text = normalize_weights(vector, text)
    if not (math.isclose(new_vector, vector) and math.isclose(new_text, text)):
        ms.ctx.warn(
            ms.where(hybrid),
            f"vectorWeight/textWeight {vector:g}/{text:g} must sum to 1; "
            f"using {new_vector:.4g}/{new_text:.4g}",
        )
    return new_vector, new_text


def _build_query(ms: ConfigReader) -> QuerySettings:
    hybrid, query = ("query", "hybrid"), _DEFAULT.query
    mmr, decay = (*hybrid, "mmr"), (*hybrid, "temporalDecay")
    vector_weight, text_weight = _build_weights(ms)
    return QuerySettings(
        max_results=ms.integer(
            ("query", "maxResults"), query.max_results, lo=1, hi=MAX_RESULTS_LIMIT
        ),
        min_score=ms.number(("query", "minScore"), query.min_score, lo=0, hi=1),
        hybrid=HybridSettings(
            enabled=ms.boolean((*hybrid, "enabled"), _HYBRID.enabled),
            vector_weight=vector_weight,
            text_weight=text_weight,
            candidate_multiplier=ms.integer(
                (*hybrid, "candidateMultiplier"), _HYBRID.candidate_multiplier, lo=1, hi=20
            ),
            fusion=ms.choice((*hybrid, "fusion"), FUSIONS, _HYBRID.fusion),
            normalization=ms.choice(
                (*hybrid, "normalization"), NORMALIZATIONS, _HYBRID.normalization
            ),
            rrf_k=ms.integer((*hybrid, "rrfK"), _HYBRID.rrf_k, lo=1),
            mmr=MMRSettings(
                enabled=ms.boolean((*mmr, "enabled"), _HYBRID.mmr.enabled),
                lambda_=ms.number((*mmr, "lambda"), _HYBRID.mmr.lambda_, lo=0, hi=1),
                similarity=ms.choice(
                    (*mmr, "similarity"), MMR_SIMILARITIES, _HYBRID.mmr.similarity
                ),
            ),
            temporal_decay=DecaySettings(
                enabled=ms.boolean((*decay, "enabled"), _HYBRID.temporal_decay.enabled),
                # OpenClaw floors the half-life to whole days; so do we, for equal scores.
                half_life_days=float(
                    ms.integer(
                        (*decay, "halfLifeDays"),
                        int(_HYBRID.temporal_decay.half_life_days),
                        lo=1,
                    )
                ),
            ),
        ),
    )


def _build_store(ms: ConfigReader, agent_id: str) -> StoreSettings:
    ms.choice(("store", "driver"), ("sqlite",), "sqlite")  # OpenClaw's only driver
    store_path = _stripped(ms.string(("store", "path")))
    resolved = None
    if store_path:
        resolved = ms.ctx.resolve_path(store_path.replace("{agentId}", agent_id))
    extension = ms.path(("store", "vector", "extensionPath"))
    return StoreSettings(
        path=resolved,
        vector_enabled=ms.boolean(("store", "vector", "enabled"), _DEFAULT.store.vector_enabled),
        extension_path=str(extension) if extension else None,
        line_vectors=(
            None
            if ms.get(("store", "vector", "lines")) is MISSING
            else ms.boolean(("store", "vector", "lines"), False)
        ),
        fts_tokenizer=ms.choice(
            ("store", "fts", "tokenizer"), FTS_TOKENIZERS, _DEFAULT.store.fts_tokenizer
        ),
    )


def _build_sync(ms: ConfigReader) -> SyncSettings:
    default = _DEFAULT.sync
    # Validated for OpenClaw parity; memdeck's watcher debounce is fixed
    # at 1.5 s (docs/architecture.md "Sync").
    ms.integer(("sync", "watchDebounceMs"), 1500, lo=0)
    return SyncSettings(
        watch=ms.boolean(("sync", "watch"), default.watch),
        on_session_start=ms.boolean(("sync", "onSessionStart"), default.on_session_start),
        on_search=ms.boolean(("sync", "onSearch"), default.on_search),
        interval_minutes=ms.number(("sync", "intervalMinutes"), default.interval_minutes, lo=0),
        sessions=SessionSyncSettings(
            delta_bytes=ms.integer(
                ("sync", "sessions", "deltaBytes"), default.sessions.delta_bytes, lo=0
            ),
            delta_messages=ms.integer(
                ("sync", "sessions", "deltaMessages"), default.sessions.delta_messages, lo=0
            ),
        ),
    )


def _build_sources(ms: ConfigReader, session_memory: bool) -> tuple[str, ...]:
    """OpenClaw's rule: transcripts are searched only with experimental.sessionMemory."""
    sources = unique(ms.strings(("sources",), SOURCES)) or _DEFAULT.sources
    if "sessions" in sources and not session_memory:
        ms.ctx.warn(
            ms.where(("sources",)),
            '"sessions" needs experimental.sessionMemory = true; transcripts are not searched',
        )
        sources = tuple(s for s in sources if s != "sessions") or _DEFAULT.sources
    return sources


def _build_multimodal(ms: ConfigReader) -> MultimodalSettings:
    default = _DEFAULT.multimodal
    modalities = default.modalities
    if ms.get(("multimodal", "modalities")) is not MISSING:
        listed = ms.strings(("multimodal", "modalities"), MODALITIES)
        modalities = ("image", "audio") if "all" in listed else unique(listed)
    return MultimodalSettings(
        enabled=ms.boolean(("multimodal", "enabled"), default.enabled),
        modalities=modalities,
        max_file_bytes=ms.integer(("multimodal", "maxFileBytes"), default.max_file_bytes, lo=1),
    )


#: No embedding model reads more than this many tokens at once (most stop at 512 or
#: 8,192); a larger chunk size is a typo (``1e308``) and is clamped with a warning.
MAX_CHUNK_TOKENS = 65_536


def build_memory_search(
    ms: ConfigReader, agent_id: str, extra_paths: tuple[str, ...]
) -> MemorySearchSettings:
    chunking, cache = _DEFAULT.chunking, _DEFAULT.cache
    tokens = ms.integer(("chunking", "tokens"), chunking.tokens, lo=1, hi=MAX_CHUNK_TOKENS)
    session_memory = ms.boolean(("experimental", "sessionMemory"), _DEFAULT.session_memory)
    return MemorySearchSettings(
        enabled=ms.boolean(("enabled",), _DEFAULT.enabled),
        provider=ms.choice(("provider",), PROVIDERS, _DEFAULT.provider),
        model=_stripped(ms.string(("model",))),
        fallback=ms.choice(("fallback",), FALLBACKS, _DEFAULT.fallback),
        remote=_build_remote(ms),
        output_dimensionality=_build_output_dimensionality(ms),
        local=_build_local(ms),
        extra_paths=extra_paths,
        chunking=ChunkingSettings(
            tokens=tokens,
            overlap=ms.integer(("chunking", "overlap"), chunking.overlap, lo=0, hi=tokens - 1),
        ),
        query=_build_query(ms),
        cache=CacheSettings(
            enabled=ms.boolean(("cache", "enabled"), cache.enabled),
            max_entries=ms.integer(("cache", "maxEntries"), cache.max_entries, lo=1),
        ),
        store=_build_store(ms, agent_id),
        sync=_build_sync(ms),
        session_memory=session_memory,
        sources=_build_sources(ms, session_memory),
        multimodal=_build_multimodal(ms),
    )
