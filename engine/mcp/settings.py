"""The ``mcp`` section of memdeck's own settings file.

``<memdeck home>/settings.json`` (the same file as the app's theme and keymap,
see ``memdeck_home``), never ``openclaw.json``, whose schema OpenClaw enforces::

    {
      "mcp": {
        "allowAppend": false,        // expose memory_append (agents may write)
        "token": "…",               // bearer token for a non-loopback --http bind
        "allowedOrigins": ["https://app.example"],  // extra browser origins
        "allowedHosts": ["memdeck.lan:*"]           // extra Host header values
      }
    }

``$MEMDECK_MCP_TOKEN`` beats ``token``. Writing stays off unless the user
turned it on here: an agent cannot enable it by itself. Unlike the app's UI
preferences, a mistake in this section stops the server with a message naming
the key, because guessing wrong here changes what an agent may do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.config.loader import ConfigError, read_json5
from engine.config.paths import env_value, memdeck_home

TOKEN_ENV = "MEMDECK_MCP_TOKEN"
SETTINGS_FILENAME = "settings.json"
_KEYS = ("allowAppend", "token", "allowedOrigins", "allowedHosts")


@dataclass(frozen=True)
class McpSettings:
    allow_append: bool = False
    token: str | None = None
    token_source: str | None = None  # "$MEMDECK_MCP_TOKEN" or the settings file
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    path: Path | None = None  # the settings file read, if any


def mcp_settings_path(env: Mapping[str, str] = os.environ) -> Path:
    return memdeck_home(env) / SETTINGS_FILENAME


def load_mcp_settings(env: Mapping[str, str] = os.environ) -> McpSettings:
    """Read the ``mcp`` section (a missing file or section means the defaults)."""
    path = mcp_settings_path(env)
    env_token = env_value(env, TOKEN_ENV)
    data = read_json5(path, empty={}) if path.is_file() else {}
    if not isinstance(data, Mapping):
        raise ConfigError("expected an object at the top level", file=path)
    section = data.get("mcp", {})
    if not isinstance(section, Mapping):
        raise ConfigError("expected an object", file=path, key="mcp")
    for key in section:
        if key not in _KEYS:
            raise ConfigError(
                f"unknown key (known: {', '.join(_KEYS)})", file=path, key=f"mcp.{key}"
            )
    allow = section.get("allowAppend", False)
    if not isinstance(allow, bool):
        raise ConfigError(
            f"expected true or false, got {allow!r}", file=path, key="mcp.allowAppend"
        )
    token = section.get("token")
    if token is not None and (not isinstance(token, str) or len(token.strip()) < 16):
        raise ConfigError("expected a string of at least 16 characters", file=path, key="mcp.token")
    lists = {}
    for key in ("allowedOrigins", "allowedHosts"):
        value = section.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError("expected a list of strings", file=path, key=f"mcp.{key}")
        lists[key] = tuple(value)
    if env_token:
        token, source = env_token, f"${TOKEN_ENV}"
    elif token:
        token, source = token.strip(), str(path)
    else:
        token, source = None, None
    return McpSettings(
        allow_append=allow,
        token=token,
        token_source=source,
        allowed_origins=lists["allowedOrigins"],
        allowed_hosts=lists["allowedHosts"],
        path=path if path.is_file() else None,
    )
