"""Run the same FTS-only searches through OpenClaw 2026.9.6 and the ``openclaw`` profile.

Every workspace becomes one agent of a single OpenClaw configuration, so one
``openclaw memory index`` indexes them all and one Node process
(node/search_cli.mjs, the CLI's ``memory search --json`` command) answers every
query: the suite pays OpenClaw's start-up twice, not once per workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.openclaw.profile import OpenClawIndex, search_openclaw
from tests.openclaw.corpus import write_workspace
from tests.openclaw.reference import Reference


@dataclass
class Case:
    """One workspace (an OpenClaw agent) and its queries, with the comparison."""

    agent: str
    files: dict[str, str]
    queries: list[str]
    same_lists: int = 0
    same_scores: int = 0
    diffs: list[str] = field(default_factory=list)


def agent_db(home: Path, agent: str) -> Path:
    """OpenClaw's own index of *agent* (opened read-only by the tests)."""
    return home / "state" / "agents" / agent / "agent" / "openclaw-agent.sqlite"


def search_with_openclaw(
    ref: Reference, env: dict[str, str], request_file: Path, request: dict[str, Any]
) -> list[list[dict[str, Any]]]:
    """Answer every query of ``request`` with OpenClaw's ``memory search --json``
    (node/search_cli.mjs, one Node process); one result list per query, in order."""
    answer_file = request_file.with_name(request_file.stem + "-answer.json")
    request_file.write_text(json.dumps(request))
    proc = subprocess.run(
        [
            str(ref.node),
            str(Path(__file__).parent / "node" / "search_cli.mjs"),
            str(request_file),
            str(answer_file),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    if proc.returncode != 0:
        raise AssertionError(f"search_cli.mjs failed:\n{proc.stderr[-4000:]}")
    documents = json.loads(answer_file.read_text())
    for doc in documents:
        if "results" not in doc:
            raise AssertionError(f"openclaw memory search failed: {doc}\n{proc.stderr[-2000:]}")
    return [doc["results"] for doc in documents]


def run_cases(ref: Reference, home: Path, cases: list[Case]) -> None:
    """Index and search every case with OpenClaw and with the profile; fill the counts."""
    home.mkdir(parents=True, exist_ok=True)
    workspaces = {c.agent: write_workspace(home / "ws" / c.agent, c.files) for c in cases}
    config = home / "openclaw.json"
    config.write_text(
        json.dumps(
            {
                "agents": {
                    "ownership": "explicit",
                    "list": [
                        {"id": agent, "workspace": str(ws)} for agent, ws in workspaces.items()
                    ],
                },
                "memory": {"search": {"provider": "none"}},
            }
        )
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home / "state"),
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
    now_ms = int(time.time() * 1000)
    request = {
        "queries": [{"agent": c.agent, "query": q} for c in cases for q in c.queries],
        "nowMs": now_ms,
    }
    answers = iter(search_with_openclaw(ref, env, home / "request.json", request))
    for case in cases:
        index = OpenClawIndex()
        index.load_workspace(workspaces[case.agent])
        for query in case.queries:
            their = next(answers)
            outcome = search_openclaw(index, query, now_ms=now_ms)
            ours = [(c.path, c.start_line, c.end_line, c.score) for c in outcome.results]
            theirs = [(r["path"], r["startLine"], r["endLine"], r["score"]) for r in their]
            if [x[:3] for x in ours] != [x[:3] for x in theirs]:
                case.diffs.append(
                    f"{case.agent} list {query!r}:\n  ours   {ours}\n  theirs {theirs}"
                )
                continue
            case.same_lists += 1
            if all(abs(a[3] - b[3]) <= 1e-6 for a, b in zip(ours, theirs, strict=True)):
                case.same_scores += 1
            else:
                case.diffs.append(f"{case.agent} scores {query!r}: ours {ours} theirs {theirs}")
