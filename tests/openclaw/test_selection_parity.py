"""FTS-only selection against OpenClaw 2026.9.6's own ``finalizeKeywordOnlyResults``.

Generated keyword-hit lists (body and path-only hits, dated, undated and
evergreen paths, importance, tied scores) go through the package's FTS-only
ranking on a stand-in manager (node/keyword_only.mjs: decay at a pinned clock,
importance, its order, minScore) and through
:func:`engine.openclaw.profile.keyword_only_outcome`, at minScores from
0 to 1 — so many cases have nothing passing minScore, where OpenClaw drops the
floor to 0 and returns the best hits anyway. Lists and scores must agree. (The
hybrid top-up is checked end to end, with OpenClaw's own search, by
test_hybrid_parity.py.)
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from pathlib import Path

from engine.openclaw.profile import Hit, ProfileChunk, keyword_only_outcome

CASES = 1000
WORDS = ["tea", "guitar", "hiking", "bob", "alice", "paris", "meeting", "project"]
PATHS = [
    "MEMORY.md",
    "USER.md",
    "memory/notes/ideas.md",
    "memory/2026-11-20.md",
    "memory/2026-10-02-trip.md",
    "memory/2025/2025-01-15.md",
    "memory/2026-11-22.md",
]


class _Index:
    def __init__(self) -> None:
        self.chunks: dict[str, ProfileChunk] = {}


def _case(rng: random.Random, number: int) -> tuple[dict, _Index, list[Hit]]:
    index = _Index()
    hits = []
    rows = []
    for i in range(rng.randint(0, 20)):
        path = rng.choice(PATHS)
        start = rng.choice([1, 1, 5, 9, rng.randint(1, 60)])
        cid = hashlib.sha256(f"{number}:{i}".encode()).hexdigest()
        importance = rng.choice([None, None, None, 1, 5, 10]) if path == "MEMORY.md" else None
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))
        index.chunks[cid] = ProfileChunk(
            cid, path, "memory", start, start + rng.randint(0, 4), text, importance, 0.0
        )
        body = rng.random() < 0.8
        text_score = rng.choice([0.2, 0.5, round(rng.uniform(0.01, 0.95), 6)]) if body else 0.0
        path_score = round(rng.uniform(0.0, 0.6), 6) if rng.random() < 0.3 else 0.0
        score = min(1.0, text_score + rng.choice([0, 0.1, 0.3])) if body else path_score
        if not body and path_score == 0:
            path_score = score = 0.25
        hits.append(Hit(cid, score, text_score, path_score, body))
        row = {
            "id": cid,
            "path": path,
            "startLine": start,
            "endLine": index.chunks[cid].end_line,
            "source": "memory",
            "snippet": text,
            "score": score,
            "textScore": text_score,
            "pathScore": path_score,
            "hasBodyMatch": body,
            "exactPathSpecificity": 0,
        }
        if importance is not None:
            row["importance"] = importance
        rows.append(row)
    payload = {
        "nowMs": 1_795_000_000_000 + rng.randint(0, 10**9),
        "minScore": rng.choice([0.0, 0.1, 0.35, 0.35, 0.5, 0.8, 0.95, 1.0]),
        "maxResults": rng.choice([1, 3, 6, 6, 10]),
        "keyword": rows,
    }
    return payload, index, hits


def test_keyword_only_selection_matches_openclaw(openclaw, tmp_path: Path) -> None:
    rng = random.Random(20269)
    cases = [_case(rng, n) for n in range(CASES)]
    request, answer = tmp_path / "cases.json", tmp_path / "answer.json"
    request.write_text(json.dumps([c[0] for c in cases]))
    proc = subprocess.run(
        [
            str(openclaw.node),
            str(Path(__file__).parent / "node" / "keyword_only.mjs"),
            str(request),
            str(answer),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "OPENCLAW_PKG": str(openclaw.package),
        },
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(answer.read_text())
    differ, floors, nonempty = [], 0, 0
    for (payload, index, hits), their in zip(cases, theirs, strict=True):
        outcome = keyword_only_outcome(
            index, "q", hits, payload["nowMs"], payload["maxResults"], payload["minScore"]
        )
        mine = [(c.path, c.start_line, c.end_line, c.score) for c in outcome.results]
        want = [(r["path"], r["startLine"], r["endLine"], r["score"]) for r in their]
        floors += outcome.floor_dropped and bool(want)
        nonempty += bool(want)
        same = [m[:3] for m in mine] == [w[:3] for w in want] and all(
            abs(m[3] - w[3]) <= 1e-9 for m, w in zip(mine, want, strict=True)
        )
        if not same:
            differ.append((payload["minScore"], mine, want))
    assert nonempty > CASES * 0.8
    assert floors > CASES * 0.2, floors  # nothing passed minScore, yet hits came back
    assert not differ, f"{len(differ)}/{CASES} differ; first: {differ[0]}"
