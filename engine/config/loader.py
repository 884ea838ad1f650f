"""Build :class:`engine.config.settings.Settings` from OpenClaw's ``openclaw.json``.

memdeck reads the same file as a running OpenClaw gateway, so two promises shape
this module:

* A file OpenClaw accepts must never stop memdeck: keys memdeck does not know
  become warnings, out-of-range numbers are clamped the way OpenClaw clamps them
  (and the change is recorded in ``Settings.warnings``), and ``${VAR}`` references
  that cannot be expanded in this shell are treated as unset.
* A file memdeck cannot use gets one precise :class:`ConfigError` naming the
  file, the dotted key path, what was expected and what was found, so the user
  can fix it without reading source code.

Everything downstream reads only the frozen dataclasses; the parsed document is
kept in ``Settings.raw`` for the sections other modules own (``memory.qmd``,
``agents.defaults.compaction``, dreaming).

This module picks the agent, merges its ``memorySearch`` over the defaults
(tracking where each value came from) and assembles :class:`Settings`; the
reader and its rules live in :mod:`engine.config.reader`, the memorySearch keys
and builders in :mod:`engine.config.memory_search`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.config import paths
from engine.config.memory_search import MEMORY_SEARCH_KEYS, build_memory_search
from engine.config.profile import ProfileError, resolve_profile
from engine.config.reader import (
    MISSING,
    ConfigContext,
    ConfigError,
    ConfigReader,
    describe,
    merge_with_origins,
    read_json5,
    show,
    suggest,
    unique,
    warn_unknown,
)
from engine.config.settings import Settings
from engine.openclaw.config import (
    OPENCLAW_RELEASE,
    ExtraPathPattern,
    normalize_extra_paths,
    read_layouts,
)

DEFAULT_AGENT_ID = Settings.agent_id
BACKENDS = ("builtin", "qmd")
CITATION_MODES = ("auto", "on", "off")
_MEMORY_KEYS: dict[str, Any] = {"backend": None, "citations": None, "qmd": None, "search": None}


def _env_path(root: ConfigReader, text: str) -> str:
    """``${VAR}`` in one extraPaths entry; an unset variable drops it (with a warning)."""
    single = ConfigReader({"extraPaths": text}, {(): ""}, root.ctx)
    return (single.string(("extraPaths",)) or "").strip()


def _provider_options(
    root: ConfigReader,
) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, str]]]:
    """``models.providers.<p>.{apiKey,baseUrl,headers}``, the fallback for ``remote.*``.

    These entries belong to OpenClaw's chat-model config, where an apiKey may be
    a secret reference object rather than a string: such keys are skipped with a
    warning instead of failing, since memdeck only needs plain strings.
    """
    keys: dict[str, str] = {}
    urls: dict[str, str] = {}
    headers: dict[str, dict[str, str]] = {}
    for name in root.obj(("models", "providers")):
        base = ("models", "providers", name)
        if not root.obj(base):
            continue
        api_key = root.get((*base, "apiKey"))
        if api_key is not MISSING and not isinstance(api_key, str):
            root.ctx.warn(
                root.where((*base, "apiKey")),
                f"{describe(api_key, secret=True)} is not supported here; key ignored",
            )
        else:
            value = root.string((*base, "apiKey"))
            if value and value.strip():
                keys[name] = value.strip()
        url = root.string((*base, "baseUrl"))
        if url and url.strip():
            urls[name] = url.strip()
        extra = root.string_map((*base, "headers"))
        if extra:
            headers[name] = extra
    return keys, urls, headers


def _check_agent_id(agent_id: str) -> None:
    """Agent ids become directory names; refuse ones that would escape the state dir."""
    if not agent_id.strip() or agent_id in (".", "..") or re.search(r"[/\\\x00]", agent_id):
        raise ConfigError(f"invalid agent id {show(agent_id)}: it must be a plain name")


def _agent_entry(
    root: ConfigReader, agent_id: str, explicit: bool
) -> tuple[int | None, dict[str, Any]]:
    """Find ``agents.list[]``'s entry for *agent_id*, validating the list on the way."""
    listed = root.get(("agents", "list"))
    if listed is MISSING:
        listed = []
    if not isinstance(listed, list):
        raise root.ctx.type_error("agents.list", "an array of agent objects", listed)
    ids: list[str] = []
    found: tuple[int | None, dict[str, Any]] = (None, {})
    for index, entry in enumerate(listed):
        where = f"agents.list[{index}]"
        if not isinstance(entry, dict):
            raise root.ctx.type_error(where, "an object like { id: ... }", entry)
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not entry_id.strip():
            raise root.ctx.type_error(f"{where}.id", "a non-empty string", entry_id)
        ids.append(entry_id)
        if entry_id == agent_id and found[0] is None:
            found = (index, entry)
    if explicit and ids and found[0] is None:
        known = ", ".join(f'"{i}"' for i in ids)
        raise root.ctx.error(
            "agents.list",
            f'no agent with id "{agent_id}"{suggest(agent_id, ids)}; known ids: {known}',
        )
    return found


def _resolve_workspace(
    root: ConfigReader, workspace: Path | None, entry: ConfigReader, ctx: ConfigContext
) -> Path:
    """CLI argument, else the agent's own workspace, else the shared default."""
    if workspace is not None:
        return Path(os.path.abspath(paths.expand_user(workspace, ctx.env)))
    return _agent_workspace(root, entry, ctx)


def _agent_workspace(root: ConfigReader, entry: ConfigReader, ctx: ConfigContext) -> Path:
    """The workspace openclaw.json gives this agent (what OpenClaw itself would use)."""
    found = entry.path(("workspace",)) or root.path(("agents", "defaults", "workspace"))
    return found or paths.home_dir(ctx.env) / ".openclaw" / "workspace"


# --------------------------------------------------------------------------- public


def load_settings(
    *,
    config_path: Path | None = None,
    workspace: Path | None = None,
    agent_id: str | None = None,
    env: Mapping[str, str] = os.environ,
    profile: str | None = None,
) -> Settings:
    """Resolve the settings for one agent and workspace.

    *config_path* is the CLI's ``--config``: when given, the file must exist.
    Without it the default location (``$OPENCLAW_CONFIG_PATH`` or
    ``<state>/openclaw.json``) is optional, so memdeck works on a machine that
    has never run OpenClaw. *workspace* (``memdeck PATH``) beats the config.

    Raises :class:`ConfigError` for anything memdeck cannot run with; everything
    it can work around ends up in ``Settings.warnings``.
    """
    state = paths.state_dir(env)
    try:
        chosen_profile, profile_source = resolve_profile(profile, env)
    except ProfileError as exc:
        raise ConfigError(str(exc)) from None
    explicit_config = config_path is not None
    if config_path is not None:
        path = Path(os.path.abspath(paths.expand_user(config_path, env)))
    else:
        path = paths.config_path(env)
    ctx = ConfigContext(file=path, base_dir=path.parent, env=env)

    document: Any = MISSING
    read_path: Path | None = path
    if explicit_config or path.exists():
        document = read_json5(path, empty=MISSING)
        if document is MISSING:
            ctx.warn("", "the file is empty; using defaults")
    else:
        read_path = None
        if paths.env_value(env, paths.CONFIG_PATH_ENV):
            ctx.warn("", f"${paths.CONFIG_PATH_ENV} names a missing file; using defaults")
    if document is MISSING:
        document = {}
    if not isinstance(document, dict):
        raise ctx.error(
            "", f"expected an object {{ ... }} at the top level, found {describe(document)}"
        )

    root = ConfigReader(document, {(): ""}, ctx)
    chosen_agent = agent_id if agent_id is not None else DEFAULT_AGENT_ID
    _check_agent_id(chosen_agent)
    root.obj(("agents", "defaults"))
    index, entry = _agent_entry(root, chosen_agent, explicit=agent_id is not None)

    # Both layouts (seed memorySearch, 2026.9 memory.search) combined per scope;
    # see engine.openclaw.config for the precedence and 2026.9's defaults.
    root.obj(("agents", "defaults", "memorySearch"))  # type errors at their true path
    root.obj(("memory", "search"))
    override_reader = ConfigReader(entry, {(): f"agents.list[{index}]"}, ctx)
    if entry:
        override_reader.obj(("memorySearch",))
        override_reader.obj(("memory", "search"))
    layouts = read_layouts(document, index, entry)
    if read_path is None:
        layouts = dataclasses.replace(layouts, rejected=())
    defaults_ms, defaults_where = layouts.defaults.block, layouts.defaults.where
    override_ms, override_where = layouts.agent.block, layouts.agent.where
    raw_extra = [
        (scope.origins.get(("extraPaths",), f"{scope.where}.extraPaths"), value)
        for scope in (layouts.defaults, layouts.agent)
        if (value := scope.block.pop("extraPaths", None)) is not None
    ]
    memory = root.obj(("memory",))

    warn_unknown(defaults_ms, MEMORY_SEARCH_KEYS, defaults_where, ctx)
    warn_unknown(override_ms, MEMORY_SEARCH_KEYS, override_where, ctx)
    warn_unknown(memory, _MEMORY_KEYS, "memory", ctx)

    origins: dict[tuple[str, ...], str] = dict(layouts.defaults.origins)
    origins[()] = defaults_where
    merged = merge_with_origins(defaults_ms, override_ms, override_where, (), origins)
    origins.update({rel: where for rel, where in layouts.agent.origins.items() if rel})
    # extraPaths is the one list OpenClaw concatenates rather than replaces:
    # an agent's extra folders come on top of the shared ones. Items may be
    # strings or 2026.9's {path, pattern} objects.
    extra_plain, extra_globs, extra_errors = normalize_extra_paths(raw_extra)
    if extra_errors:
        where, expected, found = extra_errors[0]
        raise ctx.type_error(where, expected, found)
    extra_paths = tuple(p for p in unique([_env_path(root, p) for p in extra_plain]) if p)
    extra_patterns = tuple(
        ExtraPathPattern(folder, x.pattern)
        for x in extra_globs
        if (folder := _env_path(root, x.path))
    )
    merged_reader = ConfigReader(merged, origins, ctx)
    memory_search = build_memory_search(merged_reader, chosen_agent, extra_paths)
    if extra_patterns:
        memory_search = dataclasses.replace(memory_search, extra_path_patterns=extra_patterns)

    slot = root.string(("plugins", "slots", "memory"))
    api_keys, base_urls, headers = _provider_options(root)
    resolved_workspace = _resolve_workspace(root, workspace, override_reader, ctx)
    return Settings(
        agent_id=chosen_agent,
        workspace=resolved_workspace,
        agent_workspace=_agent_workspace(root, override_reader, ctx),
        state_dir=state,
        config_path=read_path,
        memory_search=memory_search,
        backend=root.choice(("memory", "backend"), BACKENDS, Settings.backend),
        citations=root.choice(("memory", "citations"), CITATION_MODES, Settings.citations),
        tools_enabled=slot is None or slot.strip().lower() != "none",
        provider_api_keys=api_keys,
        provider_base_urls=base_urls,
        provider_headers=headers,
        raw=document,
        config_layout=layouts.status_line,
        memory_search_path=layouts.defaults.where,
        profile=chosen_profile,
        profile_source=profile_source,
        openclaw_rejections=tuple(
            f"{read_path}: OpenClaw {OPENCLAW_RELEASE} would refuse this file: {rejected}"
            for rejected in layouts.rejected
        ),
        warnings=tuple(dict.fromkeys(ctx.warnings)),  # a key read twice warns once
    )


__all__ = ["ConfigError", "load_settings", "read_json5"]
