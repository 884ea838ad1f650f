"""Choosing the embedding provider from settings (docs/architecture.md "Embedding providers").

Auto order: local (an explicit ``local.modelPath`` that exists, or the model
registered by ``memdeck model import``), then openai, gemini, voyage, mistral
when a key resolves; otherwise none (FTS-only). ``ollama`` is never
auto-detected. A configured ``fallback`` wraps the primary.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.config.settings import Settings
from engine.embeddings.base import EmbeddingProvider, ProviderError

AUTO_REMOTE_ORDER = ("openai", "gemini", "voyage", "mistral")
REMOTE_PROVIDERS = ("openai", "gemini", "voyage", "mistral", "ollama")


@dataclass(frozen=True)
class ProviderChoice:
    provider: EmbeddingProvider | None
    requested: str
    reason: str  # why this provider (or none) was chosen
    error: str | None = None  # set when the requested provider could not be built


def local_model_candidate(settings: Settings) -> str | None:
    """The GGUF path or ``hf:`` URI the local provider would use, if any."""
    local = settings.memory_search.local
    if local.explicit:
        return local.model_path
    from engine.embeddings.registry import default_model_path

    registered = default_model_path()
    return str(registered) if registered else None


def _local_factory(settings: Settings) -> EmbeddingProvider:
    from engine.embeddings.local import LocalProvider

    target = local_model_candidate(settings) or settings.memory_search.local.model_path
    local = settings.memory_search.local
    if target.startswith("hf:"):
        return LocalProvider.from_settings(local)
    return LocalProvider(Path(target).expanduser(), cache_dir=local.model_cache_dir)


def _factory(
    name: str, settings: Settings, env: Mapping[str, str]
) -> Callable[[], EmbeddingProvider]:
    if name == "local":
        return lambda: _local_factory(settings)
    if name in REMOTE_PROVIDERS:
        from engine.embeddings.remote import create_remote_provider

        return lambda: create_remote_provider(name, settings, env)
    raise ProviderError(f"unknown embedding provider {name!r}")


def _auto_name(settings: Settings, env: Mapping[str, str]) -> tuple[str, str]:
    target = local_model_candidate(settings)
    if target and (target.startswith("hf:") is False and Path(target).expanduser().is_file()):
        return "local", f"auto: local model {target}"
    from engine.embeddings.remote_endpoint import remote_available  # no httpx

    for name in AUTO_REMOTE_ORDER:
        if remote_available(name, settings, env):
            return name, f"auto: {name} API key found"
    return "none", "auto: no local model and no API key; FTS-only"


def create_provider(settings: Settings, env: Mapping[str, str] = os.environ) -> ProviderChoice:
    """Build the provider the settings ask for; never raises (errors are reported)."""
    ms = settings.memory_search
    requested = ms.provider
    if requested == "none":
        return ProviderChoice(None, requested, "provider: none (FTS-only)")
    name, reason = (
        _auto_name(settings, env) if requested == "auto" else (requested, f"provider: {requested}")
    )
    if name == "none":
        return ProviderChoice(None, requested, reason)
    try:
        primary = _factory(name, settings, env)
        if ms.fallback and ms.fallback not in ("none", name):
            from engine.embeddings.fallback import FallbackProvider

            provider: EmbeddingProvider = FallbackProvider(
                primary, _factory(ms.fallback, settings, env), primary_name=name
            )
        else:
            provider = primary()
        return ProviderChoice(provider, requested, reason)
    except ProviderError as exc:
        return ProviderChoice(None, requested, reason, error=str(exc))
