"""Glob patterns for 2026.9's ``extraPaths: [{path, pattern}]`` entries.

OpenClaw matches a file's path *relative to the entry's folder* (with ``/``
separators) against the pattern using Node's ``path.posix.matchesGlob``. The
subset of that syntax memory configs use is implemented here: ``*`` and ``?``
within one path segment, ``**`` across segments (``**/`` also matching no folder
at all), ``[...]`` character classes (``[!...]`` negated) and ``{a,b}``
alternatives. Dotfiles are matched only by patterns that spell the dot.
"""

from __future__ import annotations

import functools
import re


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0  # inside {...}
    at_segment_start = True
    while i < n:
        c = pattern[i]
        if c == "*":
            if (
                pattern.startswith("**", i)
                and at_segment_start
                and (i + 2 == n or pattern[i + 2] == "/")
            ):
                if i + 2 == n:
                    out.append(r"(?:(?!\.)[^/]*(?:/(?!\.)[^/]*)*)?")
                    i += 2
                else:
                    out.append(r"(?:(?!\.)[^/]*/)*")
                    i += 3
                continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append(r"(?!\.)[^/]*" if at_segment_start else r"[^/]*")
            at_segment_start = False
            continue
        if c == "?":
            out.append(r"(?!\.)[^/]" if at_segment_start else r"[^/]")
        elif c == "[":
            close = pattern.find("]", i + 2 if i + 1 < n and pattern[i + 1] in "!^" else i + 1)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^/' if negate else ''}{body}]")
                i = close
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "/":
            out.append("/")
            at_segment_start = True
            i += 1
            continue
        else:
            out.append(re.escape(c))
        at_segment_start = False
        i += 1
    return "".join(out) + ("" if depth == 0 else ")" * depth)


@functools.lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(_translate(pattern.replace("\\", "/")), re.S)


def matches_glob(relative_path: str, pattern: str) -> bool:
    """True when *relative_path* (POSIX separators) matches *pattern* entirely."""
    return compile_glob(pattern).fullmatch(relative_path) is not None
