"""OpenClaw session transcripts as an index source (``sources: ["memory", "sessions"]``).

A transcript is ``<state>/agents/<agentId>/sessions/<id>.jsonl``: one JSON
object per line, of which only ``{"type": "message", "message": {"role":
"user"|"assistant", "content": ...}}`` lines carry conversation text. We flatten
those to ``User: …`` / ``Assistant: …`` lines so the ordinary Markdown chunker
and FTS/vector search work on them unchanged, and we keep a map from each
flattened line back to its JSONL line so a result cites the transcript line it
came from.

Transcripts are written to constantly while an agent runs. Re-embedding one on
every appended line would be wasteful, so a transcript that is already indexed
is handed to the indexer with its *stored* size and mtime (which makes the
indexer skip it) until its growth since then passes ``sync.sessions.deltaBytes``
or ``deltaMessages``. The stored file record is all the state this needs: the
record's size is exactly where the indexed version ended.

Transcripts are what users paste keys and passwords into, and the index is a
second copy that outlives the conversation, so secrets are redacted before the
text ever reaches the index or an embedding provider.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.config.paths import sessions_dir
from engine.config.settings import SessionSyncSettings, Settings
from engine.index.indexer import SourceFile
from engine.index.store import FileRecord
from engine.memory.redaction import REDACTED, redact_secrets

SOURCE = "sessions"
REL_PREFIX = "sessions/"
__all__ = ["REDACTED", "redact_secrets"]  # re-exported: qmd export and tests use them
ROLE_LABELS = {"user": "User", "assistant": "Assistant"}


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            item["text"]
            for item in content
            if isinstance(item, dict)
            and item.get("type") == "text"
            and isinstance(item.get("text"), str)
        ]
        return " ".join(parts)
    return ""


def transcript_line(raw: str) -> str | None:
    """The flattened ``User: …`` / ``Assistant: …`` line for one JSONL line, or None.

    Anything that is not a user/assistant message with text — other record
    types, tool calls, malformed JSON, a half-written last line — is skipped:
    a transcript is never rejected because of one bad line.
    """
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    label = ROLE_LABELS.get(role) if isinstance(role, str) else None
    if label is None:
        return None
    text = " ".join(_message_text(message.get("content")).split())
    if not text:
        return None
    text = redact_secrets(text)
    return f"{label}: {text}"


def flatten_transcript(data: bytes) -> tuple[str, list[int]]:
    """Transcript bytes → (flattened text, line_map).

    ``line_map[i]`` is the 1-based JSONL line of flattened line ``i + 1``; the
    indexer uses it to store chunk line ranges in transcript coordinates.
    """
    lines: list[str] = []
    line_map: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        flat = transcript_line(raw.decode("utf-8", errors="replace"))
        if flat is not None:
            lines.append(flat)
            line_map.append(number)
    return ("\n".join(lines) + "\n" if lines else ""), line_map


def _is_regular_file(entry: os.DirEntry[str]) -> bool:
    try:
        return stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return False


def below_thresholds(path: Path, rec: FileRecord, size: int, limits: SessionSyncSettings) -> bool:
    """True when a transcript grew since ``rec`` was indexed, but by less than both thresholds.

    Only the unindexed tail is read (less than ``deltaBytes`` of it), so this
    check stays cheap on every sync. A transcript of the same or a smaller size
    was rewritten rather than appended to: that is never deferred (the indexer's
    hash check decides).
    """
    grown = size - rec.size
    if grown <= 0 or grown >= limits.delta_bytes or limits.delta_messages <= 0:
        return False
    try:
        with open(path, "rb") as fh:
            fh.seek(rec.size)
            tail = fh.read(grown)
    except OSError:
        return False  # let the indexer try, and report the problem
    return tail.count(b"\n") < limits.delta_messages


def session_source_files(settings: Settings, known: Mapping[str, FileRecord]) -> list[SourceFile]:
    """The agent's transcripts as ``SourceFile``s with ``source="sessions"``.

    ``known`` is the index's file table. A transcript indexed before whose
    growth is still under the thresholds is reported with its stored size and
    mtime so the indexer leaves it alone; new, shrunk, failed or sufficiently
    grown transcripts are reported as they are on disk.
    """
    directory = sessions_dir(settings.state_dir, settings.agent_id)
    try:
        if stat.S_ISLNK(os.lstat(directory).st_mode) or not directory.is_dir():
            return []
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    limits = settings.memory_search.sync.sessions
    out: list[SourceFile] = []
    for entry in entries:
        if not entry.name.endswith(".jsonl") or not _is_regular_file(entry):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        path = Path(entry.path)
        rel = REL_PREFIX + entry.name
        size, mtime = st.st_size, st.st_mtime
        rec = known.get(rel)
        if (
            rec is not None
            and rec.source == SOURCE
            and rec.error is None
            and rec.hash
            and below_thresholds(path, rec, size, limits)
        ):
            size, mtime = rec.size, rec.mtime
        out.append(SourceFile(rel, path, SOURCE, size, mtime, read=flatten_transcript))
    return out
