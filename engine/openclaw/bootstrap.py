"""OpenClaw 2026.9.6's bootstrap injection: what of each workspace file an agent is given.

Every main-session turn, OpenClaw puts its workspace *bootstrap files* into the
system prompt ("Project Context"); the agent does not search them, it reads them.
This module reproduces, fact for fact, how much of each it puts there:

* **Which files, in which order**: ``AGENTS.md``, ``SOUL.md``, ``IDENTITY.md``,
  ``USER.md``, ``BOOTSTRAP.md``, ``MEMORY.md`` (:data:`BOOTSTRAP_FILE_NAMES`).
  A missing ``AGENTS.md``/``SOUL.md``/``IDENTITY.md``/``BOOTSTRAP.md`` is injected
  as the line ``[MISSING] Expected at: <absolute path>``; a missing ``MEMORY.md``
  or ``USER.md`` is left out (``MEMORY.md`` must be spelled exactly so).
* **Characters are JavaScript string lengths**: UTF-16 code units, so an emoji or
  any other character outside the Basic Multilingual Plane counts twice
  (:func:`utf16_units`). Trailing whitespace (JavaScript's ``trimEnd``, which
  knows other spaces than Python's ``str.rstrip``) is dropped first and never
  counted. A BOM stays (Node's UTF-8 decoding keeps it).
* **Per file** (``bootstrapMaxChars``, default 20,000; ``USER.md`` at most
  4,000): a longer file keeps its head (75 % of what is left after the marker)
  and its tail (25 %) around a two-line marker (``[...truncated, read NAME for
  full content...]`` and ``…(truncated NAME: kept H+T chars of N)…``), or a
  compact ``[…truncated H+T/N]`` when the limit leaves under 16 characters
  beside the full marker. A slice never splits a surrogate pair. ``AGENTS.md``
  keeps 45 % head, 15 % tail and up to 35 % of a digest of its policy lines.
* **All files together** (``bootstrapTotalMaxChars``, default 60,000): each file
  may use at most what the files before it left; with under 64 characters left
  the remaining files are dropped, and an empty file is not injected at all.
* **Limits** come from the agent's entry (``agents.entries.<id>`` in 2026.9's
  layout, ``agents.list[]`` in the older one), else ``agents.defaults``; a value
  that is not a positive finite number means the default (:func:`resolve_limit`).

Everything here is pure (text and numbers in, text and numbers out). Offsets are
counted in UTF-16 units of the file's text after ``trimEnd``; :class:`Injection`
says which ranges of it reach the agent verbatim (``visible``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

BOOTSTRAP_FILE_NAMES = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "BOOTSTRAP.md",
    "MEMORY.md",
)
#: files left out when missing, rather than injected as a ``[MISSING]`` line
OPTIONAL_WHEN_MISSING = ("USER.md", "MEMORY.md")
DEFAULT_MAX_CHARS = 20_000
DEFAULT_TOTAL_MAX_CHARS = 60_000
USER_MAX_CHARS = 4_000
MIN_FILE_BUDGET_CHARS = 64
HEAD_RATIO = 0.75
TAIL_RATIO = 0.25
MIN_TRIMMED_CONTENT_CHARS = 16
AGENTS_HEAD_RATIO = 0.45
AGENTS_TAIL_RATIO = 0.15
AGENTS_DIGEST_RATIO = 0.35
AGENTS_DIGEST_MAX_LINE_CHARS = 240
DEFAULT_AGENT_ID = "main"

Cause = Literal["per-file-limit", "total-limit"]

#: JavaScript's white space and line terminators (``\s``, ``trim``, ``trimEnd``)
JS_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_SPACE_RUN = re.compile(f"[{JS_SPACE}]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LINE_BREAK = re.compile("\r?\n")
_FENCE_LINE = re.compile(f"^[{JS_SPACE}]*(?:`{{3,}}|~{{3,}})")
_LIST_OR_HEADING = re.compile(
    f"^(?:#{{1,6}}|[{JS_SPACE}]*[-*+]|[{JS_SPACE}]*[0-9]+[.)])[{JS_SPACE}]+[^{JS_SPACE}]"
)
_POLICY_WORDS = (
    r"\b(?:AGENTS\.md|scoped|required|must|never|do not|before subtree|read scoped|owner|"
    r"security|secret|credential|test|validation|command|commit|push|github|pr)\b"
)
_POLICY_SIGNS = "(?:\U0001f534|禁止|嚴禁|不得|絕不|絕對不|切勿|必須|務必|一律|紅線)"
_POLICY_LINE = re.compile(f"{_POLICY_WORDS}|{_POLICY_SIGNS}", re.ASCII | re.IGNORECASE)
_HIGH_PRIORITY = re.compile(
    r"\b(?:AGENTS\.md|scoped|required|must|never|do not|before subtree|read scoped|security|"
    r"secret|credential)\b|(?:\U0001f534|禁止|嚴禁|不得|絕不|絕對不|切勿)",
    re.ASCII | re.IGNORECASE,
)
#: the two non-ASCII letters JavaScript's case-insensitive Unicode matching folds to
#: ASCII (long s, Kelvin sign): word characters for its ``\b`` there
_JS_FOLDS = str.maketrans({"\u017f": "s", "\u212a": "k"})


# -- UTF-16 ------------------------------------------------------------------------
def utf16_units(text: str) -> str:
    """``text`` with each character outside the BMP written as its surrogate pair, so
    that ``len``, slices and offsets count what JavaScript's ``length`` counts."""
    if not _ASTRAL.search(text):
        return text

    def pair(m: re.Match[str]) -> str:
        code = ord(m.group()) - 0x10000
        return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))

    return _ASTRAL.sub(pair, text)


def from_utf16_units(units: str) -> str:
    """Back from :func:`utf16_units` (a lone surrogate stays as it is)."""
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def utf16_length(text: str) -> int:
    return len(text) + len(_ASTRAL.findall(text))


def js_trim_end(units: str) -> str:
    """JavaScript's ``String.prototype.trimEnd``."""
    return units.rstrip(_SPACE_CHARS)


def js_trim(units: str) -> str:
    return units.strip(_SPACE_CHARS)


_SPACE_CHARS = "\t\n\x0b\x0c\r \xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
_SPACE_CHARS += "\u2028\u2029\u202f\u205f\u3000\ufeff"


def _high(unit: str) -> bool:
    return "\ud800" <= unit <= "\udbff"


def _low(unit: str) -> bool:
    return "\udc00" <= unit <= "\udfff"


def safe_bounds(units: str, start: int, end: int | None = None) -> tuple[int, int]:
    """The bounds of OpenClaw's surrogate-safe slice (``sliceUtf16Safe``): negative
    numbers count from the end; an edge that would split a pair moves inward."""
    n = len(units)
    lo = max(n + start, 0) if start < 0 else min(start, n)
    hi = n if end is None else (max(n + end, 0) if end < 0 else min(end, n))
    if hi <= lo:
        return lo, lo
    if 0 < lo < n and _low(units[lo]) and _high(units[lo - 1]):
        lo += 1
    if 0 < hi < n and _high(units[hi - 1]) and _low(units[hi]):
        hi -= 1
    return (lo, hi) if hi > lo else (lo, lo)


def truncate_units(units: str, limit: int) -> str:
    """``truncateUtf16Safe``: at most ``limit`` units, never half a pair."""
    limit = max(0, math.floor(limit))
    if len(units) <= limit:
        return units
    lo, hi = safe_bounds(units, 0, limit)
    return units[lo:hi]


# -- pieces: injected text that remembers where each part came from -----------------
@dataclass(frozen=True, slots=True)
class Piece:
    """A part of the injected text: the file's own units ``[start, end)`` (``text``
    None) or text OpenClaw wrote (a marker, the AGENTS.md digest)."""

    start: int = 0
    end: int = 0
    text: str | None = None

    def length(self) -> int:
        return self.end - self.start if self.text is None else len(self.text)


def _render(pieces: Sequence[Piece], units: str) -> str:
    return "".join(units[p.start : p.end] if p.text is None else p.text for p in pieces)


def _length(pieces: Sequence[Piece]) -> int:
    return sum(p.length() for p in pieces)


def _cut(pieces: Sequence[Piece], units: str, limit: int) -> list[Piece]:
    """The pieces of ``truncateUtf16Safe(rendered, limit)``."""
    rendered = _render(pieces, units)
    if len(rendered) <= max(0, math.floor(limit)):
        return list(pieces)
    keep = safe_bounds(rendered, 0, max(0, math.floor(limit)))[1]
    out: list[Piece] = []
    at = 0
    for p in pieces:
        if at >= keep:
            break
        take = min(p.length(), keep - at)
        if take > 0:
            if p.text is None:
                out.append(Piece(p.start, p.start + take))
            else:
                out.append(Piece(text=p.text[:take]))
        at += p.length()
    return out


def _joined(parts: Sequence[Piece], separator: str) -> list[Piece]:
    """``[...].filter(part => part.length > 0).join(separator)``."""
    out: list[Piece] = []
    for part in parts:
        if part.length() == 0:
            continue
        if out and separator:
            out.append(Piece(text=separator))
        out.append(part)
    return out


def _slice_piece(units: str, start: int, end: int | None = None) -> Piece:
    lo, hi = safe_bounds(units, start, end)
    return Piece(lo, hi)


@dataclass(frozen=True)
class Trimmed:
    """One file after its per-file limit (``trimBootstrapContent``)."""

    pieces: tuple[Piece, ...]
    truncated: bool
    original_length: int  # UTF-16 units after trimEnd
    max_chars: int
    head: int = 0  # the head and tail the marker names (0 when not truncated)
    tail: int = 0


def trim_content(trimmed: str, name: str, max_chars: int) -> Trimmed:
    """Cut ``trimmed`` (UTF-16 units, trimEnd already applied) to ``max_chars``."""
    n = len(trimmed)
    if n <= max_chars:
        return Trimmed((Piece(0, n),), False, n, max_chars)
    if name.lower() == "agents.md":
        return _trim_agents(trimmed, max_chars)

    def full(head: int, tail: int) -> str:
        return (
            f"\n[...truncated, read {name} for full content...]\n"
            f"…(truncated {name}: kept {head}+{tail} chars of {n})…\n"
        )

    def compact(head: int, tail: int) -> str:
        return f"[…truncated {head}+{tail}/{n}]"

    def separators(head: int, tail: int, marker: str) -> int:
        return (int(head > 0) + int(tail > 0)) if "\n" in marker else 0

    whole = full(0, 0)
    template = full if max_chars - len(whole) - separators(1, 1, whole) >= 16 else compact
    head = tail = 0
    marker = template(head, tail)
    for _ in range(3):
        budget = max(0, max_chars - len(marker) - separators(head, tail, marker))
        next_head = math.floor(budget * HEAD_RATIO)
        next_tail = math.floor(budget * TAIL_RATIO)
        next_marker = template(next_head, next_tail)
        if next_head == head and next_tail == tail and len(next_marker) == len(marker):
            break
        head, tail, marker = next_head, next_tail, next_marker
    rendered = head + tail + len(marker) + separators(head, tail, marker)
    while rendered > max_chars and (tail > 0 or head > 0):
        overflow = rendered - max_chars
        if tail > 0:
            tail = max(0, tail - overflow)
        else:
            head = max(0, head - overflow)
        marker = template(head, tail)
        rendered = head + tail + len(marker) + separators(head, tail, marker)
    if head == 0 and tail == 0 and n > 0:
        single = template(1, 0)
        if 1 + len(single) + separators(1, 0, single) <= max_chars:
            head, marker = 1, single
    head_piece = _slice_piece(trimmed, 0, head)
    tail_piece = _slice_piece(trimmed, -tail) if tail > 0 else Piece()
    pieces = _joined([head_piece, Piece(text=marker), tail_piece], "\n" if "\n" in marker else "")
    pieces = _cut(pieces, trimmed, max_chars)
    return Trimmed(tuple(pieces), True, n, max_chars, head, tail)


# -- AGENTS.md: head, a digest of its policy lines, tail ------------------------------
@dataclass(frozen=True, slots=True)
class _Candidate:
    text: str  # UTF-16 units
    high: bool


def _digest_line(line: str) -> str:
    normalized = _SPACE_RUN.sub(" ", js_trim(line))
    if len(normalized) <= AGENTS_DIGEST_MAX_LINE_CHARS:
        return normalized
    return truncate_units(normalized, AGENTS_DIGEST_MAX_LINE_CHARS - 1) + "…"


def _is_policy_line(line: str) -> bool:
    if _LIST_OR_HEADING.search(line):
        return True
    return bool(_POLICY_LINE.search(from_utf16_units(line).translate(_JS_FOLDS)))


def _policy_candidates(trimmed: str) -> list[_Candidate]:
    out: list[_Candidate] = []
    prose: str | None = None
    for source in _LINE_BREAK.split(trimmed):
        line = _digest_line(source)
        if not line:
            prose = None
            continue
        if _FENCE_LINE.search(line):
            prose = None
        elif _is_policy_line(line):
            high = bool(_HIGH_PRIORITY.search(from_utf16_units(line).translate(_JS_FOLDS)))
            out.append(_Candidate(line if prose is None else f"{prose}\n{line}", high))
            prose = None
        else:
            prose = line
    return out


def _digest(candidates: Sequence[_Candidate], budget: int) -> tuple[str, int]:
    """(digest text, policy lines left out) within ``budget`` units."""
    if budget <= 0:
        return "", 0
    chosen: set[int] = set()
    used = 0

    def take(index: int) -> None:
        nonlocal used
        separator = 1 if chosen else 0
        size = len(candidates[index].text)
        if used + separator + size > budget:
            return
        chosen.add(index)
        used += separator + size

    for i, c in enumerate(candidates):
        if c.high:
            take(i)
    for i in range(len(candidates)):
        if i not in chosen:
            take(i)
    text = "\n".join(c.text for i, c in enumerate(candidates) if i in chosen)
    return text, max(0, len(candidates) - len(chosen))


def _trim_agents(trimmed: str, max_chars: int) -> Trimmed:
    n = len(trimmed)
    head = math.floor(max_chars * AGENTS_HEAD_RATIO)
    tail = math.floor(max_chars * AGENTS_TAIL_RATIO)
    budget = math.floor(max_chars * AGENTS_DIGEST_RATIO)
    candidates = _policy_candidates(trimmed) if budget > 0 else []
    digest, omitted = _digest(candidates, budget)

    def render() -> list[Piece]:
        return _joined(
            [
                _slice_piece(trimmed, 0, head),
                Piece(text="[...truncated, read AGENTS.md for full content...]"),
                Piece(text="[Policy digest from AGENTS.md]" if digest else ""),
                Piece(text=digest),
                Piece(text=f"[...{omitted} more policy lines omitted...]" if omitted > 0 else ""),
                Piece(
                    text=f"…(truncated AGENTS.md: kept {head}+policy {len(digest)}+{tail} "
                    f"chars of {n})…"
                ),
                _slice_piece(trimmed, -tail) if tail > 0 else Piece(),
            ],
            "\n",
        )

    pieces = render()
    while _length(pieces) > max_chars and (tail > 0 or head > 1 or budget > 0):
        overflow = _length(pieces) - max_chars
        if tail > 0:
            tail = max(0, tail - overflow)
        elif head > 1:
            head = max(1, head - overflow)
        else:
            budget = max(0, budget - overflow)
            digest, omitted = _digest(candidates, budget)
        pieces = render()
    pieces = _cut(pieces, trimmed, max_chars)
    return Trimmed(tuple(pieces), True, n, max_chars, head, tail)


# -- all files together ----------------------------------------------------------------
@dataclass(frozen=True)
class BootstrapFile:
    """One file as OpenClaw lists it: ``content`` is its text as read (None: missing)."""

    name: str
    path: str  # absolute, as OpenClaw names it in the [MISSING] line
    content: str | None


@dataclass(frozen=True)
class Injection:
    """What one file puts into the prompt, and why."""

    name: str
    path: str
    missing: bool
    raw_chars: int  # UTF-16 units after trimEnd (0 when missing)
    injected_chars: int
    truncated: bool
    #: the per-file limit that applied (USER.md: at most 4,000)
    effective_limit: int
    causes: tuple[Cause, ...]
    #: the ranges ``[start, end)`` of the trimmed text (UTF-16 units) the agent is given
    #: verbatim; empty when nothing of the file is injected
    visible: tuple[tuple[int, int], ...]
    #: the injected text itself, in UTF-16 units (None when nothing is injected)
    injected: str | None = None


def clamp_to_budget(units: str, budget: int) -> str:
    """``clampToBudget``: cut to ``budget`` with a final ``…``."""
    if budget <= 0:
        return ""
    if len(units) <= budget:
        return units
    if budget <= 3:
        return truncate_units(units, budget)
    return truncate_units(units, budget - 1) + "…"


def file_budget(name: str, max_chars: int) -> int:
    return min(max_chars, USER_MAX_CHARS) if name.lower() == "user.md" else max_chars


def inject(
    files: Sequence[BootstrapFile], *, max_chars: int, total_max_chars: int
) -> list[Injection]:
    """Every file's injection and its analysis (``buildBootstrapContextFiles``,
    ``buildBootstrapInjectionStats`` and ``analyzeBootstrapBudget`` together)."""
    remaining = max(1, math.floor(total_max_chars))
    given: dict[str, tuple[str, tuple[tuple[int, int], ...]]] = {}
    for f in files:
        if remaining <= 0:
            break
        if f.content is None:
            text = clamp_to_budget(utf16_units(f"[MISSING] Expected at: {f.path}"), remaining)
            if not text:
                break
            remaining = max(0, remaining - len(text))
            given.setdefault(f.path, (text, ()))
            continue
        if remaining < MIN_FILE_BUDGET_CHARS:
            break
        file_max = max(1, min(file_budget(f.name, max_chars), remaining))
        trimmed = js_trim_end(utf16_units(f.content))
        cut = trim_content(trimmed, f.name, file_max)
        # the cut text is at most file_max <= remaining long: OpenClaw's clamp to the
        # remaining budget never changes it
        pieces = list(cut.pieces)
        text = _render(pieces, trimmed)
        if not text:
            continue
        remaining = max(0, remaining - len(text))
        visible = tuple((p.start, p.end) for p in pieces if p.text is None and p.end > p.start)
        given.setdefault(f.path, (text, visible))
    return _analyse(files, given, max_chars, total_max_chars)


def _positive(value: float) -> int:
    return math.floor(value) if math.isfinite(value) and value > 0 else 1


def _analyse(
    files: Sequence[BootstrapFile],
    given: Mapping[str, tuple[str, tuple[tuple[int, int], ...]]],
    max_chars: int,
    total_max_chars: int,
) -> list[Injection]:
    limit = _positive(max_chars)
    left = _positive(total_max_chars)
    out: list[Injection] = []
    for f in files:
        effective = file_budget(f.name, limit)
        text, visible = given.get(f.path, ("", ()))
        missing = f.content is None
        raw = 0 if missing else len(js_trim_end(utf16_units(f.content or "")))
        available = left
        left = max(0, left - len(text))
        truncated = not missing and len(text) < raw
        causes: list[Cause] = []
        if truncated:
            if raw > effective:
                causes.append("per-file-limit")
            if available < effective and raw > available:
                causes.append("total-limit")
        out.append(
            Injection(
                name=f.name,
                path=f.path,
                missing=missing,
                raw_chars=raw,
                injected_chars=len(text),
                truncated=truncated,
                effective_limit=effective,
                causes=tuple(causes),
                visible=() if missing else visible,
                injected=text if f.path in given else None,
            )
        )
    return out


# -- limits from openclaw.json -----------------------------------------------------------
_VALID_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$", re.IGNORECASE)
_INVALID_ID_CHARS = re.compile(r"[^a-z0-9_-]+")


def normalize_agent_id(value: object) -> str:
    """OpenClaw's canonical agent id (lower case; other characters become ``-``)."""
    text = value if isinstance(value, str) else ""
    trimmed = js_trim(utf16_units(text))
    lowered = from_utf16_units(trimmed).lower()
    if _VALID_ID.match(from_utf16_units(trimmed)):
        return lowered
    cleaned = _INVALID_ID_CHARS.sub("-", lowered).lstrip("-").rstrip("-")
    cleaned = from_utf16_units(utf16_units(cleaned)[:64])
    return cleaned or DEFAULT_AGENT_ID


def _record(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def agent_entry(document: Mapping[str, Any], agent_id: str) -> dict[str, Any] | None:
    """The agent's own entry: ``agents.entries.<id>`` (2026.9) when that map is there,
    else ``agents.list[]``; the implicit ``main`` of a file with neither."""
    wanted = normalize_agent_id(agent_id)
    agents = _record(document.get("agents"))
    if agents is not None and "entries" in agents:  # JSON has no undefined: null counts
        entries = _record(agents["entries"])
        if entries is None:
            return None
        for key, entry in entries.items():
            if isinstance(entry, dict) and normalize_agent_id(key) == wanted:
                return entry
        return None
    if agents is not None and "list" in agents:
        listed = agents["list"]
        if not isinstance(listed, list):
            return None
        for entry in listed:
            if isinstance(entry, dict | list):
                entry_id = entry.get("id") if isinstance(entry, dict) else None
                if normalize_agent_id(entry_id) == wanted:
                    return entry if isinstance(entry, dict) else {}
        return None
    return {} if wanted == DEFAULT_AGENT_ID else None


def resolve_limit(
    document: Mapping[str, Any], agent_id: str | None, key: str, fallback: int
) -> int:
    """``bootstrapMaxChars``/``bootstrapTotalMaxChars`` for an agent: its entry's value,
    else (only when the entry leaves it unset) ``agents.defaults``'s; a value that is
    not a positive finite number is the default."""
    agents = _record(document.get("agents")) or {}
    defaults = _record(agents.get("defaults")) or {}
    raw: object = None
    if agent_id is not None:
        entry = agent_entry(document, agent_id)
        raw = entry.get(key) if entry is not None else None
    if raw is None:
        raw = defaults.get(key)
    number = isinstance(raw, int | float) and not isinstance(raw, bool)
    if number and isinstance(raw, int | float) and math.isfinite(raw) and raw > 0:
        return math.floor(raw)
    return fallback


def resolve_limits(document: Mapping[str, Any], agent_id: str | None) -> tuple[int, int]:
    """(bootstrapMaxChars, bootstrapTotalMaxChars) for the agent."""
    return (
        resolve_limit(document, agent_id, "bootstrapMaxChars", DEFAULT_MAX_CHARS),
        resolve_limit(document, agent_id, "bootstrapTotalMaxChars", DEFAULT_TOTAL_MAX_CHARS),
    )


def context_injection(document: Mapping[str, Any], agent_id: str | None) -> str:
    """``contextInjection`` as it acts: ``never``, ``continuation-skip`` or ``always``.

    The agent's own value counts only when it is one of the three; otherwise the
    defaults' value is taken as it is, and OpenClaw's callers treat anything but
    ``never`` and ``continuation-skip`` as ``always``."""
    modes = ("always", "continuation-skip", "never")
    if agent_id is not None:
        entry = agent_entry(document, agent_id)
        mode = entry.get("contextInjection") if entry is not None else None
        if mode in modes:
            return str(mode)
    defaults = _record((_record(document.get("agents")) or {}).get("defaults")) or {}
    mode = defaults.get("contextInjection")
    return str(mode) if mode in modes else "always"


def estimate_tokens(chars: int) -> int:
    """OpenClaw's ``/context`` estimate: a token per 4 characters, rounded up."""
    return math.ceil(max(0, chars) / 4)


__all__ = [
    "BOOTSTRAP_FILE_NAMES",
    "BootstrapFile",
    "Injection",
    "context_injection",
    "estimate_tokens",
    "from_utf16_units",
    "inject",
    "js_trim_end",
    "resolve_limits",
    "trim_content",
    "utf16_length",
    "utf16_units",
]
