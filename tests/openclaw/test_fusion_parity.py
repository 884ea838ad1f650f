"""The profile's hybrid merge equals OpenClaw 2026.9.6's on 1,200 generated cases.

Identical candidate lists (vector hits with cosine scores, keyword hits with
bm25, lexical-boost and path scores, importance, dated and evergreen paths,
tied scores, shared snippets) go through OpenClaw's own
``MemoryIndexManager.mergeHybridResults`` (node/hybrid.mjs: 0.7/0.3 fusion,
decay at a pinned clock, importance, MMR λ 0.7 and its tie order) and through
:func:`engine.openclaw.profile.merge_hybrid`; order and scores must agree.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

from engine.openclaw.profile import Hit, ProfileChunk, merge_hybrid

CASES = 1200
WORDS = [
    "tea",
    "guitar",
    "hiking",
    "bob",
    "alice",
    "paris",
    "meeting",
    "project",
    "deadline",
    "chunk",
    "index",
]
PATHS = [
    "MEMORY.md",
    "USER.md",
    "memory/notes/ideas.md",
    "memory/2026-11-20.md",
    "memory/2026-10-02-trip.md",
    "memory/2025/2025-01-15.md",
]


class _Index:
    def __init__(self) -> None:
        self.chunks: dict[str, ProfileChunk] = {}


def _case(rng: random.Random, number: int) -> tuple[dict, _Index, list[Hit], dict[str, float]]:
    index = _Index()
    pool = []
    for i in range(rng.randint(1, 24)):
        path = rng.choice(PATHS)
        start = rng.randint(1, 40)
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9)))
        cid = f"c{number}-{i}"
        importance = rng.choice([None, None, None, 1, 5, 10])
        index.chunks[cid] = ProfileChunk(
            cid, path, "memory", start, start + rng.randint(0, 5), text, importance, 0.0
        )
        pool.append(cid)
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    vector = {
        cid: rng.choice(grid) if rng.random() < 0.3 else round(rng.uniform(-0.2, 1.0), 6)
        for cid in pool
        if rng.random() < 0.6
    }
    hits = []
    for cid in pool:
        if rng.random() < 0.5:
            continue
        body = rng.random() < 0.8
        text_score = round(rng.uniform(0.01, 0.9), 6) if body else 0.0
        path_score = round(rng.uniform(0.0, 0.6), 6) if rng.random() < 0.3 else 0.0
        score = min(1.0, text_score + rng.choice([0, 0.1, 0.3, 0.7])) if body else path_score
        hits.append(Hit(cid, score, text_score, path_score, body))
    now_ms = 1_795_000_000_000 + rng.randint(0, 10**9)

    def row(cid: str) -> dict:
        c = index.chunks[cid]
        out = {
            "id": cid,
            "path": c.path,
            "startLine": c.start_line,
            "endLine": c.end_line,
            "source": "memory",
            "snippet": c.text,
        }
        if c.importance is not None:
            out["importance"] = c.importance
        return out

    payload = {
        "nowMs": now_ms,
        "query": "what about tea",
        "vector": [{**row(cid), "score": s} for cid, s in vector.items()],
        "keyword": [
            {
                **row(h.id),
                "score": h.score,
                "textScore": h.text_score,
                "pathScore": h.path_score,
                "hasBodyMatch": h.has_body,
                "exactPathSpecificity": 0,
            }
            for h in hits
        ],
    }
    return payload, index, hits, vector


def test_hybrid_merge_matches_openclaw(openclaw, tmp_path):
    rng = random.Random(202609)
    cases = [_case(rng, n) for n in range(CASES)]
    request, answer = tmp_path / "cases.json", tmp_path / "answer.json"
    request.write_text(json.dumps([c[0] for c in cases]))
    proc = subprocess.run(
        [
            str(openclaw.node),
            str(Path(__file__).parent / "node" / "hybrid.mjs"),
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
    assert len(theirs) == CASES
    differ = []
    nonempty = 0
    for (payload, index, hits, vector), their in zip(cases, theirs, strict=True):
        ours = merge_hybrid(index, hits, vector, payload["nowMs"])
        mine = [(c.path, c.start_line, c.end_line, c.score) for c in ours]
        want = [(r["path"], r["startLine"], r["endLine"], r["score"]) for r in their]
        nonempty += bool(want)
        same = [m[:3] for m in mine] == [w[:3] for w in want] and all(
            abs(m[3] - w[3]) <= 1e-9 for m, w in zip(mine, want, strict=True)
        )
        if not same:
            differ.append((mine, want))
    assert nonempty > CASES * 0.9
    assert not differ, f"{len(differ)}/{CASES} differ; first: {differ[0]}"
