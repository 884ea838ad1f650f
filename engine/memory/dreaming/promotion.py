"""Reviewed promotion into MEMORY.md: preview, accept, reject.

``MEMORY.md`` is the user's curated memory, so a promotion is an *insertion*
the user has seen: :func:`preview` computes the exact new file text, and
:func:`accept` writes exactly that text — after checking that the file on disk
is still byte-for-byte the one the preview was computed from (otherwise it
raises :class:`PromotionConflict` and writes nothing; review again).

Where the line goes: under ``## Promoted YYYY-MM-DD`` (the day of the
accept). If that section exists the line is added at its end (after its last
non-blank line); otherwise the section is appended at the end of the file.
Every existing byte stays where it was: removing the inserted lines from the
new text gives back the old text.

The promoted line is ``- <entry text on one line> <!-- memdeck <key> <source ref> -->``;
the comment keeps provenance and lets the deep phase recognise the entry as
already remembered, and Markdown viewers do not show it.

Decisions (accepted and rejected keys) are kept in a small JSON file in the
state directory, next to the index but not in it: a decision is the user's
data and must survive an index rebuild. A rejected candidate is never proposed
again.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config.settings import Settings
from engine.memory.dreaming.light import Candidate
from engine.workspace.files import MAX_INDEX_BYTES, atomic_write, atomic_write_json, sha256_bytes
from engine.workspace.safe_open import FileTooLarge, PathRefused, open_checked

MEMORY_NAMES = ("MEMORY.md", "memory.md")
SECTION_PREFIX = "## Promoted "
MAX_PROMOTED_CHARS = 640  # about 160 tokens
DECISIONS_VERSION = 1


class PromotionError(RuntimeError):
    """A promotion that cannot be written (the message says why; nothing was written)."""


class PromotionConflict(PromotionError):
    """MEMORY.md changed after the preview was computed."""


def memory_path(workspace: Path) -> Path:
    """The existing ``MEMORY.md`` (or ``memory.md``); ``MEMORY.md`` when neither exists."""
    for name in MEMORY_NAMES:
        candidate = workspace / name
        if candidate.is_file():
            return candidate
    return workspace / MEMORY_NAMES[0]


def promoted_text(text: str) -> str:
    """One line, at most :data:`MAX_PROMOTED_CHARS`, cut at a word with "…"."""
    line = " ".join(text.split())
    line = line.replace("<!--", "<! --").replace("-->", "-- >")
    if len(line) <= MAX_PROMOTED_CHARS:
        return line
    cut = line[: MAX_PROMOTED_CHARS - 1]
    space = cut.rfind(" ")
    if space >= MAX_PROMOTED_CHARS * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"


def promoted_line(candidate: Candidate) -> str:
    ref = candidate.entry.ref
    return f"- {promoted_text(candidate.text)} <!-- memdeck {candidate.key} {ref} -->"


@dataclass(frozen=True)
class Preview:
    """The exact change an accept will make."""

    key: str
    path: Path
    base_hash: str  # sha256 of the file bytes the preview was computed from ("" = no file)
    before: str
    after: str
    inserted: tuple[str, ...]  # the new lines, in order (blank separators included)
    insert_line: int  # 1-based line of ``after`` where the inserted block starts
    section: str

    @property
    def diff(self) -> str:
        """A unified diff of the change, for display."""
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{self.path.name}",
                tofile=f"b/{self.path.name}",
                n=2,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "path": str(self.path),
            "section": self.section,
            "insertLine": self.insert_line,
            "inserted": list(self.inserted),
            "diff": self.diff,
        }


def _read_memory(path: Path) -> tuple[bytes, str]:
    """MEMORY.md's bytes, read from the checked descriptor (a symlink is not followed,
    so no outside text is copied into it) and never over the 10 MiB limit."""
    try:
        with open_checked(path, shown=path.name) as fh:
            data = fh.read_all(MAX_INDEX_BYTES, "promotion")
    except FileNotFoundError:
        return b"", ""
    except (PathRefused, FileTooLarge) as exc:
        raise PromotionError(f"{exc}; memdeck will not rewrite it") from None
    except OSError as exc:
        raise PromotionError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError:
        raise PromotionError(
            f"{path}: not valid UTF-8; memdeck will not rewrite it (fix the encoding first)"
        ) from None


def insert_under_section(before: str, line: str, section: str) -> tuple[str, tuple[str, ...], int]:
    """Pure: (new text, the inserted block of lines, 1-based line where the block starts).

    The block occupies lines ``start … start + len(block) − 1`` of the new text;
    deleting them (and the newline added to a last line that had none) gives
    back ``before``.
    """
    newline = "\r\n" if "\r\n" in before else "\n"
    lines = before.splitlines(keepends=True)
    heading_at = next(
        (i for i, ln in enumerate(lines) if ln.rstrip("\r\n").rstrip() == section), None
    )
    if heading_at is not None:
        end = len(lines)
        for j in range(heading_at + 1, len(lines)):
            stripped = lines[j].lstrip()
            if stripped.startswith("# ") or stripped.startswith("## "):
                end = j
                break
        last = heading_at
        for j in range(heading_at + 1, end):
            if lines[j].strip():
                last = j
        insert_at = last + 1
        prefix = lines[:insert_at]
        if prefix and not prefix[-1].endswith(("\n", "\r")):
            prefix[-1] = prefix[-1] + newline  # the file's last line had no newline
        block: tuple[str, ...] = (line,) if last != heading_at else ("", line)
        after = "".join(prefix + [ln + newline for ln in block] + lines[insert_at:])
        return after, block, insert_at + 1
    head = before
    if head and not head.endswith(("\n", "\r")):
        head += newline
    block = (section, "", line) if not before.strip() else ("", section, "", line)
    after = head + "".join(ln + newline for ln in block)
    return after, block, len(head.splitlines()) + 1


def preview(workspace: Path, candidate: Candidate, day: dt.date) -> Preview:
    path = memory_path(workspace)
    data, before = _read_memory(path)
    section = f"{SECTION_PREFIX}{day.isoformat()}"
    after, block, first = insert_under_section(before, promoted_line(candidate), section)
    return Preview(
        key=candidate.key,
        path=path,
        base_hash=sha256_bytes(data) if data or path.exists() else "",
        before=before,
        after=after,
        inserted=block,
        insert_line=first,
        section=section,
    )


def write_preview(p: Preview, *, read_only: str | None = None) -> None:
    """Write ``p.after`` if MEMORY.md is unchanged since the preview (else raise)."""
    if read_only:
        raise PromotionError(f"the workspace is read-only ({read_only}); nothing was written")
    data, _ = _read_memory(p.path)
    current = sha256_bytes(data) if data or p.path.exists() else ""
    if current != p.base_hash:
        raise PromotionConflict(
            f"{p.path.name} changed since the preview was shown; review the candidate again"
        )
    atomic_write(p.path, p.after.encode("utf-8"))


# --------------------------------------------------------------------------- decisions


def decisions_path(settings: Settings) -> Path:
    return settings.state_dir / "memory" / f"{settings.agent_id}.memdeck-promotions.json"


class DecisionStore:
    """Accepted/rejected candidate keys, persisted as JSON (atomic writes)."""

    def __init__(self, path: Path):
        self.path = path

    def load(self) -> dict[str, dict[str, Any]]:
        try:
            doc = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise PromotionError(f"{self.path}: unreadable decisions file ({exc})") from None
        items = doc.get("decisions") if isinstance(doc, dict) else None
        return {k: v for k, v in (items or {}).items() if isinstance(v, dict)}

    def verdicts(self) -> dict[str, str]:
        return {k: str(v.get("decision")) for k, v in self.load().items()}

    def record(self, candidate: Candidate, decision: str, *, by: str, score: float) -> None:
        items = self.load()
        items[candidate.key] = {
            "decision": decision,
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "by": by,
            "score": round(score, 6),
            "text": candidate.text,
            "source": candidate.entry.ref,
        }
        atomic_write_json(self.path, {"version": DECISIONS_VERSION, "decisions": items})


__all__ = [
    "DecisionStore",
    "Preview",
    "PromotionConflict",
    "PromotionError",
    "decisions_path",
    "insert_under_section",
    "memory_path",
    "preview",
    "promoted_line",
    "promoted_text",
    "write_preview",
]
