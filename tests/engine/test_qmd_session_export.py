"""Transcripts exported as sanitised Markdown for qmd's sessions collection."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from engine.config.loader import load_settings
from engine.qmd.session_export import MARKER, export_sessions, transcript_markdown

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"


def _line(role: str, content: object) -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": content}})


TRANSCRIPT = "\n".join(
    [
        json.dumps({"type": "session", "id": "s1"}),
        _line("user", f"my key is {KEY}, and   the deploy\n target is hetzner"),
        "{broken json",
        _line("assistant", [{"type": "text", "text": "Noted: deploy to Hetzner."}]),
        _line("tool", "ignored"),
        _line("user", "postgres://admin:hunter2@db.local/app is the database"),
    ]
)


def test_markdown_is_flattened_and_redacted():
    md = transcript_markdown("s1.jsonl", TRANSCRIPT.encode())
    assert md.startswith("# Session s1\n")
    assert MARKER in md
    assert KEY not in md and "hunter2" not in md
    body = md.split("-->\n", 1)[1].strip().split("\n\n")
    assert body == [
        "User: my key is [REDACTED], and the deploy target is hetzner",
        "Assistant: Noted: deploy to Hetzner.",
        "User: postgres://admin:[REDACTED]@db.local/app is the database",
    ]


def _settings(tmp_path: Path):
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(tmp_path)}
    return load_settings(workspace=tmp_path / "ws", env=env), sessions


def test_export_writes_skips_unchanged_expires_and_removes_only_its_own(tmp_path):
    settings, sessions = _settings(tmp_path)
    out = tmp_path / "export"
    (sessions / "a.jsonl").write_text(TRANSCRIPT, encoding="utf-8")
    (sessions / "old.jsonl").write_text(_line("user", "ancient history"), encoding="utf-8")
    old_time = time.time() - 40 * 86400
    os.utime(sessions / "old.jsonl", (old_time, old_time))
    (sessions / "notes.txt").write_text("not a transcript", encoding="utf-8")
    (sessions / "link.jsonl").symlink_to(sessions / "a.jsonl")

    report = export_sessions(settings, out, retention_days=30)
    assert report.written == ["a.md"]
    assert report.expired == 1
    assert sorted(p.name for p in out.iterdir()) == ["a.md"]

    mtime = (out / "a.md").stat().st_mtime_ns
    report = export_sessions(settings, out, retention_days=30)
    assert report.written == [] and report.unchanged == 1
    assert (out / "a.md").stat().st_mtime_ns == mtime  # untouched: qmd sees no change

    # without retention the old transcript comes back; then it vanishes and so does its export
    assert export_sessions(settings, out).written == ["old.md"]
    (out / "mine.md").write_text("# my own note in the export dir\n", encoding="utf-8")
    (sessions / "old.jsonl").unlink()
    report = export_sessions(settings, out)
    assert report.removed == ["old.md"]
    assert sorted(p.name for p in out.iterdir()) == ["a.md", "mine.md"]


def test_no_transcripts_folder_is_not_an_error(tmp_path):
    state = tmp_path / "state"
    env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(tmp_path)}
    settings = load_settings(workspace=tmp_path / "ws", env=env)
    report = export_sessions(settings, tmp_path / "export")
    assert (report.written, report.errors) == ([], [])
