"""Session transcripts flattened and chunked as OpenClaw 2026.9.6 does (``openclaw`` profile).

A corpus of real-shaped JSONL transcripts (tests/openclaw/transcripts.py: the
turns OpenClaw drops — heartbeats, NO_REPLY in its shapes, HEARTBEAT_OK, cron
prompts, System envelopes, exec completions, inter-session and recalled-memory
turns, runtime-context blocks, a dreaming-narrative run — plus injected context
blocks, long messages past the 800-unit wrap, several scripts, CRLF, broken
lines) goes through the installed package's ``buildSessionEntry`` and its index
preparation for source ``sessions`` (node/session_files.mjs), and through
:mod:`engine.openclaw.sessions`. Path, text, line map and chunks (JSONL
lines, hash) must be identical for every transcript.
"""

from __future__ import annotations

from pathlib import Path

from engine.openclaw.sessions import (
    flatten_openclaw_transcript,
    session_chunks,
    session_path,
)
from tests.openclaw.transcripts import write_corpus

TRANSCRIPTS = 120


def test_transcripts_flatten_and_chunk_like_openclaw(openclaw, tmp_path: Path) -> None:
    # an agents/<id>/sessions folder outside OpenClaw's state dir: named like a real
    # agent's transcripts, without a session store to classify them
    folder = tmp_path / "elsewhere" / "agents" / "ops" / "sessions"
    files = write_corpus(folder, TRANSCRIPTS)
    theirs = openclaw.node_json("session_files.mjs", [str(f) for f in files])
    differ = []
    lines = chunks = wrapped = 0
    for path, their in zip(files, theirs, strict=True):
        assert their is not None, path
        flat = flatten_openclaw_transcript(path.read_bytes())
        mine_chunks = [[c.start_line, c.end_line, c.hash] for c in session_chunks(flat)]
        mine = {
            "path": session_path(path),
            "content": flat.text,
            "lineMap": list(flat.line_map),
            "chunks": mine_chunks,
        }
        if mine != their:
            differ.append((path.name, mine, their))
        lines += len(their["lineMap"])
        chunks += len(their["chunks"])
        wrapped += len(their["lineMap"]) - len(set(their["lineMap"]))
    assert not differ, _first_difference(differ)
    # the corpus is not trivial: thousands of lines, many chunks, wrapped messages
    assert lines > 2000 and chunks > 200 and wrapped > 100, (lines, chunks, wrapped)
    assert theirs[0]["path"] == f"sessions/ops/{files[0].name}"
    assert theirs[-1]["content"] == ""  # the dreaming-narrative run is left out whole


def _first_difference(differ: list) -> str:
    name, mine, their = differ[0]
    for key in ("path", "content", "lineMap", "chunks"):
        if mine[key] != their[key]:
            if key == "content":
                a, b = mine[key].split("\n"), their[key].split("\n")
                for i, (x, y) in enumerate(zip(a, b, strict=False)):
                    if x != y:
                        return f"{len(differ)} differ; {name} line {i + 1}:\n {x!r}\n {y!r}"
                return f"{len(differ)} differ; {name}: {len(a)} lines vs {len(b)}"
            ours, theirs = repr(mine[key])[:300], repr(their[key])[:300]
            return f"{len(differ)} differ; {name} {key}: ours {ours} theirs {theirs}"
    return f"{len(differ)} differ"


SECRETS = [
    "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "postgres://user:pa55word@db.example.com/x",
]


def test_secrets_are_masked_on_both_sides_memdeck_fully(openclaw, tmp_path: Path) -> None:
    """The one deliberate difference: OpenClaw masks a secret keeping its first 6
    and last 4 characters (``sk-pro…ABCD``), memdeck writes ``[REDACTED]`` and
    keeps no part of it. Everything around the secret is the same."""
    import json

    folder = tmp_path / "agents" / "ops" / "sessions"
    folder.mkdir(parents=True)
    path = folder / "secrets.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"type": "message", "message": {"role": "user", "content": s}})
            for s in SECRETS
        )
    )
    (their,) = openclaw.node_json("session_files.mjs", [str(path)])
    mine = flatten_openclaw_transcript(path.read_bytes())
    assert mine.line_map == tuple(their["lineMap"]) == (1, 2, 3)
    for secret, ours, theirs in zip(
        SECRETS, mine.text.split("\n"), their["content"].split("\n"), strict=True
    ):
        word = secret.split()[-1] if "://" not in secret else "pa55word"
        assert word not in ours and word not in theirs, (ours, theirs)
        assert "[REDACTED]" in ours and word[:6] not in ours
        assert ours.split("[REDACTED]")[0] == theirs[: len(ours.split("[REDACTED]")[0])]
