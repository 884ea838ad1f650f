"""memory_get against OpenClaw 2026.9.6's ``readAgentMemoryFile`` (node/read_file.mjs).

Pages of MEMORY.md and memory/ notes must carry the same lines, range and
continuation (``truncated``/``nextFrom``); the notice's wording is memdeck's own.
Known differences (README, "The openclaw ranking profile"): OpenClaw also reads
USER.md and DREAMS.md and answers a missing file with ``status: "not_found"``;
memdeck refuses the first two and reports the third as an error.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from engine.config.loader import load_settings
from engine.core import Engine
from engine.tools import memory_get
from tests.openclaw.corpus import write_workspace

FILES = {
    "MEMORY.md": "# People\n- Alice likes tea\n- Bob plays guitar\n\n## Work\n" + "x\n" * 300,
    "memory/2026-01-01.md": "".join(f"line {i}\n" for i in range(1, 400)),
    "memory/notes/café.md": "crème brûlée\nsecond\n",
}
READS = [
    {"relPath": "MEMORY.md"},
    {"relPath": "MEMORY.md", "from": 3, "lines": 2},
    {"relPath": "memory/2026-01-01.md"},
    {"relPath": "memory/2026-01-01.md", "from": 150, "lines": 10},
    {"relPath": "memory/2026-01-01.md", "from": 395, "lines": 10},
    {"relPath": "memory/notes/café.md", "from": 2},
]


def _body(text: str) -> str:
    """The page's lines without the continuation notice (its wording differs)."""
    return text.split("\n\n[", 1)[0] if text.rstrip().endswith("]") else text


def test_memory_get_pages_like_openclaw(openclaw, tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", FILES)
    request, answer = tmp_path / "reads.json", tmp_path / "out.json"
    request.write_text(json.dumps({"workspace": str(workspace), "reads": READS}))
    proc = subprocess.run(
        [
            str(openclaw.node),
            str(Path(__file__).parent / "node" / "read_file.mjs"),
            str(request),
            str(answer),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "OPENCLAW_STATE_DIR": str(tmp_path / "state"),
            "OPENCLAW_PKG": str(openclaw.package),
        },
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(answer.read_text())
    env = {"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(tmp_path / "memdeck-state")}
    engine = Engine(load_settings(workspace=workspace, env=env), provider=None, read_only=True)
    try:
        for read, their in zip(READS, theirs, strict=True):
            assert their.get("status") == "ok", their
            mine = memory_get(engine, read["relPath"], read.get("from"), read.get("lines"))
            assert _body(mine["text"]) == _body(their["text"]), read
            for key in ("path", "from", "lines", "truncated", "nextFrom"):
                assert mine.get(key) == their.get(key), (read, key, mine, their)
    finally:
        engine.close()
