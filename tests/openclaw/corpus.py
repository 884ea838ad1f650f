"""Inputs shared by the OpenClaw differential tests: generated Markdown, the
LoCoMo conversations as workspaces, and the seed documents as a workspace."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from tests.bench.locomo import build_conversation

BENCH = Path(
    os.environ.get("MEMDECK_BENCH_DATA") or Path(__file__).resolve().parents[3] / "shared" / "bench"
)
if not BENCH.is_dir() and Path("/work/shared/bench").is_dir():  # a worktree beside the checkout
    BENCH = Path("/work/shared/bench")
SEEDS = BENCH.parent / "seeds"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"benchmark data absent at {path} (set MEMDECK_BENCH_DATA)")
    return path


_WORDS = [
    "alice",
    "bob",
    "tea",
    "guitar",
    "hiking",
    "project",
    "deadline",
    "meeting",
    "berlin",
    "paris",
    "memory",
    "search",
    "index",
    "vector",
    "chunk",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "with",
    "as",
    "at",
    "by",
]


def _piece(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))
    if kind < 0.55:
        return "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(1, 40)))
    if kind < 0.60:
        return "".join(chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(rng.randint(1, 20)))
    if kind < 0.65:
        return "".join(chr(rng.randint(0x1F600, 0x1F64F)) for _ in range(rng.randint(1, 10)))
    if kind < 0.70:
        return "".join("e\u0301" if rng.random() < 0.5 else "a\u0308\u0323" for _ in range(9))
    if kind < 0.74:
        return "".join(chr(rng.randint(0x20000, 0x2A6DF)) for _ in range(rng.randint(1, 12)))
    if kind < 0.77:
        return "".join(chr(rng.randint(0x3400, 0x4DBF)) for _ in range(rng.randint(1, 12)))
    if kind < 0.80:
        return "ｆｕｌｌ・ｗｉｄｔｈ·中ˇ" + chr(rng.choice([0x1D360, 0x16FE0, 0x1F200, 0x30000]))
    if kind < 0.84:
        return "\u00a0\ufeff\u3000 spaces\t"
    if kind < 0.88:
        return f"<!-- {rng.choice(['importance', 'trigger', 'project', 'note'])}: x -->"
    if kind < 0.92:
        return "👩‍👩‍👧 🇩🇪 ✈️"
    return "".join(rng.choice("ab c") for _ in range(rng.randint(1, 9)))


def _line(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.12:
        return ""
    if r < 0.15:
        return rng.choice([" ", "\t", "\u00a0", "\u3000"])
    body = " ".join(_piece(rng) for _ in range(rng.randint(1, 4)))
    if r < 0.22:
        body = body * rng.randint(4, 30)  # a long line to cut
    prefix = ""
    p = rng.random()
    if p < 0.25:
        prefix = "- "
    elif p < 0.35:
        prefix = "#" * rng.randint(1, 7) + rng.choice([" ", "", "\t"])
    elif p < 0.38:
        prefix = "-"
    return prefix + body


def generated_files(count: int = 2000, seed: int = 14) -> list[tuple[str, str]]:
    """(path, content) pairs: MEMORY.md/USER.md (per-entry) and memory/ notes."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for number in range(count):
        lines = [_line(rng) for _ in range(rng.randint(0, 40))]
        newline = "\r\n" if rng.random() < 0.15 else "\n"
        text = newline.join(lines) + (newline if rng.random() < 0.7 else "")
        if rng.random() < 0.03:
            text = "\ufeff" + text
        r = rng.random()
        rel = "MEMORY.md" if r < 0.2 else "USER.md" if r < 0.3 else f"memory/gen-{number}.md"
        out.append((rel, text))
    return out


def locomo_workspaces() -> dict[int, dict[str, str]]:
    """Conversation index → {path: text} (the benchmark protocol's workspaces)."""
    data = json.loads(_require(BENCH / "locomo" / "locomo10.json").read_text())
    return {i: build_conversation(i, sample).files for i, sample in enumerate(data)}


def locomo_questions(conv: int) -> list[str]:
    data = json.loads(_require(BENCH / "locomo" / "locomo10.json").read_text())
    return [q.text for q in build_conversation(conv, data[conv]).questions]


def seed_workspace() -> dict[str, str]:
    """The seed documents as a workspace: MEMORY.md, USER.md and notes in memory/."""
    seeds = sorted(_require(SEEDS).glob("*.txt"))
    files: dict[str, str] = {}
    for index, path in enumerate(seeds):
        text = path.read_text(encoding="utf-8")
        rel = {0: "MEMORY.md", 1: "USER.md"}.get(index, f"memory/{path.stem}.md")
        files[rel] = text
    return files


def write_workspace(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return root


def undated_workspace(conv: int = 1) -> dict[str, str]:
    """A LoCoMo conversation whose session files carry no date in their names
    (evergreen for OpenClaw: no decay), plus a curated MEMORY.md with headings,
    bullets and importance annotations."""
    files = locomo_workspaces()[conv]
    out: dict[str, str] = {}
    for number, (rel, text) in enumerate(sorted(files.items())):
        if rel == "MEMORY.md":
            continue
        out[f"memory/notes/session-{number:02d}.md"] = text
    first = files["MEMORY.md"].strip()
    out["MEMORY.md"] = (
        f"# People\n- {first}\n- Both like painting and camping <!-- importance: 9 -->\n\n"
        "## Work\n- Counseling and mental health matter a lot <!-- importance: 3 -->\n"
        "- Plans for adoption agencies\n"
    )
    return out
