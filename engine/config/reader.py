"""The JSON5 reader and general validator under every ``openclaw.json`` block.

Every module that reads a part of the config (the memorySearch schema here in
``engine.config``, the compaction flush, dreaming, qmd) goes through
:class:`ConfigReader`, so they all keep the same promises:

* errors are one :class:`ConfigError` naming the file, the dotted key path, what
  was expected and what was found;
* keys memdeck does not know are warnings (:func:`warn_unknown`), never failures,
  because a file OpenClaw accepts must never stop memdeck;
* ``null`` means "not set" (OpenClaw's ``??``), numbers out of range are clamped
  with a warning, and ``${VAR}`` references that cannot be expanded count as unset.
"""

from __future__ import annotations

import difflib
import errno
import json
import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import json5

from engine.config import paths

_SHOW_LIMIT = 60
_Choice = TypeVar("_Choice", bound=str)


class _Missing:
    """The type of :data:`MISSING`: absent or ``null`` (OpenClaw treats null as unset)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
# OpenClaw's env substitution: ${UPPER_CASE}; $${NAME} stays literal.
_ENV_REF = re.compile(r"(\$?)\$\{([A-Z_][A-Z0-9_]*)\}")
_JSON5_ERROR = re.compile(r"^<string>:(\d+) (.*) at column (\d+)$", re.S)


#: the largest whole number a config key takes when it names no bound of its own:
#: JavaScript's timers stop at 2^31 - 1 ms too
MAX_INTEGER = 2**31 - 1


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
        data = _read_capped(path)
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


#: A config file larger than this is refused before parsing: OpenClaw configs are a
#: few KiB, and parsing 10 MB of JSON5 takes about a minute per command.
MAX_CONFIG_BYTES = 1024 * 1024


def _read_capped(path: Path) -> bytes:
    """The file's bytes, refusing (unread) one over ``MAX_CONFIG_BYTES`` and anything
    that is not a regular file (a FIFO would block every command)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError("is not a regular file (a FIFO, socket or device)", file=path)
        if st.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"is {st.st_size / 1e6:.1f} MB; config files are read up to "
                f"{MAX_CONFIG_BYTES // 1024} KiB (is this the right file?)",
                file=path,
            )
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"grew past {MAX_CONFIG_BYTES // 1024} KiB while being read", file=path
            )
        return data
    finally:
        os.close(fd)


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of a byte offset, for encoding errors json5 never sees."""
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, column


def _syntax_error(path: Path, text: str, message: str) -> ConfigError:
    """Reword json5's ``<string>:LINE Unexpected X at column COL``: the position of the
    character at fault (:func:`_error_offset`), that character named so the message
    stays on one line, and the line with a caret under it."""
    number = _BAD_NUMBER.match(message)
    if number:  # json5 read a number it cannot convert (``1e``): find it in the text
        found = re.search(rf"(?<![\w.$]){re.escape(number[1])}(?![\w.$])", text)
        if found is None:
            return ConfigError(f"JSON5 syntax error: {number[1]!r} is not a number", file=path)
        where, excerpt = _position(text, found.start())
        return ConfigError(
            f"JSON5 syntax error at {where}: {number[1]!r} is not a number{excerpt}", file=path
        )
    match = _JSON5_ERROR.match(message)
    if not match:
        return ConfigError(f"JSON5 syntax error: {message}", file=path)
    offset = _error_offset(text)
    if offset is None:  # json5's own position, when its parser cannot be asked again
        line, column = int(match[1]), int(match[3])
        lines = text.split("\n")
        offset = sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
    offset = max(0, min(offset, len(text)))
    where, excerpt = _position(text, offset)
    what = "end of input"
    if offset < len(text):
        what = _describe_char(text[offset])
        line_start = text.rfind("\n", 0, offset) + 1
        word = _WORD_BEFORE.search(text, line_start, offset)
        if text[offset] in "\n\r" and _open_quote(text[line_start:offset]):
            what += " inside a string (a string ends on its line)"
        elif word and not _WORD_BEFORE.fullmatch(text[offset]):
            what += f' after "{word[0]}"'
    return ConfigError(f"JSON5 syntax error at {where}: unexpected {what}{excerpt}", file=path)


_BAD_NUMBER = re.compile(r"^could not convert string to float: '(.*)'$", re.S)
#: the word a character follows (``tru`` before a space): what json5 was reading
_WORD_BEFORE = re.compile(r"[\w$.+-]+\Z")


def _position(text: str, offset: int) -> tuple[str, str]:
    """("line L, column C", the line and a caret under column C) of ``offset``:
    lines split on ``\n`` only and columns count characters, as json5 counts them;
    a tab and any character that does not print show as one column each."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    column = offset - start + 1
    end = text.find("\n", start)
    source = text[start : len(text) if end < 0 else end].removesuffix("\r")
    shown = "".join(ch if ch.isprintable() else " " if ch == "\t" else "?" for ch in source)
    excerpt = f"\n    {shown}\n    {' ' * (column - 1)}^" if source.strip() else ""
    return f"line {line}, column {column}", excerpt


def _open_quote(line: str) -> bool:
    """Whether ``line`` (up to a point) is inside a string: an unclosed quote that no
    ``//`` comment precedes."""
    quote = ""
    escaped = False
    for i, ch in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif line.startswith("//", i):
            return False
    return bool(quote)


_NAMED_CHARS: Final = {
    "\n": "line break",
    "\r": "carriage return",
    "\u2028": "line separator (U+2028)",
    "\u2029": "paragraph separator (U+2029)",
    " ": "space",
    "\t": "tab",
}


def _describe_char(ch: str) -> str:
    """A character as an error names it: quoted when it prints, else by name or code,
    so the message never breaks a line or hides a character."""
    if ch in _NAMED_CHARS:
        return _NAMED_CHARS[ch]
    if not ch.isprintable():
        return f"character U+{ord(ch):04X}"
    return f'"{ch}"'


def _error_offset(text: str) -> int | None:
    """Where ``text`` stops being JSON5, as an offset, or None if json5's parser
    cannot be asked.

    json5 reports the furthest point any rule reached. Its rules for a Unicode
    identifier (a key without quotes) read one character ahead to test its category,
    so where a key was expected (``{,}``, ``{ a: 1,, }``) its position is one past the
    character at fault. Parsed again with those rules counting the character they
    tested as the failure point, the position is that character's.
    """
    try:
        from json5.parser import Parser
    except ImportError:  # pragma: no cover - json5 without its generated parser
        return None
    names = ("_other_id_start_", "_id_continue_")
    if not all(callable(getattr(Parser, name, None)) for name in names):
        return None

    def tested_char(rule: Any) -> Any:
        def run(self: Any) -> None:
            start, furthest = self.pos, self.errpos
            rule(self)
            if self.failed:
                self.errpos = max(furthest, start)

        return run

    precise = type("PreciseParser", (Parser,), {n: tested_char(getattr(Parser, n)) for n in names})
    try:
        # json5.loads' own settings: strict, and the whole text must be one value
        flags = {"_strict": True, "_consume_trailing": True}
        _, error, position = precise(text, "<string>").parse(global_vars=flags)
    except (RecursionError, ValueError):
        return None
    return int(position) if error else None


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


def show(value: Any) -> str:
    """A value as the user typed it (JSON spelling), cut short so errors stay one line."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _SHOW_LIMIT:
        text = text[: _SHOW_LIMIT - 1] + "…"
    return text


def describe(value: Any, secret: bool = False) -> str:
    """``string "yes"`` / ``number 5``; secrets (API keys, headers) show only their type."""
    kind = _json_type(value)
    if secret or (isinstance(value, dict | list) and len(show(value)) >= _SHOW_LIMIT):
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    return f"{kind} {show(value)}"


def join_key(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def suggest(word: str, options: Any) -> str:
    close = difflib.get_close_matches(word, [str(o) for o in options], n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _is_secret(where: str) -> bool:
    last = where.rsplit(".", 1)[-1].lower()
    return "apikey" in last or "token" in last or ".headers." in where.lower()


@dataclass
class ConfigContext:
    """What every reader needs: where the file is, the env, and the warning sink."""

    file: Path | None
    base_dir: Path
    env: Mapping[str, str]
    warnings: list[str] = field(default_factory=list)

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError(message, file=self.file, key=where or None)

    def type_error(self, where: str, expected: str, value: Any) -> ConfigError:
        found = describe(value, secret=_is_secret(where))
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


class ConfigReader:
    """Typed access to one config subtree, reporting errors at the key's true path.

    ``origins`` maps a key tuple (relative to this subtree) to the dotted path it
    came from; lookups use the longest known prefix. For the merged
    ``memorySearch`` block every node is annotated, so an error in a value an
    agent overrode points at ``agents.list[N]...`` and not at the defaults.
    """

    def __init__(self, data: Any, origins: dict[tuple[str, ...], str], ctx: ConfigContext):
        self.data = data
        self.origins = origins
        self.ctx = ctx

    def where(self, keys: tuple[str, ...]) -> str:
        for cut in range(len(keys), -1, -1):
            prefix = keys[:cut]
            if prefix in self.origins:
                where = self.origins[prefix]
                for key in keys[cut:]:
                    where = join_key(where, key)
                return where
        return ".".join(keys)

    def get(self, keys: tuple[str, ...]) -> Any:
        """The raw value, or ``MISSING`` when absent or null (OpenClaw treats null as unset)."""
        node = self.data
        for depth, key in enumerate(keys):
            if not isinstance(node, dict):
                raise self.ctx.type_error(self.where(keys[:depth]), "an object", node)
            node = node.get(key)
            if node is None:
                return MISSING
        return node

    def obj(self, keys: tuple[str, ...]) -> dict[str, Any]:
        value = self.get(keys)
        if value is MISSING:
            return {}
        if not isinstance(value, dict):
            raise self.ctx.type_error(self.where(keys), "an object", value)
        return value

    def boolean(self, keys: tuple[str, ...], default: bool) -> bool:
        value = self.get(keys)
        if value is MISSING:
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
            low = "" if lo is None else show(lo)
            high = "" if hi is None else show(hi)
            allowed = (
                f"{low}–{high}"
                if lo is not None and hi is not None
                else (f"at least {low}" if lo is not None else f"at most {high}")
            )
            self.ctx.warn(
                self.where(keys),
                f"{show(value)} is out of range ({allowed}); using {show(clamped)}",
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
        given = value is not MISSING
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
        """A whole number; fractions are floored as OpenClaw does, with a warning.
        Without ``hi``, at most :data:`MAX_INTEGER` (a larger count, size or time
        in ms is a mistake, and would overflow a timer or an array)."""
        hi = MAX_INTEGER if hi is None else hi
        value = self.get(keys)
        given = value is not MISSING
        if not given:
            number = default
        else:
            raw = self._finite(keys, value)
            if (hi is not None and raw > hi) or (lo is not None and raw < lo):
                return int(self._clamp(keys, raw, lo, hi, given))  # said as written
            number = math.floor(raw)
            if number != raw:
                self.ctx.warn(
                    self.where(keys), f"{show(raw)} is not a whole number; using {number}"
                )
        return int(self._clamp(keys, number, lo, hi, given))

    def string(self, keys: tuple[str, ...], default: str | None = None) -> str | None:
        """A string with ``${VAR}`` expanded from env; an unset variable means "not set"."""
        value = self.get(keys)
        if value is MISSING:
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

    def choice(
        self, keys: tuple[str, ...], options: tuple[_Choice, ...], default: _Choice
    ) -> _Choice:
        """One of *options*; typed as the options' ``Literal`` so settings need no cast."""
        value = self.string(keys)
        if value is None:
            return default
        for option in options:
            if value == option:
                return option
        expected = "one of " + ", ".join(f'"{o}"' for o in options)
        raise self.ctx.error(
            self.where(keys),
            f"expected {expected}, found {describe(value)}{suggest(value, options)}",
        )

    def strings(self, keys: tuple[str, ...], options: tuple[str, ...] | None = None) -> list[str]:
        """A list of strings (each optionally from *options*); missing means empty."""
        value = self.get(keys)
        if value is MISSING:
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
                    f"expected {wanted}, found {describe(item)}{suggest(item, options)}",
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
            item_where = join_key(self.where(keys), name)
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


def warn_unknown(block: Any, known: dict[str, Any], where: str, ctx: ConfigContext) -> None:
    """Warn (never fail) on keys memdeck does not know, suggesting the likely typo."""
    if not isinstance(block, dict):
        return  # wrong types are reported by the builders, with the expected type
    for key, value in block.items():
        key_where = join_key(where, key)
        if key not in known:
            ctx.warn(key_where, f"unknown key{suggest(key, known)}; ignored")
        elif isinstance(known[key], dict):
            warn_unknown(value, known[key], key_where, ctx)


def annotate_origins(
    value: Any, where: str, rel: tuple[str, ...], origins: dict[tuple[str, ...], str]
) -> None:
    origins[rel] = where
    if isinstance(value, dict):
        for key, item in value.items():
            annotate_origins(item, join_key(where, key), (*rel, key), origins)


def merge_with_origins(
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
        child_where, child_rel = join_key(where, key), (*rel, key)
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            origins[child_rel] = child_where
            merged[key] = merge_with_origins(merged[key], value, child_where, child_rel, origins)
        else:
            merged[key] = value
            annotate_origins(value, child_where, child_rel, origins)
    return merged


def unique(items: list[str]) -> tuple[str, ...]:
    """*items* without repeats, first occurrence first (config lists are sets in order)."""
    return tuple(dict.fromkeys(items))
