"""Reading ``qmd search|vsearch|query --json`` output (pure functions, no I/O).

qmd prints a JSON array on stdout (``[]`` when nothing matched) and warnings
on stderr; some versions and paths print ``No results found.`` instead. Each
hit names its document as ``qmd://<collection>/<path>`` (sometimes with a
``?index=…`` suffix) and its snippet starts with a unified-diff style header
``@@ -<start>,<count> @@ (N before, M after)`` giving the snippet's first line
and length in the file — that header, not the best-match ``line``, is what
memdeck's line ranges are made of.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from engine.qmd.runner import QmdError

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? @@(?: \((\d+) before, (\d+) after\))?[ \t]*$")
_NO_RESULTS = re.compile(r"no results found", re.I)
_INDEX_SUFFIX = re.compile(r"\?index=[^/]*$")


@dataclass(frozen=True)
class QmdHit:
    docid: str
    score: float
    collection: str
    rel_path: str  # path inside the collection, POSIX
    line: int | None  # qmd's best-matching line
    title: str | None
    context: str | None
    text: str  # snippet body without the header, blank edges trimmed
    start_line: int
    end_line: int


def parse_qmd_uri(uri: str) -> tuple[str, str]:
    """``qmd://notes/a/b.md?index=x`` → ``("notes", "a/b.md")``."""
    if not uri.startswith("qmd://"):
        raise ValueError(f"not a qmd:// path: {uri!r}")
    rest = _INDEX_SUFFIX.sub("", uri[len("qmd://") :])
    collection, _, path = rest.partition("/")
    if not collection or not path:
        raise ValueError(f"qmd path without collection or file: {uri!r}")
    return collection, path


def snippet_lines(snippet: str, best_line: int | None = None) -> tuple[int, int, str]:
    """(start, end, body) of a qmd snippet, 1-based and inclusive.

    The header gives the first line and the count; blank lines at either edge
    are dropped from the body and the range shrinks with them, so the range
    covers exactly the text shown. Without a header the body is assumed to
    start at qmd's best line.
    """
    lines = snippet.split("\n")
    match = _HEADER.match(lines[0]) if lines else None
    if match:
        start = int(match[1])
        body = lines[1:]
        count = int(match[2]) if match[2] is not None else len(body)
        body = body[:count] if count <= len(body) else body
    else:
        start = best_line or 1
        body = lines
    start = first = max(1, start)
    if not any(line.strip() for line in body):
        return first, first, ""
    while body and not body[0].strip():
        body.pop(0)
        start += 1
    while body and not body[-1].strip():
        body.pop()
    return start, start + len(body) - 1, "\n".join(body)


def _extract_array(stdout: str) -> list[Any] | None:
    """The JSON array in stdout, tolerating noise printed before or after it."""
    text = stdout.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
        return value if isinstance(value, list) else None
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch == "[" and (i == 0 or text[i - 1] == "\n"):
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if isinstance(value, list):
                return value
    return None


def _score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


def parse_search_output(stdout: str, stderr: str = "") -> list[QmdHit]:
    """Hits from a qmd ``--json`` search; raises QmdError(kind="output") on garbage."""
    items = _extract_array(stdout)
    if items is None:
        if _NO_RESULTS.search(stdout) or (not stdout.strip() and _NO_RESULTS.search(stderr)):
            return []
        shown = stdout.strip()[:200] or "(empty stdout)"
        raise QmdError("output", f"qmd output is not a JSON array: {shown!r}", stderr=stderr[-400:])
    hits: list[QmdHit] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("file"), str):
            raise QmdError("output", f"qmd result #{n + 1} has no 'file': {str(item)[:200]!r}")
        try:
            collection, rel = parse_qmd_uri(item["file"])
        except ValueError as exc:
            raise QmdError("output", f"qmd result #{n + 1}: {exc}") from None
        line = item.get("line")
        best = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
        raw_snippet = item.get("snippet")
        snippet = raw_snippet if isinstance(raw_snippet, str) else ""
        start, end, body = snippet_lines(snippet, best)
        title, context = item.get("title"), item.get("context")
        hits.append(
            QmdHit(
                docid=str(item.get("docid") or ""),
                score=_score(item.get("score")),
                collection=collection,
                rel_path=rel,
                line=best,
                title=title if isinstance(title, str) else None,
                context=context if isinstance(context, str) else None,
                text=body,
                start_line=start,
                end_line=end,
            )
        )
    return hits


def clamp_snippets(texts: list[str], max_snippet: int, max_total: int) -> list[str]:
    """Apply ``limits.maxSnippetChars`` per snippet and ``maxInjectedChars`` overall.

    Results keep their order; once the total budget is spent the last snippet
    is cut to what is left and later ones are dropped (an empty snippet would
    only cost the agent a tool-call line).
    """
    out: list[str] = []
    left = max_total
    for text in texts:
        if left <= 0:
            break
        cut = text[: max(0, min(max_snippet, left))]
        out.append(cut)
        left -= len(cut)
    return out
