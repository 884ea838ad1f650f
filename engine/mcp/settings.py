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

from engine.config.memdeck_settings import (
    MIN_TOKEN_CHARS,
    SETTINGS_FILENAME,
    load_memdeck_settings,
    memdeck_settings_path,
)
from engine.config.paths import env_value
from engine.config.reader import ConfigError

TOKEN_ENV = "MEMDECK_MCP_TOKEN"
__all__ = [
    "SETTINGS_FILENAME",
    "TOKEN_ENV",
    "McpSettings",
    "load_mcp_settings",
    "mcp_settings_path",
]


@dataclass(frozen=True)
class McpSettings:
    allow_append: bool = False
    token: str | None = None
    token_source: str | None = None  # "$MEMDECK_MCP_TOKEN" or the settings file
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    path: Path | None = None  # the settings file read, if any


def mcp_settings_path(env: Mapping[str, str] = os.environ) -> Path:
    return memdeck_settings_path(env)


def load_mcp_settings(env: Mapping[str, str] = os.environ) -> McpSettings:
    """The ``mcp`` section (a missing file or section means the defaults) and the
    token from the environment; a mistake in either raises ``ConfigError``."""
    settings = load_memdeck_settings(env)
    problem = settings.problem("mcp")
    if problem is not None:
        raise problem
    section = settings.mcp
    env_token = env_value(env, TOKEN_ENV)
    if env_token:
        if len(env_token.strip()) < MIN_TOKEN_CHARS:
            raise ConfigError(
                f"${TOKEN_ENV} is {len(env_token.strip())} characters; a bearer token needs "
                f"at least {MIN_TOKEN_CHARS} (e.g. `openssl rand -hex 24`)"
            )
        token, source = env_token.strip(), f"${TOKEN_ENV}"
    elif section.token:
        token, source = section.token, str(settings.path)
    else:
        token, source = None, None
    return McpSettings(
        allow_append=section.allow_append,
        token=token,
        token_source=source,
        allowed_origins=section.allowed_origins,
        allowed_hosts=section.allowed_hosts,
        path=settings.path if settings.exists else None,
    )
