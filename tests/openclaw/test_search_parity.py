"""``memdeck --profile openclaw`` ranks exactly as OpenClaw 2026.9.6's memory_search.

FTS-only (``memory.search.provider: "none"``), through OpenClaw itself: each
workspace is indexed with ``openclaw memory index`` (OPENCLAW_HOME,
OPENCLAW_STATE_DIR and OPENCLAW_CONFIG_PATH in a temp folder) and queried with
the CLI's ``memory search --json`` command (node/search_cli.mjs runs them in one
Node process, with the clock pinned to memdeck's so temporal decay agrees).
Workspaces: LoCoMo conversations 0, 3 and 7 (30 questions each), a conversation
whose files have no dated names (30 questions), the seed documents, and a
workspace in seven languages and scripts queried in them (stop words, CJK and
Hangul keyword splitting).
Targets: identical result lists (path, lines) for ≥ 99 % of queries and scores
equal to 1e-6; the chunks in OpenClaw's index equal the profile's.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from engine.openclaw.chunking import chunk_memory_file
from tests.openclaw import multilingual
from tests.openclaw.corpus import (
    locomo_questions,
    locomo_workspaces,
    seed_workspace,
    undated_workspace,
)
from tests.openclaw.search_harness import Case, agent_db, run_cases

QUERIES = 30


def _seed_queries(files: dict[str, str]) -> list[str]:
    headings = []
    for text in files.values():
        headings += [m.strip() for m in re.findall(r"^#{1,3} +(.+)$", text, re.M)]
    return list(dict.fromkeys(headings))[:QUERIES]


@pytest.fixture(scope="module")
def runs(openclaw, tmp_path_factory):
    home = tmp_path_factory.mktemp("search-parity")
    locomo = locomo_workspaces()
    seeds = seed_workspace()
    cases = [
        Case("locomo-0", locomo[0], locomo_questions(0)[:QUERIES]),
        Case("undated", undated_workspace(1), locomo_questions(1)[:QUERIES]),
        Case("seeds", seeds, _seed_queries(seeds)),
        Case("multilingual", multilingual.FILES, multilingual.QUERIES),
    ]
    run_cases(openclaw, home, cases)
    return home, {c.agent: c for c in cases}


def _report(cases) -> str:
    return ", ".join(
        f"{c.agent} {c.same_lists}/{len(c.queries)} lists {c.same_scores} scores" for c in cases
    )


def test_fts_only_search_matches_openclaw(runs):
    """LoCoMo 0 and a workspace without dated names (built from LoCoMo 1); every
    list and score agrees. OpenClaw's index is ~8 s of CPU before its first file,
    so the suite keeps two conversations; ``python -m tests.bench.openclaw_hybrid``
    runs the LoCoMo-scale comparison."""
    _, results = runs
    cases = [results[n] for n in ("locomo-0", "undated")]
    total = sum(len(c.queries) for c in cases)
    lists = sum(c.same_lists for c in cases)
    diffs = [d for c in cases for d in c.diffs]
    assert total == 2 * QUERIES, _report(cases)
    assert lists == total, _report(cases) + "\n" + "\n".join(diffs[:8])
    assert sum(c.same_scores for c in cases) == lists, "\n".join(diffs[:8])


def test_seed_documents_search_matches(runs):
    """Spanish seed documents (headings as queries): with OpenClaw's Spanish stop
    words every list and score agrees (27/30 before they were reproduced)."""
    _, results = runs
    seeds = results["seeds"]
    assert len(seeds.queries) == QUERIES
    assert seeds.same_lists == QUERIES, _report([seeds]) + "\n" + "\n".join(seeds.diffs)
    assert seeds.same_scores == seeds.same_lists, "\n".join(seeds.diffs)


def test_other_languages_search_matches_openclaw(runs):
    """Queries in Spanish, Portuguese, Arabic, Chinese, Japanese, Korean and other
    scripts: OpenClaw's stop words and CJK/Hangul keywords decide which single
    keywords are searched, so every list and score must agree."""
    _, results = runs
    case = results["multilingual"]
    assert len(case.queries) == len(multilingual.QUERIES)
    assert case.same_lists == len(case.queries), _report([case]) + "\n" + "\n".join(case.diffs)
    assert case.same_scores == case.same_lists, "\n".join(case.diffs)


def test_openclaw_index_holds_the_profiles_chunks(runs):
    home, results = runs
    for name, case in results.items():
        con = sqlite3.connect(f"file:{agent_db(home, name)}?mode=ro", uri=True)
        try:
            rows = con.execute(
                "select path, start_line, end_line, hash from memory_index_chunks"
                " where source = 'memory' order by path, start_line, end_line, hash"
            ).fetchall()
        finally:
            con.close()
        ours = sorted(
            (rel, c.start_line, c.end_line, c.hash)
            for rel, text in case.files.items()
            for c in chunk_memory_file(rel, text)
        )
        assert rows == ours, name


def test_fixtures_exercise_decay_floor_and_importance(runs):
    """The workspaces cover what the profile must get right: dated files decayed
    to nothing (the minScore floor drops to 0), evergreen files, importance."""
    _, results = runs
    undated = results["undated"].files
    assert "importance: 9" in undated["MEMORY.md"]
    assert not any(re.search(r"\d{4}-\d{2}-\d{2}", rel) for rel in undated)
    dated = [rel for rel in results["locomo-0"].files if rel != "MEMORY.md"]
    assert dated and all(Path(rel).name[:4].isdigit() for rel in dated)


def test_memdeck_cli_profile_equals_openclaw_cli(runs, openclaw):
    """End to end as a user meets it: ``memdeck search --profile openclaw --json``
    and ``openclaw memory search --json`` (both real processes) on the same
    config and agent return the same list and scores, and memdeck leaves
    OpenClaw's own index untouched."""
    import hashlib
    import json
    import os
    import subprocess

    from tests.cli_process import cli_env, run_cli

    home, results = runs
    agent = "locomo-0"
    query = results[agent].queries[4]
    db = agent_db(home, agent)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    env = cli_env(home / "memdeck-state", {"OPENCLAW_CONFIG_PATH": str(home / "openclaw.json")})
    ours = run_cli("search", "--profile", "openclaw", "--agent", agent, "--json", query, env=env)
    assert ours.returncode == 0, ours.stderr
    # memdeck never writes <state>/agents/<id>/agent/openclaw-agent.sqlite
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    mine = json.loads(ours.stdout)
    assert mine["profile"] == "openclaw" and mine["mode"] == "fts"
    theirs = subprocess.run(
        [str(openclaw.launcher), "memory", "search", "--json", "--agent", agent, query],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "OPENCLAW_HOME": str(home),
            "OPENCLAW_STATE_DIR": str(home / "state"),
            "OPENCLAW_CONFIG_PATH": str(home / "openclaw.json"),
            "NO_COLOR": "1",
        },
    )
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    want = json.loads(theirs.stdout)["results"]
    assert want, "the query must return results"
    assert [(r["path"], r["startLine"], r["endLine"]) for r in mine["results"]] == [
        (r["path"], r["startLine"], r["endLine"]) for r in want
    ]
    # scores decay with the clock between the two processes: relative 1e-6 per ~4 s
    for a, b in zip(mine["results"], want, strict=True):
        assert abs(a["score"] - b["score"]) <= 1e-6 + 1e-5 * abs(b["score"])
