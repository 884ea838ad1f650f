"""Session transcripts: flattening, redaction, line mapping and re-index thresholds."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.config.paths import sessions_dir
from engine.config.settings import SessionSyncSettings, SyncSettings
from engine.core import Engine
from engine.memory.sessions import (
    REDACTED,
    flatten_transcript,
    redact_secrets,
    session_source_files,
    transcript_line,
)
from tests.engine_fixtures import write


def msg(role: str, content: Any, **extra: Any) -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": content}, **extra})


def transcript_path(state_dir: Path, name: str = "s1.jsonl") -> Path:
    d = sessions_dir(state_dir, "main")
    d.mkdir(parents=True, exist_ok=True)
    return d / name


def append(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


# -- flattening ---------------------------------------------------------------------
def test_flatten_keeps_user_and_assistant_text_and_maps_lines() -> None:
    lines = [
        json.dumps({"type": "session", "id": "abc", "cwd": "/tmp"}),
        msg("user", "  Book the\n train   to\tPorto  ", timestamp="2026-03-01T10:00:00Z"),
        "{this is not json",
        msg(
            "assistant", [{"type": "text", "text": "Booked."}, {"type": "text", "text": "Seat 42."}]
        ),
        msg("assistant", [{"type": "toolCall", "name": "bash", "arguments": {}}]),
        msg("toolResult", "exit 0"),
        msg("system", "you are helpful"),
        "",
        "[1, 2, 3]",
        json.dumps({"type": "message", "message": "not an object"}),
        msg("user", [{"type": "image", "data": "..."}, {"type": "text", "text": "and this?"}]),
        msg("user", None),
        '{"type": "message", "message": {"role": "user", "content": "half writ',
    ]
    text, line_map = flatten_transcript("\n".join(lines).encode())
    assert text.splitlines() == [
        "User: Book the train to Porto",
        "Assistant: Booked. Seat 42.",
        "User: and this?",
    ]
    assert line_map == [2, 4, 11]


def test_flatten_survives_invalid_utf8_and_empty_input() -> None:
    data = msg("user", "caf").encode() + b"\xe9\n" + b"\xff\xfe\n" + msg("user", "ok").encode()
    text, line_map = flatten_transcript(data)
    assert text.splitlines()[-1] == "User: ok" and line_map[-1] == 3
    assert flatten_transcript(b"") == ("", [])
    assert transcript_line("null") is None


# -- redaction ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "kept", "gone"),
    [
        ("my key is sk-proj-Abcdefghijklmnop1234567890 ok", "my key is", "Abcdefgh"),
        ("use AIzaSyA1234567890abcdefghijklmnopqrstuv", "use", "SyA123"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "token", "ghp_"),
        ("slack xoxb-1234567890-abcdefghij", "slack", "xoxb-"),
        ("aws AKIAIOSFODNN7EXAMPLE", "aws", "AKIAIOS"),
        ("curl -H 'Authorization: Bearer abc123def456ghi789'", "Authorization: Bearer", "abc123"),
        ("header Authorization: Basic dXNlcjpwYXNzd29yZA==", "Basic", "dXNlcj"),
        ("send Bearer eyJhbGciOi.eyJzdWIiOiIx.c2lnbmF0dXJl", "Bearer", "eyJhbG"),
        ("postgres://admin:s3cr3t!@db.example.com/app", "postgres://admin:", "s3cr3t"),
        ("password=hunter2 and db_password: swordfish", "db_password:", "hunter2"),
        ('{"api_key": "abc123xyz"}', '"api_key"', "abc123xyz"),
        ("set token=abcd1234efgh now", "token=", "abcd1234"),
        ("-----BEGIN RSA PRIVATE KEY----- MIIEow -----END RSA PRIVATE KEY-----", "", "MIIEow"),
    ],
)
def test_secrets_are_redacted(raw: str, kept: str, gone: str) -> None:
    out = redact_secrets(raw)
    assert REDACTED in out and kept in out and gone not in out


def test_ordinary_prose_is_not_redacted() -> None:
    prose = (
        "The token limit is 400 tokens; basic authentication and bearer bonds; "
        "the key: value pairs; secret: none; see https://example.com/a:b"
    )
    assert redact_secrets(prose) == prose


def test_secrets_never_reach_the_index(make_engine, state_dir: Path) -> None:
    path = transcript_path(state_dir)
    append(path, [msg("user", "deploy with sk-live-Zq8w7e6r5t4y3u2i1o0p and password=tulip42")])
    eng = make_engine(provider=None, session_memory=True, sources=("memory", "sessions"))
    eng.sync()
    texts = [r[0] for r in eng.store.db.execute("select text from chunks")]
    assert texts and all("Zq8w7e6r" not in t and "tulip42" not in t for t in texts)
    assert "[REDACTED]" in texts[0]


# -- indexing and thresholds ----------------------------------------------------------
@pytest.fixture
def session_engine(make_engine) -> Callable[..., Engine]:
    def make(delta_bytes: int = 100_000, delta_messages: int = 50) -> Engine:
        return make_engine(
            provider=None,
            session_memory=True,
            sources=("memory", "sessions"),
            sync=SyncSettings(sessions=SessionSyncSettings(delta_bytes, delta_messages)),
        )

    return make


def found(eng: Engine, word: str) -> list[Any]:
    return eng.search(word, eng.default_options().with_(min_score=0)).results


def test_session_results_carry_source_and_jsonl_lines(session_engine, state_dir, workspace_dir):
    write(workspace_dir, "MEMORY.md", "Dana likes flat white.\n")
    path = transcript_path(state_dir)
    append(
        path,
        [
            json.dumps({"type": "session", "version": 3}),
            msg("user", "Where is the quokka sanctuary?"),
            json.dumps({"type": "custom", "data": {}}),
            msg("assistant", [{"type": "text", "text": "Rottnest Island has quokkas."}]),
        ],
    )
    eng = session_engine()
    eng.sync()
    hits = found(eng, "quokka")
    assert [(h.path, h.source) for h in hits] == [("sessions/s1.jsonl", "sessions")]
    assert (hits[0].start_line, hits[0].end_line) == (2, 4)
    memory_only = eng.default_options().with_(min_score=0, sources=("memory",))
    assert eng.search("quokka", memory_only).results == []
    assert [h.source for h in found(eng, "flat white")] == ["memory"]


def test_sessions_are_ignored_unless_enabled(make_engine, state_dir) -> None:
    append(transcript_path(state_dir), [msg("user", "wombat")])
    eng = make_engine(provider=None)  # sessionMemory off
    eng.sync()
    assert "sessions/s1.jsonl" not in eng.store.files()


def test_transcript_is_reindexed_only_past_delta_messages(session_engine, state_dir) -> None:
    path = transcript_path(state_dir)
    append(path, [msg("user", "first message about walruses")])
    eng = session_engine(delta_bytes=1_000_000, delta_messages=5)
    eng.sync()
    append(path, [msg("user", f"note {i} mentions pelicans") for i in range(4)])
    below = eng.sync()
    assert below.files_indexed == 0 and not found(eng, "pelicans")
    rec = eng.store.files()["sessions/s1.jsonl"]
    assert rec.size < path.stat().st_size  # the stored size is the indexed version's
    append(path, ["{broken line"])  # a bad line still counts as growth
    past = eng.sync()
    assert past.files_indexed == 1 and found(eng, "pelicans")
    assert eng.store.files()["sessions/s1.jsonl"].size == path.stat().st_size


def test_transcript_is_reindexed_past_delta_bytes(session_engine, state_dir) -> None:
    path = transcript_path(state_dir)
    append(path, [msg("user", "hello")])
    eng = session_engine(delta_bytes=2000, delta_messages=1000)
    eng.sync()
    append(path, [msg("assistant", "short reply about otters")])
    assert eng.sync().files_indexed == 0 and not found(eng, "otters")
    append(path, [msg("assistant", "long reply " + "lorem ipsum " * 200)])
    assert eng.sync().files_indexed == 1 and found(eng, "otters")


def test_rewritten_or_new_transcripts_are_indexed_at_once(session_engine, state_dir) -> None:
    path = transcript_path(state_dir)
    append(path, [msg("user", "alpha " * 50)])
    eng = session_engine(delta_bytes=10_000, delta_messages=10)
    eng.sync()
    path.write_text(msg("user", "rewritten about herons") + "\n", encoding="utf-8")  # shrank
    assert eng.sync().files_indexed == 1 and found(eng, "herons")
    other = transcript_path(state_dir, "s2.jsonl")
    append(other, [msg("user", "a brand new session about ibises")])
    assert eng.sync().files_indexed == 1 and found(eng, "ibises")
    other.unlink()
    assert eng.sync().files_removed == 1 and not found(eng, "ibises")


def test_source_files_skip_symlinks_and_other_files(make_settings, state_dir, tmp_path) -> None:
    d = sessions_dir(state_dir, "main")
    d.mkdir(parents=True)
    append(d / "real.jsonl", [msg("user", "x")])
    (d / "sessions.json").write_text("{}")
    (d / "old.jsonl.deleted.2026").write_text("")
    outside = tmp_path / "outside.jsonl"
    append(outside, [msg("user", "y")])
    os.symlink(outside, d / "link.jsonl")
    (d / "dir.jsonl").mkdir()
    settings = make_settings(session_memory=True, sources=("memory", "sessions"))
    files = session_source_files(settings, {})
    assert [(f.rel, f.source) for f in files] == [("sessions/real.jsonl", "sessions")]
    (d / "real.jsonl").unlink()
    assert session_source_files(settings, {}) == []


def test_missing_sessions_folder_is_empty(make_settings) -> None:
    assert session_source_files(make_settings(), {}) == []


def test_a_large_transcript_is_judged_by_its_text_not_its_jsonl(session_engine, state_dir) -> None:
    path = transcript_path(state_dir)
    tool_output = json.dumps({"type": "message", "message": {"role": "toolResult",
                              "content": "x" * 1_000_000}})  # fmt: skip
    append(path, [msg("user", "remember the capybara"), *[tool_output] * 11])
    assert path.stat().st_size > 10 * 1024 * 1024
    eng = session_engine()
    done = eng.sync()
    assert done.errors == () and eng.store.files()["sessions/s1.jsonl"].error is None
    assert [h.start_line for h in found(eng, "capybara")] == [1]
