"""The tools as a model sees them: names, descriptions and JSON Schemas.

The descriptions are written for the model that decides when to call a tool:
what the tool is for, what comes back, and how to page. The same schemas
validate every call (``validate``), so what is advertised is exactly what is
accepted, and a bad call gets a message naming the argument and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from engine.config.memory_search import MAX_RESULTS_LIMIT
from engine.search.results import MAX_QUERY_CHARS
from engine.tools import DEFAULT_GET_LINES, MAX_GET_CHARS


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = True


MEMORY_SEARCH = ToolSpec(
    name="memory_search",
    title="Search memory",
    description=(
        "Search the user's long-term memory (MEMORY.md, daily logs under memory/, and any "
        "extra note folders) for facts, decisions, preferences and past events. Use it "
        "before answering anything that may depend on earlier conversations or the user's "
        "setup. Hybrid search: keywords and meaning both count, so ask in natural language "
        "and include the distinctive words (names, hosts, ticket ids). Returns the best "
        "matching passages with path, startLine/endLine, a 0–1 score and a snippet; read "
        "more of a file with memory_get using that path and startLine. An empty result "
        "list means nothing scored above minScore: rephrase or lower minScore."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "pattern": "\\S",
                "description": "What to look for, in natural language or keywords.",
            },
            "maxResults": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS_LIMIT,
                "description": "How many passages to return at most (default from the "
                "user's settings, usually 6).",
            },
            "minScore": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "Drop passages scoring below this (0–1; default from the "
                "user's settings, usually 0.35).",
            },
            "explain": {
                "type": "boolean",
                "description": "Add each result's score breakdown (vector/keyword parts, "
                "fusion, decay, MMR) and the candidates that were dropped. Only for "
                "debugging a ranking; it makes the answer much longer.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)

MEMORY_GET = ToolSpec(
    name="memory_get",
    title="Read a memory file",
    description=(
        "Read lines of one memory file: MEMORY.md, memory.md, a file under memory/ (daily "
        "logs are memory/YYYY-MM-DD.md), or a Markdown file in a configured extra path. "
        "Use the path exactly as memory_search returned it. Returns text from line `from` "
        f"(1-based, default 1), at most `lines` lines (default {DEFAULT_GET_LINES}) and "
        f"{MAX_GET_CHARS} characters; when the file goes on, `truncated` is true and "
        "`nextFrom` is the line to pass as `from` for the next page. Paths with '..', "
        "other file types, files outside memory and symlinks are refused."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "Workspace-relative path, e.g. MEMORY.md or memory/2026-03-10.md.",
            },
            "from": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to return (1-based). Use nextFrom to page.",
            },
            "lines": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2000,
                "description": f"How many lines to return (default {DEFAULT_GET_LINES}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)

MEMORY_STATUS = ToolSpec(
    name="memory_status",
    title="Memory index status",
    description=(
        "Report the state of the memory index: workspace, where the index is stored "
        "(store: sqlite or postgres; index: its file or database), how many files and "
        "chunks are indexed, the embedding provider and model, whether search is hybrid "
        "or keyword only, whether files changed since the last sync (dirty), and the last "
        "sync and its errors. Call it when memory_search seems to miss something recent or fails."
    ),
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
)

MEMORY_APPEND = ToolSpec(
    name="memory_append",
    title="Append to today's daily log",
    description=(
        "Write a note to the user's memory: appends a timestamped entry (## HH:MM) to "
        "today's daily log, memory/YYYY-MM-DD.md, creating it if needed. It never edits "
        "or removes anything already written. Use it for facts, decisions and "
        "preferences worth remembering in later sessions; keep each entry short and "
        "self-contained (it is found later by memory_search)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": 20000,
                "description": "The Markdown text of the entry.",
            }
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    read_only=False,
)

READ_TOOLS = (MEMORY_SEARCH, MEMORY_GET, MEMORY_STATUS)


class BadArguments(ValueError):
    """A tool call whose arguments do not match the tool's schema."""


def validate(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments as a dict, or ``BadArguments`` naming the first problem and the fix."""
    args = dict(arguments or {})
    validator = _validator(spec.name, spec)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    props = spec.input_schema.get("properties", {})
    if not errors:
        for key, value in args.items():  # JSON has no NaN, but Python's parser takes it
            if isinstance(value, float) and not math.isfinite(value):
                expected = _expected(props.get(key, {}))
                raise BadArguments(
                    f"{spec.name}: argument {key!r} is invalid ({value} is not a finite "
                    f"number); expected {expected}"
                )
        return args
    err = errors[0]
    where = ".".join(str(p) for p in err.absolute_path)
    if err.validator == "additionalProperties":
        known = ", ".join(props) or "none"
        extra = sorted(set(args) - set(props))
        named = ", ".join(repr(_clip(k)) for k in extra[:5])
        raise BadArguments(
            f"{spec.name}: unexpected argument{'s' if len(extra) > 1 else ''} {named}; "
            f"the arguments it takes are: {known}"
        )
    if err.validator == "required":
        raise BadArguments(f"{spec.name}: {err.message}")
    hint = props.get(where, {}).get("description", "")
    expected = _expected(props.get(where, {}))
    raise BadArguments(
        f"{spec.name}: argument {where!r} is invalid ({_problem(err)})"
        + (f"; expected {expected}" if expected else "")
        + (f". {hint}" if hint else "")
    )


#: how much of a refused argument an error shows (an agent may send megabytes)
ECHO_CHARS = 60


def _clip(value: object) -> str:
    text = str(value)
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + f"… ({len(text):,} chars)"


def _problem(err: Any) -> str:
    """jsonschema's complaint without the value itself when that is long (its own
    message embeds the whole instance)."""
    instance = err.instance
    if err.validator == "maxLength" and isinstance(instance, str):
        return f"{len(instance):,} characters; at most {err.validator_value:,}"
    if err.validator == "type":
        return f"{_clip(repr(instance))} is not of type {err.validator_value!r}"
    text = str(err.message)
    return text if len(text) <= 200 else _clip(repr(instance)) + f" fails {err.validator}"


_VALIDATORS: dict[str, Any] = {}


def _validator(name: str, spec: ToolSpec) -> Any:
    """One compiled validator per tool, built on its first call (specs are constants)."""
    found = _VALIDATORS.get(name)
    if found is None or found.schema is not spec.input_schema:
        found = _VALIDATORS[name] = jsonschema.Draft202012Validator(spec.input_schema)
    return found


def _expected(prop: Mapping[str, Any]) -> str:
    kind = {"integer": "an integer", "number": "a number", "string": "a non-empty string"}.get(
        prop.get("type", ""), prop.get("type", "")
    )
    if kind == "boolean":
        kind = "true or false"
    lo, hi = prop.get("minimum"), prop.get("maximum")
    if lo is not None and hi is not None:
        return f"{kind} from {lo} to {hi}"
    if lo is not None:
        return f"{kind} ≥ {lo}"
    return str(kind)
