"""memdeck's own settings file, read and validated in one place.

``<memdeck home>/settings.json`` (JSON5: comments and trailing commas allowed)
holds what is memdeck's choice rather than the agent's, so it never goes into
``openclaw.json`` (whose schema OpenClaw enforces)::

    {
      profile: "memdeck",              // or "openclaw" (engine.config.profile)
      store: { backend: "postgres", dsnEnv: "MEMDECK_PG_DSN", namespace: "team" },
      mcp: { allowAppend: false, token: "…", allowedOrigins: [], allowedHosts: [] },
      theme: "memdeck-dark", keymap: { … }, layout: { treeWidth: 34 },   // the app
    }

:func:`load_memdeck_settings` reads the file once into :class:`MemdeckSettings`:
one typed section per part (``profile``, ``store``, ``mcp``, and the app's
``ui`` keys, which the app validates itself), and every problem found, each a
:class:`ConfigError` naming the file and the key. Reading never raises; each
part decides what a problem in *its* section means: the MCP server and the
PostgreSQL store refuse to start (a wrong guess there changes what an agent may
do, or splits a team's memory), the app starts with its defaults and lists the
problems.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.config.paths import memdeck_home
from engine.config.reader import ConfigError, read_json5

SETTINGS_FILENAME = "settings.json"
#: the app's own keys (validated by ``tui.settings``)
UI_KEYS = ("theme", "keymap", "layout")
#: every top-level key of settings.json
KNOWN_KEYS = (*UI_KEYS, "profile", "mcp", "store")
STORE_KEYS = ("backend", "dsnEnv", "namespace")
MCP_KEYS = ("allowAppend", "token", "allowedOrigins", "allowedHosts")
DEFAULT_DSN_ENV = "MEMDECK_PG_DSN"
#: a bearer token shorter than this is refused (for a non-loopback bind)
MIN_TOKEN_CHARS = 16

Section = Literal["file", "profile", "store", "mcp", "ui"]


@dataclass(frozen=True)
class StoreSection:
    """``store``: which index store, and where PostgreSQL's DSN comes from."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    dsn_env: str = DEFAULT_DSN_ENV
    namespace: str | None = None


@dataclass(frozen=True)
class McpSection:
    """``mcp``: what the MCP server exposes and to whom."""

    allow_append: bool = False
    token: str | None = None
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemdeckSettings:
    """The settings file as read: each section (defaults where it is absent or
    wrong) and the problems found, per section."""

    path: Path
    exists: bool = False
    profile: str | None = None
    store: StoreSection = field(default_factory=StoreSection)
    mcp: McpSection = field(default_factory=McpSection)
    #: the app's keys as written (``theme``, ``keymap``, ``layout``); the app validates them
    ui: Mapping[str, Any] = field(default_factory=dict)
    problems: tuple[tuple[Section, ConfigError], ...] = ()

    def problem(self, section: Section) -> ConfigError | None:
        """The first problem that makes ``section`` unusable: the file's own (cannot
        be read, not an object), else the section's."""
        for where in ("file", section):
            for got, error in self.problems:
                if got == where:
                    return error
        return None

    def messages(self, *sections: Section) -> tuple[str, ...]:
        """Every problem of the given sections (all when none given), as lines."""
        return tuple(str(e) for s, e in self.problems if not sections or s in sections)


def memdeck_settings_path(env: Mapping[str, str] = os.environ) -> Path:
    return memdeck_home(env) / SETTINGS_FILENAME


def load_memdeck_settings(env: Mapping[str, str] = os.environ) -> MemdeckSettings:
    """The settings file of this memdeck home (see the module docstring); never raises."""
    return read_memdeck_settings(memdeck_settings_path(env))


def read_memdeck_settings(path: Path) -> MemdeckSettings:
    """Read and validate ``path``; a missing file is all defaults. Never raises."""
    if not path.exists():
        return MemdeckSettings(path=path)
    try:
        data = read_json5(path, empty={})
    except ConfigError as exc:
        return MemdeckSettings(path=path, exists=True, problems=(("file", exc),))
    if not isinstance(data, Mapping):
        error = ConfigError("expected an object at the top level", file=path)
        return MemdeckSettings(path=path, exists=True, problems=(("file", error),))
    problems: list[tuple[Section, ConfigError]] = []
    for key in sorted(set(data) - set(KNOWN_KEYS), key=str):
        known = ", ".join(KNOWN_KEYS)
        problems.append(("file", ConfigError(f"unknown key (known: {known})", file=path, key=key)))
    profile = data.get("profile")
    if profile is not None and not isinstance(profile, str):
        error = ConfigError(
            f"expected memdeck or openclaw, got {profile!r}", file=path, key="profile"
        )
        problems.append(("profile", error))
        profile = None
    store, store_problem = _store(data.get("store", {}), path)
    mcp, mcp_problem = _mcp(data.get("mcp", {}), path)
    problems += [("store", e) for e in store_problem] + [("mcp", e) for e in mcp_problem]
    # the file-level problems above are unknown keys: they stop no section
    unknown: list[tuple[Section, ConfigError]] = [("ui", e) for s, e in problems if s == "file"]
    problems = [(s, e) for s, e in problems if s != "file"]
    return MemdeckSettings(
        path=path,
        exists=True,
        profile=profile,
        store=store,
        mcp=mcp,
        ui={k: data[k] for k in UI_KEYS if k in data},
        problems=(*unknown, *problems),
    )


def _section(value: object, path: Path, name: str, keys: tuple[str, ...]) -> list[ConfigError]:
    if not isinstance(value, Mapping):
        return [ConfigError("expected an object", file=path, key=name)]
    return [
        ConfigError(f"unknown key (known: {', '.join(keys)})", file=path, key=f"{name}.{key}")
        for key in value
        if key not in keys
    ]


def _store(value: object, path: Path) -> tuple[StoreSection, list[ConfigError]]:
    errors = _section(value, path, "store", STORE_KEYS)
    if errors or not isinstance(value, Mapping):
        return StoreSection(), errors
    backend = value.get("backend", "sqlite")
    if backend not in ("sqlite", "postgres"):
        return StoreSection(), [
            ConfigError(
                f"expected 'sqlite' or 'postgres', got {backend!r}", file=path, key="store.backend"
            )
        ]
    dsn_env = value.get("dsnEnv", DEFAULT_DSN_ENV)
    if not isinstance(dsn_env, str) or not dsn_env:
        return StoreSection(), [
            ConfigError("expected an environment variable name", file=path, key="store.dsnEnv")
        ]
    namespace = value.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace.strip()):
        return StoreSection(), [
            ConfigError("expected a non-empty string", file=path, key="store.namespace")
        ]
    return StoreSection(backend, dsn_env, namespace), []


def _mcp(value: object, path: Path) -> tuple[McpSection, list[ConfigError]]:
    errors = _section(value, path, "mcp", MCP_KEYS)
    if errors or not isinstance(value, Mapping):
        return McpSection(), errors
    allow = value.get("allowAppend", False)
    if not isinstance(allow, bool):
        return McpSection(), [
            ConfigError(f"expected true or false, got {allow!r}", file=path, key="mcp.allowAppend")
        ]
    token = value.get("token")
    if token is not None and (not isinstance(token, str) or len(token.strip()) < MIN_TOKEN_CHARS):
        return McpSection(), [
            ConfigError(
                f"expected a string of at least {MIN_TOKEN_CHARS} characters",
                file=path,
                key="mcp.token",
            )
        ]
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("allowedOrigins", "allowedHosts"):
        items = value.get(key, [])
        if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
            return McpSection(), [
                ConfigError("expected a list of strings", file=path, key=f"mcp.{key}")
            ]
        lists[key] = tuple(items)
    return (
        McpSection(
            allow_append=allow,
            token=token.strip() if token else None,
            allowed_origins=lists["allowedOrigins"],
            allowed_hosts=lists["allowedHosts"],
        ),
        [],
    )
