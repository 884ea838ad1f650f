"""OpenClaw 2026.9's ``memory.search`` layout, read beside the seed ``memorySearch`` one.

OpenClaw 2026.9 moved the memory-search block from ``agents.defaults.memorySearch``
(and ``agents.list[].memorySearch``) to ``memory.search`` (and
``agents.list[].memory.search``), froze most ranking knobs and refuses files that
still use the old place. Users run either release, so memdeck reads both:

* **Precedence.** Per scope (the shared defaults, then each agent), the
  ``memory.search`` block wins key by key and the seed block only fills keys it
  leaves unset. That is exactly what ``openclaw doctor --fix`` does when it
  migrates a file, so memdeck resolves a mixed file the way OpenClaw will once the
  file is fixed.
* **Semantics.** When any 2026.9 block is present, the defaults are 2026.9's:
  provider ``openai`` (``auto`` is read as ``openai``), MMR and temporal decay on,
  session sources decided by ``rememberAcrossConversations``, and a 10 MiB
  multimodal file limit. A file with only the seed layout keeps the seed
  defaults (MMR and decay off, provider auto-detection).
* **Refusals.** Everything OpenClaw 2026.9.6's strict schema or its legacy-config
  rules would refuse is named in one warning each, so the user learns why their
  agent will not start while memdeck still opens the file. Retired knobs that
  memdeck itself understands (weights, MMR, chunking, ...) are still honoured.

This module only reshapes the parsed document; typing, ranges and error messages
stay with :mod:`engine.config.loader`'s builders, which read the result.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

OPENCLAW_RELEASE = "2026.9.6"

Layout = Literal["none", "seed", "memory.search", "both"]

LAYOUT_LINES: dict[Layout, str] = {
    "none": "no memory search block; seed defaults",
    "seed": "agents.defaults.memorySearch (seed layout, OpenClaw ≤ 2026.8)",
    "memory.search": "memory.search (OpenClaw 2026.9 layout)",
    "both": (
        "memory.search (OpenClaw 2026.9 layout); keys it leaves unset come from "
        "agents.defaults.memorySearch (seed layout)"
    ),
}

# OpenClaw 2026.9.6's strict schema for one memory.search block: None is a leaf,
# a dict a nested strict object. Any other key makes OpenClaw refuse the file.
ACCEPTED_2026_9: dict[str, Any] = {
    "enabled": None,
    "rememberAcrossConversations": None,
    "sources": None,
    "extraPaths": None,
    "multimodal": {"enabled": None, "modalities": None, "maxFileBytes": None},
    "experimental": {"sessionMemory": None},
    "provider": None,
    "remote": {"baseUrl": None, "apiKey": None, "headers": None, "batch": {"enabled": None}},
    "fallback": None,
    "model": None,
    "inputType": None,
    "queryInputType": None,
    "documentInputType": None,
    "outputDimensionality": None,
    "local": {"modelPath": None},
    "store": {"fts": {"tokenizer": None}, "vector": {"enabled": None, "extensionPath": None}},
    "query": {"maxResults": None, "minScore": None},
    "cache": {"enabled": None},
}

# Keys OpenClaw accepts that memdeck has no use for: dropped before the seed-shaped
# builders see them, so they do not turn into "unknown key" warnings.
_ACCEPTED_UNUSED = (
    "rememberAcrossConversations",
    "inputType",
    "queryInputType",
    "documentInputType",
)

# Why 2026.9 refuses some keys (the retired tuning knobs are fixed values there).
_RETIRED = {
    "chunking": "chunking is fixed at 400/80 tokens",
    "query.hybrid": "hybrid search, its weights, MMR and temporal decay are fixed",
    "sync": "sync timing is fixed",
    "cache.maxEntries": "the cache size is fixed at 50000",
    "store.path": "indexes live in each agent's openclaw-agent.sqlite",
    "store.driver": "sqlite is the only store",
    "qmd": "the QMD backend was removed in 2026.8.1",
    "local.modelCacheDir": "not a 2026.9 setting",
}
_FLAT_KEYS = ("chunkSize", "chunkOverlap", "maxResults")

# The values 2026.9 resolves for knobs it no longer lets a user set; memdeck
# applies them as defaults of the 2026.9 layout (explicit values still win).
FIXED_2026_9: dict[str, Any] = {
    "query": {
        "hybrid": {
            "enabled": True,
            "vectorWeight": 0.7,
            "textWeight": 0.3,
            "candidateMultiplier": 4,
            "mmr": {"enabled": True, "lambda": 0.7},
            "temporalDecay": {"enabled": True, "halfLifeDays": 30},
        }
    },
    "chunking": {"tokens": 400, "overlap": 80},
    "multimodal": {"maxFileBytes": 10485760},
}
DEFAULT_PROVIDER_2026_9 = "openai"
#: the values of ``store.fts.tokenizer`` OpenClaw's schema accepts
OPENCLAW_TOKENIZERS = ("unicode61", "trigram")


@dataclass(frozen=True)
class ExtraPathPattern:
    """One ``extraPaths`` ``{path, pattern}`` entry: only files under *path* whose
    path relative to it matches the glob *pattern* are memory files."""

    path: str
    pattern: str


@dataclass(frozen=True)
class Scope:
    """One scope's memory-search block after both layouts were combined."""

    block: dict[str, Any]
    #: dotted path each key of *block* came from, for error messages
    origins: dict[tuple[str, ...], str]
    where: str  # the block's own dotted path (the 2026.9 one when it exists)


@dataclass(frozen=True)
class LayoutRead:
    """What :func:`read_layouts` found: the combined blocks and how they were read."""

    layout: Layout
    defaults: Scope
    agent: Scope
    #: one line per thing OpenClaw 2026.9.6 would refuse (empty when it accepts the file)
    rejected: tuple[str, ...]
    #: 2026.9 semantics (its defaults and fixed values) apply
    modern: bool

    @property
    def status_line(self) -> str:
        return LAYOUT_LINES[self.layout]


def _record(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _annotate(
    value: Any, where: str, rel: tuple[str, ...], out: dict[tuple[str, ...], str]
) -> None:
    out[rel] = where
    if isinstance(value, dict):
        for key, item in value.items():
            _annotate(item, f"{where}.{key}", (*rel, key), out)


def _fill_missing(
    target: dict[str, Any],
    source: dict[str, Any],
    where: str,
    rel: tuple[str, ...],
    origins: dict[tuple[str, ...], str],
) -> None:
    """``doctor --fix``'s merge: copy what *target* leaves unset, recursing into objects."""
    for key, value in source.items():
        if value is None:
            continue
        existing = target.get(key)
        if existing is None:
            target[key] = copy.deepcopy(value)
            _annotate(value, f"{where}.{key}", (*rel, key), origins)
        elif isinstance(existing, dict) and isinstance(value, dict):
            _fill_missing(existing, value, f"{where}.{key}", (*rel, key), origins)


def _combine(modern: Any, seed: Any, modern_where: str, seed_where: str) -> Scope:
    block: dict[str, Any] = copy.deepcopy(modern) if isinstance(modern, dict) else {}
    origins: dict[tuple[str, ...], str] = {}
    _annotate(block, modern_where, (), origins)
    if isinstance(seed, dict):
        if not isinstance(modern, dict):
            origins[()] = seed_where
        _fill_missing(block, seed, seed_where, (), origins)
    where = modern_where if isinstance(modern, dict) else seed_where
    return Scope(block=block, origins=origins, where=where)


def _unknown_keys(block: Any, known: dict[str, Any], where: str) -> list[str]:
    found: list[str] = []
    if not isinstance(block, dict):
        return found
    for key, value in block.items():
        if key not in known:
            found.append(f"{where}.{key}")
        elif isinstance(known[key], dict):
            found += _unknown_keys(value, known[key], f"{where}.{key}")
    return found


def _reason(path: str, block_where: str) -> str:
    rel = path[len(block_where) + 1 :]
    for prefix, why in _RETIRED.items():
        if rel == prefix or rel.startswith(prefix + "."):
            return f"retired in 2026.9: {why}"
    if rel in _FLAT_KEYS:
        return "legacy flat key; 2026.9 wants chunking.* / query.maxResults"
    return "not a 2026.9 memory.search key"


def _rejections(document: dict[str, Any], agents: list[tuple[int, dict[str, Any]]]) -> list[str]:
    """Everything OpenClaw 2026.9.6 refuses in the memory-search part of *document*."""
    out: list[str] = []
    fix = '; run "openclaw doctor --fix"'
    if _record(document.get("memorySearch")) is not None:
        out.append(f"memorySearch: top-level memorySearch moved to memory.search{fix}")
    defaults = _record(_record(document.get("agents")) and document["agents"].get("defaults"))
    if defaults is not None and defaults.get("memorySearch") is not None:
        out.append(f"agents.defaults.memorySearch: moved to memory.search{fix}")
    blocks: list[tuple[str, Any]] = []
    memory = _record(document.get("memory"))
    if memory is not None and memory.get("search") is not None:
        blocks.append(("memory.search", memory["search"]))
    for key in sorted(memory or {}, key=str):  # 2026.9's `memory` is strict: these two
        if key not in ("citations", "search"):
            why = (
                "the QMD backend was removed in 2026.8.1 (memdeck still serves it)"
                if key in ("backend", "qmd")
                else "not a key of 2026.9's memory block"
            )
            out.append(f"memory.{key}: {why}")
    for index, entry in agents:
        if entry.get("memorySearch") is not None:
            where = f"agents.list[{index}]"
            out.append(f"{where}.memorySearch: moved to {where}.memory.search{fix}")
        agent_memory = _record(entry.get("memory"))
        if agent_memory is not None and agent_memory.get("search") is not None:
            blocks.append((f"agents.list[{index}].memory.search", agent_memory["search"]))
    for where, block in blocks:
        if not isinstance(block, dict):
            continue
        provider = block.get("provider")
        if isinstance(provider, str) and provider.strip() == "auto":
            out.append(f'{where}.provider: "auto" is legacy; 2026.9 uses "openai"{fix}')
        for key in _unknown_keys(block, ACCEPTED_2026_9, where):
            out.append(f"{key}: {_reason(key, where)}")
        out += _value_rejections(block, where)
    return out


def _value_rejections(block: dict[str, Any], where: str) -> list[str]:
    """The few value checks of 2026.9's schema memdeck would otherwise clamp silently."""
    out: list[str] = []
    query = _record(block.get("query")) or {}
    max_results = query.get("maxResults")
    if max_results is not None and (
        isinstance(max_results, bool)
        or not isinstance(max_results, int | float)
        or not math.isfinite(max_results)
        or max_results != int(max_results)
        or max_results <= 0
    ):
        out.append(f"{where}.query.maxResults: 2026.9 wants a positive whole number")
    min_score = query.get("minScore")
    number = isinstance(min_score, int | float) and not isinstance(min_score, bool)
    if number and isinstance(min_score, int | float) and not 0 <= min_score <= 1:
        out.append(f"{where}.query.minScore: 2026.9 wants a number from 0 to 1")
    tokenizer = (_record(_record(block.get("store")) and block["store"].get("fts")) or {}).get(
        "tokenizer"
    )
    if isinstance(tokenizer, str) and tokenizer not in OPENCLAW_TOKENIZERS:
        out.append(
            f'{where}.store.fts.tokenizer: "{tokenizer}" is not a 2026.9 tokenizer'
            ' (it accepts "unicode61" or "trigram"; "porter" is a memdeck extension)'
        )
    for index, item in enumerate(block.get("extraPaths") or []):
        if isinstance(item, dict):
            extra = sorted(set(item) - {"path", "pattern"})
            if extra or not isinstance(item.get("path"), str):
                out.append(f"{where}.extraPaths[{index}]: 2026.9 wants {{path, pattern?}} strings")
    return out


def _agent_entries(document: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    agents = _record(document.get("agents")) or {}
    listed = agents.get("list")
    if not isinstance(listed, list):
        return []
    return [(i, e) for i, e in enumerate(listed) if isinstance(e, dict)]


def _has_modern(document: dict[str, Any]) -> bool:
    memory = _record(document.get("memory"))
    if memory is not None and _record(memory.get("search")) is not None:
        return True
    for _, other in _agent_entries(document):
        agent_memory = _record(other.get("memory"))
        if agent_memory is not None and _record(agent_memory.get("search")) is not None:
            return True
    return False


def _has_seed(document: dict[str, Any]) -> bool:
    agents = _record(document.get("agents")) or {}
    defaults = _record(agents.get("defaults")) or {}
    if _record(defaults.get("memorySearch")) is not None:
        return True
    if _record(document.get("memorySearch")) is not None:
        return True
    return any(_record(e.get("memorySearch")) is not None for _, e in _agent_entries(document))


def remember_across_conversations(document: dict[str, Any], block: dict[str, Any]) -> bool:
    """2026.9's default for indexing transcripts: on unless DMs are scoped per peer."""
    explicit = block.get("rememberAcrossConversations")
    if isinstance(explicit, bool):
        return explicit
    session = _record(document.get("session")) or {}
    if session.get("dmScope") not in (None, "main"):
        return False
    bindings = document.get("bindings")
    if isinstance(bindings, list):
        for binding in bindings:
            scoped = _record(binding) and _record(binding.get("session"))
            if scoped is not None and scoped.get("dmScope") is not None:
                return False
    return True


def _source_policy(document: dict[str, Any], block: dict[str, Any]) -> tuple[list[str], bool]:
    """(searched sources, sessionMemory) as 2026.9 resolves them."""
    remember = remember_across_conversations(document, block)
    experimental = _record(block.get("experimental")) or {}
    configured_session = experimental.get("sessionMemory") is True
    configured = block.get("sources")
    allow_sessions = configured_session or (remember and "sessions" in (configured or []))
    searched: list[str] = []
    for source in configured or ["memory"]:
        if source == "memory" and "memory" not in searched:
            searched.append("memory")
        if source == "sessions" and allow_sessions and "sessions" not in searched:
            searched.append("sessions")
    return searched or ["memory"], remember or configured_session


def _apply_2026_9(document: dict[str, Any], scope_default: Scope, scope_agent: Scope) -> None:
    """Give the combined blocks 2026.9's defaults and fixed values, in place.

    Written into the defaults scope only where neither scope sets the key, so an
    explicit value (even a retired one) still wins and keeps its origin.
    """
    merged = _deep_merge(scope_default.block, scope_agent.block)
    for scope in (scope_default, scope_agent):
        for key in _ACCEPTED_UNUSED:
            scope.block.pop(key, None)

    def fill(target: dict[str, Any], fixed: dict[str, Any], present: dict[str, Any]) -> None:
        for key, value in fixed.items():
            if isinstance(value, dict):
                sub_present = _record(present.get(key)) or {}
                sub_target = (
                    target.setdefault(key, {}) if isinstance(target.get(key, {}), dict) else None
                )
                if sub_target is not None:
                    fill(sub_target, value, sub_present)
            elif present.get(key) is None:
                target[key] = value

    fill(scope_default.block, FIXED_2026_9, merged)
    provider = merged.get("provider")
    # a value of the wrong type is left in place: the loader names it with its path
    if provider is None or (isinstance(provider, str) and provider.strip() in ("", "auto")):
        for scope in (scope_default, scope_agent):
            if "provider" in scope.block or scope is scope_default:
                scope.block["provider"] = DEFAULT_PROVIDER_2026_9
    sources = merged.get("sources")
    if sources is not None and not (
        isinstance(sources, list) and all(isinstance(s, str) for s in sources)
    ):
        return  # left in place: the loader reports the wrong type with its path
    searched, session_memory = _source_policy(document, merged)
    for scope in (scope_default, scope_agent):
        scope.block.pop("sources", None)
        experimental = scope.block.get("experimental")
        if isinstance(experimental, dict):
            experimental.pop("sessionMemory", None)
    scope_default.block["sources"] = searched
    scope_default.block.setdefault("experimental", {})
    if isinstance(scope_default.block["experimental"], dict):
        scope_default.block["experimental"]["sessionMemory"] = session_memory


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def read_layouts(
    document: dict[str, Any], agent_index: int | None, agent_entry: Mapping[str, Any]
) -> LayoutRead:
    """Combine both layouts for the shared defaults and for one agent.

    The blocks still hold ``extraPaths`` raw; the loader pops them and hands them
    to :func:`normalize_extra_paths`, then validates every other key.
    """
    agents = _record(document.get("agents")) or {}
    defaults = _record(agents.get("defaults")) or {}
    memory = _record(document.get("memory")) or {}
    seed_defaults: Any = defaults.get("memorySearch")
    top_level = document.get("memorySearch")
    if isinstance(top_level, dict):
        seed_defaults = _deep_merge(
            top_level, seed_defaults if isinstance(seed_defaults, dict) else {}
        )
    default_scope = _combine(
        memory.get("search"), seed_defaults, "memory.search", "agents.defaults.memorySearch"
    )
    agent_where = f"agents.list[{agent_index}]"
    agent_memory = _record(agent_entry.get("memory")) or {}
    agent_scope = _combine(
        agent_memory.get("search") if agent_entry else None,
        agent_entry.get("memorySearch") if agent_entry else None,
        f"{agent_where}.memory.search",
        f"{agent_where}.memorySearch",
    )
    modern, seed = _has_modern(document), _has_seed(document)
    layout: Layout = (
        "both" if modern and seed else "memory.search" if modern else "seed" if seed else "none"
    )
    if modern:
        _apply_2026_9(document, default_scope, agent_scope)
    return LayoutRead(
        layout=layout,
        defaults=default_scope,
        agent=agent_scope,
        rejected=tuple(_rejections(document, _agent_entries(document))),
        modern=modern,
    )


def normalize_extra_paths(
    items: list[tuple[str, Any]],
) -> tuple[tuple[str, ...], tuple[ExtraPathPattern, ...], list[tuple[str, str, Any]]]:
    """Strings and ``{path, pattern}`` objects → (plain paths, patterns, type errors).

    As in 2026.9: entries are trimmed, blank paths dropped, and a duplicate
    (same path and pattern) kept once; an object without a pattern is a plain path.
    Type errors come back as (where, expected, found) for the loader to raise.
    """
    plain: list[str] = []
    patterns: list[ExtraPathPattern] = []
    errors: list[tuple[str, str, Any]] = []
    for where, value in items:
        if not isinstance(value, list):
            errors.append((where, "an array of strings or {path, pattern} objects", value))
            continue
        for index, item in enumerate(value):
            item_where = f"{where}[{index}]"
            if isinstance(item, str):
                path, pattern = item.strip(), ""
            elif isinstance(item, dict) and isinstance(item.get("path"), str):
                pattern_value = item.get("pattern")
                if pattern_value is not None and not isinstance(pattern_value, str):
                    errors.append((f"{item_where}.pattern", "a string (a glob)", pattern_value))
                    continue
                path, pattern = item["path"].strip(), (pattern_value or "").strip()
            else:
                errors.append((item_where, "a string or a {path, pattern} object", item))
                continue
            if not path:
                continue
            if pattern:
                entry = ExtraPathPattern(path, pattern.replace("\\", "/"))
                if entry not in patterns:
                    patterns.append(entry)
            elif path not in plain:
                plain.append(path)
    return tuple(plain), tuple(patterns), errors
