"""The ``openclaw`` profile's chunks equal OpenClaw 2026.9.6's, chunk for chunk.

(path, start line, end line, SHA-256 of the text) must be identical on:
2,000 generated Markdown files (CJK, Hangul, Ext-B, emoji, combining marks,
CRLF, BOM, long lines, bullets, headings, annotation comments) and every file
of the ten LoCoMo workspaces plus the seed documents, through OpenClaw's own
per-file index preparation. (test_search_parity.py also compares the chunks
``openclaw memory index`` writes for five whole workspaces.)
"""

from __future__ import annotations

from engine.openclaw.chunking import chunk_memory_file
from tests.openclaw.corpus import generated_files, locomo_workspaces, seed_workspace


def _ours(rel: str, text: str) -> list[tuple[int, int, str]]:
    return [(c.start_line, c.end_line, c.hash) for c in chunk_memory_file(rel, text)]


def _compare(files: list[tuple[str, str]], theirs: list[list[list]]) -> list[str]:
    assert len(theirs) == len(files)
    diffs = []
    for (rel, text), expected in zip(files, theirs, strict=True):
        ours = _ours(rel, text)
        if ours != [tuple(x) for x in expected]:
            diffs.append(f"{rel} ({len(text)} chars): ours {ours[:3]}… theirs {expected[:3]}…")
    return diffs


def test_generated_files_chunk_identically(openclaw):
    files = generated_files(2000)
    theirs = openclaw.node_json(
        "chunk_files.mjs", [{"path": rel, "content": text} for rel, text in files]
    )
    diffs = _compare(files, theirs)
    total = sum(len(x) for x in theirs)
    assert total > 5_000  # the corpus really produces many chunks
    assert not diffs, f"{len(diffs)}/{len(files)} files differ:\n" + "\n".join(diffs[:10])


def test_locomo_and_seed_files_chunk_identically(openclaw):
    files = [(rel, text) for ws in locomo_workspaces().values() for rel, text in sorted(ws.items())]
    files += sorted(seed_workspace().items())
    assert len(files) > 280
    theirs = openclaw.node_json(
        "chunk_files.mjs", [{"path": rel, "content": text} for rel, text in files]
    )
    diffs = _compare(files, theirs)
    assert not diffs, f"{len(diffs)}/{len(files)} files differ:\n" + "\n".join(diffs[:10])
