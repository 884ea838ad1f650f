"""Session transcripts as Markdown for qmd's ``sessions`` collection.

qmd indexes Markdown, not OpenClaw's JSONL, so with ``memory.qmd.sessions.
enabled`` every transcript ``<state>/agents/<id>/sessions/<name>.jsonl`` is
written out as ``<exportDir>/<name>.md``: one ``User: …`` / ``Assistant: …``
paragraph per message, flattened and with secrets redacted by the same rules
as the builtin index (``engine.memory.sessions``), so a key pasted into a chat never
reaches qmd's index either.

Exports are rewritten only when their text changes (qmd re-indexes by content
hash, and an untouched file keeps its mtime). Transcripts older than
``retentionDays`` (by modification time) are not exported and their old export
is deleted; so is the export of a transcript that no longer exists. Only files
carrying memdeck's marker line are ever deleted, so a hand-written note in a
custom ``exportDir`` is safe.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.config.paths import sessions_dir
from engine.config.settings import Settings
from engine.memory.sessions import transcript_line
from engine.workspace.files import atomic_write

MARKER = "<!-- memdeck session export"
_HEAD_BYTES = 512


@dataclass
class ExportReport:
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    expired: int = 0
    errors: list[str] = field(default_factory=list)


def transcript_markdown(name: str, data: bytes) -> str:
    """The Markdown export of one transcript (title, marker, one paragraph per turn)."""
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    turns = []
    for raw in data.split(b"\n"):
        if raw.strip():
            line = transcript_line(raw.decode("utf-8", errors="replace"))
            if line is not None:
                turns.append(line)
    head = [f"# Session {stem}", "", f"{MARKER} from {name}; secrets redacted -->", ""]
    return "\n".join([*head, "\n\n".join(turns)]).rstrip("\n") + "\n"


def _is_ours(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return False
    return MARKER.encode() in head


def export_sessions(
    settings: Settings,
    out_dir: Path,
    retention_days: float | None = None,
    *,
    now: float | None = None,
) -> ExportReport:
    """Bring *out_dir* in line with the agent's transcripts; never raises for one bad file."""
    report = ExportReport()
    now = time.time() if now is None else now
    source = sessions_dir(settings.state_dir, settings.agent_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    keep: set[str] = set()
    try:
        entries = [] if not source.is_dir() or source.is_symlink() else list(os.scandir(source))
    except OSError as exc:
        report.errors.append(f"{source}: {exc}")
        entries = []
    for entry in sorted(entries, key=lambda e: e.name):
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if retention_days and now - st.st_mtime > retention_days * 86400:
            report.expired += 1
            continue
        target = out_dir / (entry.name[: -len(".jsonl")] + ".md")
        keep.add(target.name)
        try:
            text = transcript_markdown(entry.name, Path(entry.path).read_bytes())
            data = text.encode("utf-8")
            try:
                if target.read_bytes() == data:
                    report.unchanged += 1
                    continue
            except FileNotFoundError:
                pass
            atomic_write(target, data)
            report.written.append(target.name)
        except OSError as exc:
            report.errors.append(f"{entry.name}: {exc}")
    for old in out_dir.glob("*.md"):
        if old.name not in keep and old.is_file() and not old.is_symlink() and _is_ours(old):
            with contextlib.suppress(OSError):
                old.unlink()
                report.removed.append(old.name)
    return report
