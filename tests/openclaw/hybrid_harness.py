"""Hybrid ``memory_search`` through OpenClaw 2026.9.6 and the ``openclaw`` profile, end to end.

Both sides embed through the same loopback HTTP server speaking OpenAI's
``/v1/embeddings`` wire format (tests/provider_servers.py: deterministic bags
of hashed words, so texts sharing words are close). OpenClaw indexes every
workspace with ``openclaw memory index`` (its own chunking, its own vector
store and KNN) and answers with the CLI's ``memory search --json`` command
(node/search_cli.mjs, clock pinned per query); memdeck builds its index with
the same configuration (``memory.search.provider: "openai"``, ``remote.baseUrl``
the server) and answers with ``Engine.search_openclaw`` — in the same state
folder, so the check that OpenClaw's own index is never written is a real one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from engine.config.loader import load_settings
from engine.core import Engine
from tests.openclaw.corpus import write_workspace
from tests.openclaw.reference import Reference
from tests.openclaw.search_harness import search_with_openclaw
from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer

MODEL = "text-embedding-3-small"
Row = tuple[str, int, int, float]
_WORD = re.compile(r"\w+")


class SparseServer(ProviderServer):
    """Bags of hashed words without the constant component: texts that share no
    word are orthogonal (cosine exactly 0), as a keyword hit found only through
    its path or an accent-folded word is for the query — the hits OpenClaw tops
    the list up with below minScore."""

    def _vec(self, text: str) -> list[float]:
        v = [0.0] * self.dims
        words = _WORD.findall(text.lower())
        for word in words:
            h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")
            v[h % self.dims] += 1.0
        if not words:
            v[0] = 1.0
        return v


@dataclass
class HybridCase:
    """One workspace (an OpenClaw agent), its queries and the pinned clock."""

    agent: str
    files: dict[str, str]
    queries: list[str]
    now_ms: int


@dataclass
class Comparison:
    agent: str
    query: str
    min_score: float
    ours: list[Row]
    theirs: list[Row]
    mode: str = ""
    topped_up: int = 0  # of our results, how many came from the top-up
    floor: bool = False  # nothing passed minScore (the floor dropped to 0)
    vector_only: int = 0  # results with no keyword side

    @property
    def same_list(self) -> bool:
        return [r[:3] for r in self.ours] == [r[:3] for r in self.theirs]

    @property
    def same_scores(self) -> bool:
        return self.same_list and all(
            abs(a[3] - b[3]) <= 1e-6 for a, b in zip(self.ours, self.theirs, strict=True)
        )

    @property
    def same_top(self) -> bool:
        return [r[:3] for r in self.ours[:1]] == [r[:3] for r in self.theirs[:1]]


@dataclass
class HybridRun:
    comparisons: list[Comparison] = field(default_factory=list)
    openclaw_index_untouched: bool = False
    embed_requests: int = 0

    def summary(self) -> dict[str, object]:
        cs = self.comparisons
        return {
            "queries": len(cs),
            "same_lists": sum(c.same_list for c in cs),
            "same_scores": sum(c.same_scores for c in cs),
            "same_top1": sum(c.same_top for c in cs),
            "hybrid_mode": sum(c.mode == "hybrid" for c in cs),
            "with_top_up": sum(c.topped_up > 0 for c in cs),
            "topped_up_results": sum(c.topped_up for c in cs),
            "floor_dropped": sum(c.floor for c in cs),
            "openclaw_index_untouched": self.openclaw_index_untouched,
        }

    def diffs(self, limit: int = 5) -> str:
        out = []
        for c in self.comparisons:
            if not c.same_scores:
                out.append(
                    f"{c.agent} minScore {c.min_score} {c.query!r}:\n  ours   {c.ours}\n"
                    f"  theirs {c.theirs}"
                )
        return "\n".join(out[:limit])


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _openclaw_index_files(state: Path) -> list[Path]:
    return sorted(state.glob("agents/*/agent/openclaw-agent.sqlite*"))


def run_hybrid(
    ref: Reference,
    home: Path,
    cases: list[HybridCase],
    min_scores: tuple[float, ...],
    *,
    dims: int = 64,
    max_results: int = 6,
    sparse: bool = False,
) -> HybridRun:
    """Index and search every case with OpenClaw and with the profile, compare.
    *sparse*: embed with :class:`SparseServer` (orthogonal texts score 0)."""
    home.mkdir(parents=True, exist_ok=True)
    state = home / "state"
    workspaces = {c.agent: write_workspace(home / "ws" / c.agent, c.files) for c in cases}
    run = HybridRun()
    kind = SparseServer if sparse else ProviderServer
    with kind(dims=dims, api_key=TEST_KEY) as server:
        config = home / "openclaw.json"
        block = {
            "provider": "openai",
            "model": MODEL,
            "remote": {"baseUrl": f"{server.url}/v1", "apiKey": TEST_KEY},
        }
        agents = [{"id": agent, "workspace": str(ws)} for agent, ws in workspaces.items()]
        config.write_text(
            json.dumps(
                {
                    "agents": {"ownership": "explicit", "list": agents},
                    "memory": {"search": block},
                }
            )
        )
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "OPENCLAW_HOME": str(home),
            "OPENCLAW_STATE_DIR": str(state),
            "OPENCLAW_CONFIG_PATH": str(config),
            "OPENCLAW_PKG": str(ref.package),
            "NO_COLOR": "1",
            "CI": "1",
        }
        indexed = subprocess.run(
            [str(ref.launcher), "memory", "index"],
            capture_output=True,
            text=True,
            timeout=1800,
            env=env,
        )
        if indexed.returncode != 0:
            raise AssertionError(f"openclaw memory index failed:\n{indexed.stderr[-4000:]}")
        request = {
            "queries": [
                {
                    "agent": c.agent,
                    "query": q,
                    "minScore": m,
                    "maxResults": max_results,
                    "nowMs": c.now_ms,
                }
                for c in cases
                for m in min_scores
                for q in c.queries
            ]
        }
        answers = iter(search_with_openclaw(ref, env, home / "hybrid-request.json", request))
        before = _digest(_openclaw_index_files(state))
        memdeck_env = {
            "HOME": str(home),
            "OPENCLAW_STATE_DIR": str(state),  # the same state folder as OpenClaw's
            "OPENCLAW_CONFIG_PATH": str(config),
            "MEMDECK_HOME": str(home / "memdeck"),
            **FAST_ENV,
        }
        for case in cases:
            settings = load_settings(agent_id=case.agent, env=memdeck_env, profile="openclaw")
            engine = Engine(settings, env=memdeck_env)
            try:
                engine.sync()
                for m in min_scores:
                    for query in case.queries:
                        their = next(answers)
                        outcome = engine.openclaw_searcher().outcome(
                            query, max_results=max_results, min_score=m, now_ms=case.now_ms
                        )
                        run.comparisons.append(
                            Comparison(
                                case.agent,
                                query,
                                m,
                                [
                                    (c.path, c.start_line, c.end_line, c.score)
                                    for c in outcome.results
                                ],
                                [
                                    (r["path"], r["startLine"], r["endLine"], r["score"])
                                    for r in their
                                ],
                                outcome.mode,
                                sum(c.topped_up for c in outcome.results),
                                outcome.floor_dropped,
                                sum("fts" not in c.lists for c in outcome.results),
                            )
                        )
            finally:
                engine.close()
        after = _digest(_openclaw_index_files(state))
        run.openclaw_index_untouched = bool(_openclaw_index_files(state)) and before == after
        run.embed_requests = len(server.embed_requests())
    return run
