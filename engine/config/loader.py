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
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from engine.config import paths
from engine.config.settings import (
    FUSIONS,
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
    Settings,
    StoreSettings,
    SyncSettings,
)

DEFAULT_AGENT_ID = Settings.agent_id
FALLBACKS = tuple(p for p in PROVIDERS if p != "auto")  # "auto" is not a fallback
NORMALIZATIONS = ("minmax", "zscore")
MMR_SIMILARITIES = ("jaccard", "cosine")
FTS_TOKENIZERS = ("unicode61", "trigram")
OUTPUT_DIMENSIONS = (768, 1536, 3072)
BACKENDS = ("builtin", "qmd")
CITATION_MODES = ("auto", "on", "off")
SOURCES = ("memory", "sessions")
MODALITIES = ("image", "audio", "all")

# Every default comes from the dataclasses in engine.settings, never a literal here.
_DEFAULT = MemorySearchSettings()
_HYBRID = _DEFAULT.query.hybrid

_SHOW_LIMIT = 60
_MISSING: Any = object()
# OpenClaw's env substitution: ${UPPER_CASE}; $${NAME} stays literal.
_ENV_REF = re.compile(r"(\$?)\$\{([A-Z_][A-Z0-9_]*)\}")
_JSON5_ERROR = re.compile(r"^<string>:(\d+) (.*) at column (\d+)$", re.S)

# Known keys, for "unknown key" warnings only; ``None`` marks a leaf (or a
# section another module validates, such as ``qmd``). Types and ranges are
# checked by the builders below, which read exactly these keys.
_BATCH_KEYS = dict.fromkeys(("enabled", "wait", "concurrency", "pollIntervalMs", "timeoutMinutes"))
_MEMORY_SEARCH_KEYS: dict[str, Any] = {
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
        "vector": {"enabled": None, "extensionPath": None},
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
_MEMORY_KEYS: dict[str, Any] = {"backend": None, "citations": None, "qmd": None}


class ConfigError(ValueError):
    """A configuration memdeck refuses to run with.

    The message is complete on its own (file, key path, expectation, finding)
    because the CLI prints it verbatim and exits 1; ``file`` and ``key`` are
    also kept as attributes for the TUI, which highlights them.
    """

    def __init__(self, message: str, *, file: Path | None = None, key: str | None = None):
        self.file = file
        self.key = key
        self.detail = message
        parts = [str(file)] if file is not None else []
        if key:
            parts.append(key)
        parts.append(message)
        super().__init__(": ".join(parts))


# --------------------------------------------------------------------------- reading


def read_json5(path: Path, *, empty: Any = None) -> Any:
    """Parse one JSON5 file, turning every way it can be unreadable into a ConfigError.

    Shared by ``openclaw.json`` and memdeck's own settings file so both report
    I/O, encoding and syntax problems with the same precision. A blank file
    (which json5 rejects) returns *empty*: a freshly created config is not an error.
    """
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ConfigError("is a directory, not a config file", file=path) from None
    except FileNotFoundError:
        raise ConfigError("config file not found", file=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the file ({exc.strerror or exc})", file=path) from None
    if data.startswith(b"\xef\xbb\xbf"):  # editors on Windows add a BOM; JSON5 forbids it
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _byte_position(data, exc.start)
        raise ConfigError(
            f"not valid UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, "
            f"column {column}); save it as UTF-8",
            file=path,
        ) from None
    if not text.strip():
        return empty
    try:
        return json5.loads(text)
    except ValueError as exc:
        raise _syntax_error(path, text, str(exc)) from None
    except RecursionError:
        raise ConfigError("JSON5 nesting is too deep to parse", file=path) from None


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of a byte offset, for encoding errors json5 never sees."""
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, column


def _syntax_error(path: Path, text: str, message: str) -> ConfigError:
    """Reword json5's ``<string>:LINE ... at column COL`` and show the offending line."""
    match = _JSON5_ERROR.match(message)
    if not match:
        return ConfigError(f"JSON5 syntax error: {message}", file=path)
    line, detail, column = int(match[1]), match[2], int(match[3])
    lines = text.splitlines()
    excerpt = ""
    if 1 <= line <= len(lines):
        source = lines[line - 1].replace("\t", " ")
        excerpt = f"\n    {source}\n    {' ' * max(column - 1, 0)}^"
    detail = detail[:1].lower() + detail[1:]
    return ConfigError(
        f"JSON5 syntax error at line {line}, column {column}: {detail}{excerpt}", file=path
    )


# --------------------------------------------------------------------------- context


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: Any) -> str:
    """A value as the user typed it (JSON spelling), cut short so errors stay one line."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _SHOW_LIMIT:
        text = text[: _SHOW_LIMIT - 1] + "…"
    return text


def _describe(value: Any, secret: bool = False) -> str:
    """``string "yes"`` / ``number 5``; secrets (API keys, headers) show only their type."""
    kind = _json_type(value)
    if secret or (isinstance(value, dict | list) and len(_show(value)) >= _SHOW_LIMIT):
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    return f"{kind} {_show(value)}"


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _suggest(word: str, options: Any) -> str:
    close = difflib.get_close_matches(word, [str(o) for o in options], n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _is_secret(where: str) -> bool:
    last = where.rsplit(".", 1)[-1].lower()
    return "apikey" in last or "token" in last or ".headers." in where.lower()


@dataclass
class _Context:
    """What every reader needs: where the file is, the env, and the warning sink."""

    file: Path | None
    base_dir: Path
    env: Mapping[str, str]
    warnings: list[str] = field(default_factory=list)

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError(message, file=self.file, key=where or None)

    def type_error(self, where: str, expected: str, value: Any) -> ConfigError:
        found = _describe(value, secret=_is_secret(where))
        return self.error(where, f"expected {expected}, found {found}")

    def warn(self, where: str, message: str) -> None:
        prefix = f"{self.file}: " if self.file is not None else ""
        self.warnings.append(f"{prefix}{where}: {message}" if where else f"{prefix}{message}")

    def resolve_path(self, text: str) -> Path:
        """``~`` from env; relative paths are relative to the config file's folder.

        Anchoring at the file rather than the cwd makes a config mean the same
        thing whichever directory memdeck (or the gateway) was started from.
        """
        path = paths.expand_user(text, self.env)
        if not path.is_absolute():
            path = self.base_dir / path
        return Path(os.path.normpath(path))


class _Reader:
    """Typed access to one config subtree, reporting errors at the key's true path.

    ``origins`` maps a key tuple (relative to this subtree) to the dotted path it
    came from; lookups use the longest known prefix. For the merged
    ``memorySearch`` block every node is annotated, so an error in a value an
    agent overrode points at ``agents.list[N]...`` and not at the defaults.
    """

    def __init__(self, data: Any, origins: dict[tuple[str, ...], str], ctx: _Context):
        self.data = data
        self.origins = origins
        self.ctx = ctx

    def where(self, keys: tuple[str, ...]) -> str:
        for cut in range(len(keys), -1, -1):
            prefix = keys[:cut]
            if prefix in self.origins:
                where = self.origins[prefix]
                for key in keys[cut:]:
                    where = _join(where, key)
                return where
        return ".".join(keys)

    def get(self, keys: tuple[str, ...]) -> Any:
        """The raw value, or ``_MISSING`` when absent or null (OpenClaw treats null as unset)."""
        node = self.data
        for depth, key in enumerate(keys):
            if not isinstance(node, dict):
                raise self.ctx.type_error(self.where(keys[:depth]), "an object", node)
            node = node.get(key)
            if node is None:
                return _MISSING
        return node

    def obj(self, keys: tuple[str, ...]) -> dict[str, Any]:
        value = self.get(keys)
        if value is _MISSING:
            return {}
        if not isinstance(value, dict):
            raise self.ctx.type_error(self.where(keys), "an object", value)
        return value

    def boolean(self, keys: tuple[str, ...], default: bool) -> bool:
        value = self.get(keys)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise self.ctx.type_error(self.where(keys), "a boolean (true or false)", value)
        return value

    def _finite(self, keys: tuple[str, ...], value: Any) -> float | int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.ctx.type_error(self.where(keys), "a number", value)
        if isinstance(value, float) and not math.isfinite(value):
            raise self.ctx.type_error(self.where(keys), "a finite number", value)
        return value

    def _clamp(
        self,
        keys: tuple[str, ...],
        value: float,
        lo: float | None,
        hi: float | None,
        given: bool,
    ) -> float:
        clamped = value
        if hi is not None and clamped > hi:
            clamped = hi
        if lo is not None and clamped < lo:
            clamped = lo
        if given and clamped != value:
            low = "" if lo is None else _show(lo)
            high = "" if hi is None else _show(hi)
            allowed = (
                f"{low}–{high}"
                if lo is not None and hi is not None
                else (f"at least {low}" if lo is not None else f"at most {high}")
            )
            self.ctx.warn(
                self.where(keys),
                f"{_show(value)} is out of range ({allowed}); using {_show(clamped)}",
            )
        return clamped

    def number(
        self,
        keys: tuple[str, ...],
        default: float,
        *,
        lo: float | None = None,
        hi: float | None = None,
    ) -> float:
        """A finite number, clamped to [lo, hi] (a user value that moved is a warning)."""
        value = self.get(keys)
        given = value is not _MISSING
        number = self._finite(keys, value) if given else default
        return float(self._clamp(keys, number, lo, hi, given))

    def integer(
        self,
        keys: tuple[str, ...],
        default: int,
        *,
        lo: int | None = None,
        hi: int | None = None,
    ) -> int:
        """A whole number; fractions are floored as OpenClaw does, with a warning."""
        value = self.get(keys)
        given = value is not _MISSING
        if not given:
            number = default
        else:
            raw = self._finite(keys, value)
            number = math.floor(raw)
            if number != raw:
                self.ctx.warn(
                    self.where(keys), f"{_show(raw)} is not a whole number; using {number}"
                )
        return int(self._clamp(keys, number, lo, hi, given))

    def string(self, keys: tuple[str, ...], default: str | None = None) -> str | None:
        """A string with ``${VAR}`` expanded from env; an unset variable means "not set"."""
        value = self.get(keys)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise self.ctx.type_error(self.where(keys), "a string", value)
        expanded = self._expand_env(self.where(keys), value)
        return default if expanded is None else expanded

    def _expand_env(self, where: str, text: str) -> str | None:
        missing: list[str] = []

        def replace(match: re.Match[str]) -> str:
            if match[1]:
                return "${" + match[2] + "}"
            value = self.ctx.env.get(match[2])
            if not value:
                missing.append(match[2])
                return ""
            return value

        expanded = _ENV_REF.sub(replace, text)
        if missing:
            names = ", ".join(f"${name}" for name in missing)
            self.ctx.warn(where, f"environment variable {names} is not set; value ignored")
            return None
        return expanded

    def choice(self, keys: tuple[str, ...], options: tuple[Any, ...], default: str) -> str:
        value = self.string(keys)
        if value is None:
            return default
        if value not in options:
            expected = "one of " + ", ".join(f'"{o}"' for o in options)
            raise self.ctx.error(
                self.where(keys),
                f"expected {expected}, found {_describe(value)}{_suggest(value, options)}",
            )
        return value

    def strings(self, keys: tuple[str, ...], options: tuple[str, ...] | None = None) -> list[str]:
        """A list of strings (each optionally from *options*); missing means empty."""
        value = self.get(keys)
        if value is _MISSING:
            return []
        where = self.where(keys)
        expected = "an array of strings"
        if not isinstance(value, list):
            raise self.ctx.type_error(where, expected, value)
        items: list[str] = []
        for index, item in enumerate(value):
            item_where = f"{where}[{index}]"
            if not isinstance(item, str):
                raise self.ctx.type_error(item_where, "a string", item)
            if options is not None and item not in options:
                wanted = "one of " + ", ".join(f'"{o}"' for o in options)
                raise self.ctx.error(
                    item_where,
                    f"expected {wanted}, found {_describe(item)}{_suggest(item, options)}",
                )
            expanded = self._expand_env(item_where, item)
            if expanded is not None:
                items.append(expanded)
        return items

    def string_map(self, keys: tuple[str, ...]) -> dict[str, str]:
        """An object whose values are strings (HTTP headers)."""
        value = self.obj(keys)
        result: dict[str, str] = {}
        for name, item in value.items():
            if item is None:
                continue
            item_where = _join(self.where(keys), name)
            if not isinstance(item, str):
                raise self.ctx.type_error(item_where, "a string", item)
            expanded = self._expand_env(item_where, item)
            if expanded is not None:
                result[name] = expanded
        return result

    def path(self, keys: tuple[str, ...]) -> Path | None:
        text = self.string(keys)
        if text is None or not text.strip():
            return None
        return self.ctx.resolve_path(text.strip())


# --------------------------------------------------------------------------- helpers


def _warn_unknown(block: Any, known: dict[str, Any], where: str, ctx: _Context) -> None:
    """Warn (never fail) on keys memdeck does not know, suggesting the likely typo."""
    if not isinstance(block, dict):
        return  # wrong types are reported by the builders, with the expected type
    for key, value in block.items():
        key_where = _join(where, key)
        if key not in known:
            ctx.warn(key_where, f"unknown key{_suggest(key, known)}; ignored")
        elif isinstance(known[key], dict):
            _warn_unknown(value, known[key], key_where, ctx)


def _annotate(
    value: Any, where: str, rel: tuple[str, ...], origins: dict[tuple[str, ...], str]
) -> None:
    origins[rel] = where
    if isinstance(value, dict):
        for key, item in value.items():
            _annotate(item, _join(where, key), (*rel, key), origins)


def _merge(
    base: dict[str, Any],
    over: dict[str, Any],
    where: str,
    rel: tuple[str, ...],
    origins: dict[tuple[str, ...], str],
) -> dict[str, Any]:
    """Deep-merge an agent's memorySearch over the defaults, tracking each value's origin.

    Objects merge key by key; arrays and scalars replace; ``null`` in the
    override means "not set here" (OpenClaw's ``??``), so the default stays.
    """
    merged = dict(base)
    for key, value in over.items():
        if value is None:
            continue
        child_where, child_rel = _join(where, key), (*rel, key)
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            origins[child_rel] = child_where
            merged[key] = _merge(merged[key], value, child_where, child_rel, origins)
        else:
            merged[key] = value
            _annotate(value, child_where, child_rel, origins)
    return merged


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# --------------------------------------------------------------------------- builders


def _stripped(text: str | None) -> str | None:
    """Blank strings mean "not set", as they do for OpenClaw's optional strings."""
    return text.strip() or None if text else None


def _build_remote(ms: _Reader) -> RemoteSettings:
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


def _build_local(ms: _Reader) -> LocalSettings:
    model_path = _stripped(ms.string(("local", "modelPath")))
    # hf: URIs and URLs are not file paths; everything else is resolved like one.
    if model_path and not re.match(r"^(hf:|[a-z][a-z0-9+.-]*://)", model_path, re.I):
        model_path = str(ms.ctx.resolve_path(model_path))
    return LocalSettings(
        model_path=model_path or _DEFAULT.local.model_path,
        model_cache_dir=ms.path(("local", "modelCacheDir")),
        explicit=model_path is not None,
    )


def _build_output_dimensionality(ms: _Reader) -> int:
    """Only the three sizes Gemini Embedding 2 produces; anything else is an error, not a clamp."""
    keys = ("outputDimensionality",)
    value = ms.get(keys)
    if value is _MISSING:
        return _DEFAULT.output_dimensionality
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ms.ctx.type_error(ms.where(keys), "a number", value)
    if value not in OUTPUT_DIMENSIONS:
        expected = "one of " + ", ".join(str(d) for d in OUTPUT_DIMENSIONS)
        raise ms.ctx.type_error(ms.where(keys), expected, value)
    return int(value)


def _build_weights(ms: _Reader) -> tuple[float, float]:
    """Clamp each weight to [0, 1], then scale them to sum to 1 (the default pair if both are 0)."""
    hybrid = ("query", "hybrid")
    vector = ms.number((*hybrid, "vectorWeight"), _HYBRID.vector_weight, lo=0, hi=1)
    text = ms.number((*hybrid, "textWeight"), _HYBRID.text_weight, lo=0, hi=1)
    total = vector + text
    if total > 0:
        new_vector, new_text = vector / total, text / total
    else:
        new_vector, new_text = _HYBRID.vector_weight, _HYBRID.text_weight
    if not (math.isclose(new_vector, vector) and math.isclose(new_text, text)):
        ms.ctx.warn(
            ms.where(hybrid),
            f"vectorWeight/textWeight {vector:g}/{text:g} must sum to 1; "
            f"using {new_vector:.4g}/{new_text:.4g}",
        )
    return new_vector, new_text


def _build_query(ms: _Reader) -> QuerySettings:
    hybrid, query = ("query", "hybrid"), _DEFAULT.query
    mmr, decay = (*hybrid, "mmr"), (*hybrid, "temporalDecay")
    vector_weight, text_weight = _build_weights(ms)
    return QuerySettings(
        max_results=ms.integer(("query", "maxResults"), query.max_results, lo=1),
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


def _build_store(ms: _Reader, agent_id: str) -> StoreSettings:
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
        fts_tokenizer=ms.choice(
            ("store", "fts", "tokenizer"), FTS_TOKENIZERS, _DEFAULT.store.fts_tokenizer
        ),
    )


def _build_sync(ms: _Reader) -> SyncSettings:
    default = _DEFAULT.sync
    # Validated for OpenClaw parity; memdeck's watcher debounce is fixed (SPEC §4).
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


def _build_sources(ms: _Reader, session_memory: bool) -> tuple[str, ...]:
    """OpenClaw's rule: transcripts are searched only with experimental.sessionMemory."""
    sources = _unique(ms.strings(("sources",), SOURCES)) or _DEFAULT.sources
    if "sessions" in sources and not session_memory:
        ms.ctx.warn(
            ms.where(("sources",)),
            '"sessions" needs experimental.sessionMemory = true; transcripts are not searched',
        )
        sources = tuple(s for s in sources if s != "sessions") or _DEFAULT.sources
    return sources


def _build_multimodal(ms: _Reader) -> MultimodalSettings:
    default = _DEFAULT.multimodal
    modalities = default.modalities
    if ms.get(("multimodal", "modalities")) is not _MISSING:
        listed = ms.strings(("multimodal", "modalities"), MODALITIES)
        modalities = ("image", "audio") if "all" in listed else _unique(listed)
    return MultimodalSettings(
        enabled=ms.boolean(("multimodal", "enabled"), default.enabled),
        modalities=modalities,
        max_file_bytes=ms.integer(("multimodal", "maxFileBytes"), default.max_file_bytes, lo=1),
    )


def _build_memory_search(
    ms: _Reader, agent_id: str, extra_paths: tuple[str, ...]
) -> MemorySearchSettings:
    chunking, cache = _DEFAULT.chunking, _DEFAULT.cache
    tokens = ms.integer(("chunking", "tokens"), chunking.tokens, lo=1)
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


def _provider_options(
    root: _Reader,
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
        if api_key is not _MISSING and not isinstance(api_key, str):
            root.ctx.warn(
                root.where((*base, "apiKey")),
                f"{_describe(api_key, secret=True)} is not supported here; key ignored",
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
        raise ConfigError(f"invalid agent id {_show(agent_id)}: it must be a plain name")


def _agent_entry(root: _Reader, agent_id: str, explicit: bool) -> tuple[int | None, dict[str, Any]]:
    """Find ``agents.list[]``'s entry for *agent_id*, validating the list on the way."""
    listed = root.get(("agents", "list"))
    if listed is _MISSING:
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
            f'no agent with id "{agent_id}"{_suggest(agent_id, ids)}; known ids: {known}',
        )
    return found


def _resolve_workspace(
    root: _Reader, workspace: Path | None, entry: _Reader, ctx: _Context
) -> Path:
    """CLI argument, else the agent's own workspace, else the shared default."""
    if workspace is not None:
        return Path(os.path.abspath(paths.expand_user(workspace, ctx.env)))
    return _agent_workspace(root, entry, ctx)


def _agent_workspace(root: _Reader, entry: _Reader, ctx: _Context) -> Path:
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
    explicit_config = config_path is not None
    if config_path is not None:
        path = Path(os.path.abspath(paths.expand_user(config_path, env)))
    else:
        path = paths.config_path(env)
    ctx = _Context(file=path, base_dir=path.parent, env=env)

    document: Any = _MISSING
    read_path: Path | None = path
    if explicit_config or path.exists():
        document = read_json5(path, empty=_MISSING)
        if document is _MISSING:
            ctx.warn("", "the file is empty; using defaults")
    else:
        read_path = None
        if paths.env_value(env, paths.CONFIG_PATH_ENV):
            ctx.warn("", f"${paths.CONFIG_PATH_ENV} names a missing file; using defaults")
    if document is _MISSING:
        document = {}
    if not isinstance(document, dict):
        raise ctx.error(
            "", f"expected an object {{ ... }} at the top level, found {_describe(document)}"
        )

    root = _Reader(document, {(): ""}, ctx)
    chosen_agent = agent_id if agent_id is not None else DEFAULT_AGENT_ID
    _check_agent_id(chosen_agent)
    root.obj(("agents", "defaults"))
    index, entry = _agent_entry(root, chosen_agent, explicit=agent_id is not None)

    defaults_where = "agents.defaults.memorySearch"
    defaults_ms = root.obj(("agents", "defaults", "memorySearch"))
    override_where = f"agents.list[{index}].memorySearch"
    override_reader = _Reader(entry, {(): f"agents.list[{index}]"}, ctx)
    override_ms = override_reader.obj(("memorySearch",)) if entry else {}
    memory = root.obj(("memory",))

    _warn_unknown(defaults_ms, _MEMORY_SEARCH_KEYS, defaults_where, ctx)
    _warn_unknown(override_ms, _MEMORY_SEARCH_KEYS, override_where, ctx)
    _warn_unknown(memory, _MEMORY_KEYS, "memory", ctx)

    origins: dict[tuple[str, ...], str] = {}
    _annotate(defaults_ms, defaults_where, (), origins)
    merged = _merge(defaults_ms, override_ms, override_where, (), origins)
    # extraPaths is the one list OpenClaw concatenates rather than replaces:
    # an agent's extra folders come on top of the shared ones.
    extra = [
        *_Reader(defaults_ms, {(): defaults_where}, ctx).strings(("extraPaths",)),
        *_Reader(override_ms, {(): override_where}, ctx).strings(("extraPaths",)),
    ]
    extra_paths = _unique([p.strip() for p in extra if p.strip()])
    memory_search = _build_memory_search(_Reader(merged, origins, ctx), chosen_agent, extra_paths)

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
        warnings=tuple(ctx.warnings),
    )
