"""Dreaming reports: DREAMS.md blocks and per-phase report files.

``storage.mode`` decides where a phase run is written:

* ``inline`` (default): the phase's block in ``DREAMS.md`` at the workspace root
  (``## Light Sleep``, ``## Deep Sleep``, ``## REM Sleep``). Each run replaces
  its own block, between ``<!-- memdeck:dreaming:<phase> -->`` markers, and
  leaves everything else in the file alone, so notes the user writes there
  survive.
* ``separate``: ``memory/dreaming/<phase>/YYYY-MM-DD.md``, one file per phase
  and day (a later run the same day replaces it). ``storage.separateReports``
  true adds these files in inline mode too; ``both`` writes both.

These files are never candidates themselves: entries under ``memory/dreaming/``
are skipped when material is gathered, and DREAMS.md is not a memory file.
Nothing here touches MEMORY.md.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from engine.memory.dreaming.deep import WEIGHTS, DeepResult, Proposal
from engine.memory.dreaming.light import LightResult
from engine.memory.dreaming.rem import RemResult
from engine.workspace.files import MAX_INDEX_BYTES, atomic_write
from engine.workspace.safe_open import FileTooLarge, PathRefused, open_checked

DREAMS_FILE = "DREAMS.md"
REPORTS_DIR = "memory/dreaming"
TITLES = {"light": "Light Sleep", "deep": "Deep Sleep", "rem": "REM Sleep"}
_TEXT_CHARS = 160


class ReportError(RuntimeError):
    """A report file memdeck will not rewrite (the message says why)."""


def _short(text: str, limit: int = _TEXT_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _report(summary: str, bullets: list[str], none: str) -> list[str]:
    """Every phase report's shape: an italic summary line, then one bullet per item,
    or one bullet saying why there is none."""
    return [f"_{summary}_", "", *(bullets or [f"- {none}"])]


def render_light(result: LightResult, at: dt.datetime) -> str:
    summary = (
        f"{at:%Y-%m-%d %H:%M} · {len(result.staged)} staged from {result.considered} entries"
        f" · {len(result.merges)} near-duplicates folded"
    )
    bullets = [
        f"- {_short(c.text)} — {c.recall_count} recalls, {c.unique_queries} queries"
        f" ({', '.join(c.sources[:3])})"
        for c in result.staged
    ]
    return "\n".join(_report(summary, bullets, "nothing recent to stage"))


def _proposal_line(p: Proposal) -> str:
    parts = p.parts
    detail = ", ".join(f"{name} {getattr(parts, name):.2f}" for name in WEIGHTS)
    tag = " (recovered)" if p.recovered else ""
    return f"- **{p.score:.3f}**{tag} {_short(p.candidate.text)} — {detail}"


def render_deep(result: DeepResult, at: dt.datetime, written: list[str]) -> str:
    summary = (
        f"{at:%Y-%m-%d %H:%M} · {len(result.proposed)} proposed, {len(result.recovered)} "
        f"recovered, health {result.health:.2f}"
        + (" (recovery ran)" if result.recovery_triggered else "")
    )
    bullets = [_proposal_line(p) for p in result.queue]
    lines = _report(summary, bullets, "no candidate passed the gates")
    if written:
        lines += ["", f"Auto-written to MEMORY.md: {', '.join(written)}"]
    else:
        lines += ["", "Nothing was written to MEMORY.md: review the queue (`memdeck promote`)."]
    return "\n".join(lines)


def render_rem(result: RemResult, at: dt.datetime) -> str:
    summary = f"{at:%Y-%m-%d %H:%M} · {len(result.themes)} themes from {result.entries} entries"
    bullets = [
        f"- {t.title} — strength {t.strength:.2f} ({t.support}/{t.union} entries: "
        f"{', '.join(t.sources[:3])})"
        for t in result.themes
    ]
    return "\n".join(_report(summary, bullets, "no theme reached the strength threshold"))


def replace_block(text: str, phase: str, body: str) -> str:
    """Pure: ``text`` with the phase's managed block replaced (or appended)."""
    start = f"<!-- memdeck:dreaming:{phase} -->"
    end = f"<!-- /memdeck:dreaming:{phase} -->"
    block = f"{start}\n## {TITLES[phase]}\n\n{body.rstrip()}\n{end}"
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    if i >= 0 and j >= 0:
        return text[:i] + block + text[j + len(end) :]
    if not text.strip():
        return f"# Dreams\n\n{block}\n"
    return text.rstrip("\n") + "\n\n" + block + "\n"


def write_report(
    workspace: Path, phase: str, body: str, day: dt.date, *, inline: bool, separate: bool
) -> list[Path]:
    """Write one phase's report where the storage mode says; returns the files written."""
    written: list[Path] = []
    if inline:
        path = workspace / DREAMS_FILE
        try:  # the checked descriptor: a symlinked DREAMS.md is not read through
            with open_checked(path, shown=DREAMS_FILE) as fh:
                before = fh.read_all(MAX_INDEX_BYTES, "the dreaming report").decode("utf-8")
        except FileNotFoundError:
            before = ""
        except UnicodeDecodeError:
            raise ReportError(f"{path}: not valid UTF-8; left as it is") from None
        except (PathRefused, FileTooLarge) as exc:
            raise ReportError(f"{exc}; left as it is") from None
        atomic_write(path, replace_block(before, phase, body).encode("utf-8"))
        written.append(path)
    if separate:
        path = workspace / REPORTS_DIR / phase / f"{day.isoformat()}.md"
        text = f"# {TITLES[phase]} — {day.isoformat()}\n\n{body.rstrip()}\n"
        atomic_write(path, text.encode("utf-8"))
        written.append(path)
    return written


__all__ = [
    "DREAMS_FILE",
    "REPORTS_DIR",
    "ReportError",
    "render_deep",
    "render_light",
    "render_rem",
    "replace_block",
    "write_report",
]
