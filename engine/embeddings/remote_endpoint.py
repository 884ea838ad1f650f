"""Where a remote provider sends its requests and with which key.

Precedence: ``remote.*`` beats ``models.providers.<p>.*``, headers merge (remote
wins), then the provider's environment variable (docs/architecture.md
"Configuration").

Key order: ``remote.apiKey``, then ``models.providers.<p>.apiKey``, then the
provider's environment variable. Base URL: ``remote.baseUrl``, then
``models.providers.<p>.baseUrl``, then the provider's public default. Headers:
``models.providers.<p>.headers`` merged with ``remote.headers`` (names compared
case-insensitively, ``remote`` wins).

``remote.*`` belongs to the provider the user configured. When a remote primary
has a different remote fallback, the fallback does not inherit the primary's
endpoint and key; it uses its own ``models.providers`` entry and environment.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from engine.config.settings import Settings

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "mistral": "https://api.mistral.ai/v1",
    "voyage": "https://api.voyageai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta",
    "ollama": "http://127.0.0.1:11434",
}
ENV_KEYS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "voyage": "VOYAGE_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "ollama": "OLLAMA_API_KEY",
}
#: names a provider may have under ``models.providers`` (OpenClaw calls Gemini "google")
CONFIG_NAMES: dict[str, tuple[str, ...]] = {
    "gemini": ("gemini", "google"),
}
#: providers that work without any key (a local server)
KEY_OPTIONAL = frozenset({"ollama"})
REMOTE_NAMES = tuple(DEFAULT_BASE_URLS)


@dataclass(frozen=True)
class Endpoint:
    provider: str
    base_url: str
    api_key: str | None
    key_source: str | None  # "remote.apiKey", "models.providers.openai.apiKey", "OPENAI_API_KEY"
    headers: dict[str, str] = field(default_factory=dict)  # extra headers, auth not included
    base_source: str = "default"

    @property
    def custom(self) -> bool:
        return self.base_url != DEFAULT_BASE_URLS.get(self.provider)

    def key_hash(self, *extra: object) -> str:
        """What separates vector spaces of one model: endpoint, non-secret headers, extras.

        Never includes the key (rotating a key must not invalidate the cache)."""
        from engine.embeddings.http_retry import SECRET_HEADER

        public = sorted(
            (k.lower(), v) for k, v in self.headers.items() if not SECRET_HEADER.search(k)
        )
        blob = json.dumps([self.provider, self.base_url, public, list(extra)], default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def redacted(self) -> dict[str, object]:
        """For status screens: the endpoint, where the key came from, header names."""
        from engine.embeddings.http_retry import mask_url_credentials

        return {
            "endpoint": mask_url_credentials(self.base_url),
            "endpoint_source": self.base_source,
            "api_key": f"<redacted> from {self.key_source}" if self.api_key else None,
            "headers": sorted(self.headers),
        }


def uses_remote_block(name: str, settings: Settings) -> bool:
    """Whether ``memorySearch.remote`` applies to provider ``name`` (see module doc)."""
    ms = settings.memory_search
    primary_is_remote = ms.provider in REMOTE_NAMES
    return not (name == ms.fallback and primary_is_remote and ms.provider != name)


_V = TypeVar("_V")


def _config_value(table: Mapping[str, _V], name: str) -> tuple[_V, str] | None:
    for alias in CONFIG_NAMES.get(name, (name,)):
        if table.get(alias):
            return table[alias], alias
    return None


def resolve_key(
    name: str, settings: Settings, env: Mapping[str, str]
) -> tuple[str | None, str | None]:
    """(key, where it came from); (None, None) when nothing resolves."""
    remote = settings.memory_search.remote
    if uses_remote_block(name, settings) and remote.api_key:
        return remote.api_key, "remote.apiKey"
    found = _config_value(settings.provider_api_keys, name)
    if found:
        value, alias = found
        return str(value), f"models.providers.{alias}.apiKey"
    var = ENV_KEYS.get(name)
    if var and env.get(var, "").strip():
        return env[var].strip(), var
    return None, None


def remote_available(name: str, settings: Settings, env: Mapping[str, str]) -> bool:
    """Whether auto-detection may pick ``name``: an API key resolves for it.

    Here, beside the key lookup, rather than with the providers: the auto choice asks
    it of every command when no local model is registered, and the providers' module
    loads httpx (a fifth of a ``memdeck status`` process's CPU) for nothing when no
    key resolves (``engine.embeddings.http_retry`` is imported only where used)."""
    if name not in REMOTE_NAMES:
        return False
    key, _ = resolve_key(name, settings, env)
    return key is not None


def merge_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """Later layers win; header names compare case-insensitively."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for key, value in layer.items():
            merged[key.lower()] = (key, str(value))
    return dict(merged.values())


def resolve_endpoint(name: str, settings: Settings, env: Mapping[str, str]) -> Endpoint:
    remote = settings.memory_search.remote
    own = uses_remote_block(name, settings)
    base, source = DEFAULT_BASE_URLS[name], "default"
    found = _config_value(settings.provider_base_urls, name)
    if found:
        base, source = str(found[0]), f"models.providers.{found[1]}.baseUrl"
    if own and remote.base_url:
        base, source = remote.base_url, "remote.baseUrl"
    provider_headers = _config_value(settings.provider_headers, name)
    headers = merge_headers(
        dict(provider_headers[0]) if provider_headers else {},
        remote.headers if own else {},
    )
    key, key_source = resolve_key(name, settings, env)
    return Endpoint(name, base.rstrip("/"), key, key_source, headers, source)
