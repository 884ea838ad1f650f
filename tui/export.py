"""A ranking taken elsewhere: clipboard texts and export files.

A user debugging a ranking needs it outside the app: in an issue, a chat, a
diff between two settings. Everything here is a pure function of the
``SearchOutcome`` the pane shows (the breakdown text is the breakdown panel's
own text, the JSON is ``memdeck search --json --explain``'s shape), so what is
copied or exported is exactly what was on screen.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from engine.search import explain as ex
from engine.search.model import Candidate, SearchOutcome
from tui.format import location, num, signed_shift
from tui.widgets.breakdown import explain

CLIP_WIDTH = 100


def anchor(c: Candidate) -> str:
    """``path#L12-L20``: a location that editors and code hosts understand."""
    if c.start_line == c.end_line:
        return f"{c.path}#L{c.start_line}"
    return f"{c.path}#L{c.start_line}-L{c.end_line}"


def result_clip(c: Candidate) -> str:
    """The highlighted result: where it is and its text."""
    return f"{anchor(c)}\n\n{c.text.rstrip()}\n"


def breakdown_clip(c: Candidate, outcome: SearchOutcome) -> str:
    """The breakdown panel's text for ``c``, without colours."""
    return explain(c, outcome, {}, CLIP_WIDTH).plain.rstrip() + "\n"


def _lists(c: Candidate) -> str:
    parts = []
    if c.fts_position:
        parts.append(f"F{c.fts_position}")
    if c.vector_position:
        parts.append(f"V{c.vector_position}")
    return " ".join(parts) or "–"


def whynot_clip(outcome: SearchOutcome) -> str:
    """Every dropped candidate with its score, lists and reason (tab-separated)."""
    lines = [
        f"Why not: {len(outcome.dropped)} dropped for {outcome.query!r} "
        f"(minScore {outcome.options.min_score:.2f}, maxResults {outcome.options.max_results})",
        "location\tscore\tlists\treason",
    ]
    for c in outcome.dropped:
        lines.append(
            f"{location(c.path, c.start_line, c.end_line)}\t{num(c.score, 3)}\t"
            f"{_lists(c)}\t{c.dropped or ''}"
        )
    return "\n".join(lines) + "\n"


def ranking_json(result: dict[str, Any], outcome: SearchOutcome, at: dt.datetime) -> str:
    """``result`` is ``engine.tools.search_answer(…, explain=True).to_json()``; the query
    and the time are added so the file stands on its own."""
    doc = {"query": outcome.query, "exported_at": at.isoformat(timespec="seconds"), **result}
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def ranking_markdown(outcome: SearchOutcome, at: dt.datetime) -> str:
    """The ranking as a Markdown document: a table, each result's formula and
    text, and the why-not table."""
    o = outcome.options
    out = [
        f"# memdeck ranking for “{outcome.query}”",
        "",
        f"{outcome.mode} · fusion {outcome.fusion} · weights vector {o.vector_weight:.2f} / "
        f"text {o.text_weight:.2f} · MMR {'on' if o.mmr_enabled else 'off'} · decay "
        f"{'on' if o.decay_enabled else 'off'} · minScore {o.min_score:.2f} · "
        f"{len(outcome.results)} results of {len(outcome.candidates)} candidates · "
        f"exported {at.isoformat(timespec='minutes')}",
        "",
        "| # | score | vector | text | decay | mmr | location |",
        "|--:|--:|--:|--:|--:|--:|---|",
    ]
    for c in outcome.results:
        decay = f"×{c.decay_multiplier:.2f}" if c.age_days is not None else "·"
        mmr = signed_shift(c.mmr_shift) if c.mmr_position else "·"
        # the factors the fusion used, as the TUI's columns show them
        vec = num(None if c.parts is None else c.parts.vector, 2)
        txt = num(None if c.parts is None else c.parts.text, 2)
        out.append(
            f"| {c.final_rank} | {c.score:.3f} | {vec} | {txt} | {decay} | {mmr} | `{anchor(c)}` |"
        )
    for c in outcome.results:
        out += ["", f"## {c.final_rank}. `{anchor(c)}` — {c.score:.3f}", ""]
        out += [f"`{ex.formula(c)}`", ""]
        out += ["> " + line if line else ">" for line in c.text.rstrip().splitlines()]
    out += ["", f"## Why not ({len(outcome.dropped)} dropped)", ""]
    if outcome.dropped:
        out += ["| location | score | lists | reason |", "|---|--:|---|---|"]
        for c in outcome.dropped:
            out.append(
                f"| `{anchor(c)}` | {num(c.score, 3)} | {_lists(c)} | {_cell(c.dropped or '')} |"
            )
    else:
        out.append("Nothing was dropped.")
    return "\n".join(out) + "\n"


def default_export_name(query: str, at: dt.datetime) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-")[:40] or "query"
    return f"memdeck-ranking-{slug}-{at:%Y%m%d-%H%M}.md"


def write_new_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (the caller confirmed any overwrite)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
