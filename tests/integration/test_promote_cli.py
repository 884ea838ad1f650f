"""``memdeck promote``, ``memdeck dream`` and ``memdeck sessions`` end to end.

Real CLI entry point, real index file, recall events recorded by real
``memdeck search`` runs plus seeded ones (relative to the real clock, since the
CLI uses it).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.config.loader import load_settings
from engine.core import Engine
from engine.memory.recall import RecallEvent, count_events, query_key, record_events
from tests.cli_process import run_cli

X = "The build cache lives on the NAS under /srv/cache #infra #build"
Y = "Invoices are sent on the first Monday of each month #billing #finance"


@pytest.fixture
def env(tmp_path, monkeypatch):
    state, ws = tmp_path / "state", tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    doc = {"plugins": {"entries": {"memory-core": {"config": {"dreaming": {"timezone": "UTC"}}}}}}
    (state / "openclaw.json").write_text(json.dumps(doc))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("HOME", str(tmp_path))
    two_days_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(days=2)).date()
    (ws / "memory" / f"{two_days_ago.isoformat()}.md").write_text(
        f"# {two_days_ago}\n\n- {X}\n- {Y}\n- Bought milk and eggs today\n"
    )
    return ws, state, two_days_ago


def _seed(ws: Path, day: dt.date) -> None:
    settings = load_settings(workspace=ws)
    engine = Engine(settings, provider=None)
    try:
        engine.sync(reason="test")
        now = time.time()
        path = f"memory/{day.isoformat()}.md"
        events = []
        for line, text in ((3, X), (4, Y)):
            questions = [
                "build cache",
                "nas cache path",
                "where is the cache",
                "srv cache",
                "cache location",
                "build artifacts",
            ]
            if text == Y:
                questions = [
                    "invoice day",
                    "billing schedule",
                    "when are invoices sent",
                    "monthly invoices",
                    "finance calendar",
                    "first monday",
                ]
            for k, q in enumerate(questions):
                events.append(
                    RecallEvent(
                        now - 3600 * (k + 1), q, query_key(q), path, "memory", line, line, "h", 0.95
                    )
                )
        record_events(engine.store, events)
    finally:
        engine.close()


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_records_recall_events(env, capsys):
    ws, _, _ = env
    assert _run(capsys, "index", "-w", str(ws))[0] == 0  # search never builds the index
    code, out, _ = _run(
        capsys, "search", "build cache NAS", "-w", str(ws), "--json", "--min-score", "0"
    )
    assert code == 0 and json.loads(out)["results"]
    engine = Engine(load_settings(workspace=ws), provider=None)
    try:
        assert count_events(engine.store) == len(json.loads(out)["results"]) >= 1
    finally:
        engine.close()


def test_promote_preview_apply_and_reject(env, capsys):
    ws, state, day = env
    _seed(ws, day)
    code, out, _ = _run(capsys, "promote", "-w", str(ws), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["dryRun"] is True and doc["applied"] == []
    texts = [c["text"] for c in doc["candidates"]]
    assert sorted(texts) == sorted([X, Y])
    for c in doc["candidates"]:
        assert c["score"] >= 0.8 and c["recalls"] == 6 and c["uniqueQueries"] == 6
        assert set(c["components"]) == {
            "relevance",
            "frequency",
            "diversity",
            "recency",
            "consolidation",
            "conceptual",
        }
        assert c["components"]["relevance"] == pytest.approx(0.95)
        assert c["sources"] == [f"memory/{day}.md#L{3 if c['text'] == X else 4}"]
        assert c["preview"]["inserted"][-1].startswith(f"- {c['text']} <!-- memdeck {c['key']}")
    assert not (ws / "MEMORY.md").exists()  # a dry run writes nothing

    code, out, _ = _run(capsys, "promote", "-w", str(ws))
    assert code == 0 and "nothing written" in out and "+## Promoted" in out
    assert not (ws / "MEMORY.md").exists()

    key_x = next(c["key"] for c in doc["candidates"] if c["text"] == X)
    key_y = next(c["key"] for c in doc["candidates"] if c["text"] == Y)
    code, _, err = _run(capsys, "promote", "-w", str(ws), "--key", "nope", "--apply")
    assert code == 1 and "no queued candidate nope" in err
    assert not (ws / "MEMORY.md").exists()

    code, out, _ = _run(
        capsys, "promote", "-w", str(ws), "--json", "--apply", "--key", key_x, "--reject", key_y
    )
    applied = json.loads(out)
    assert code == 0 and applied["applied"] == [key_x] and applied["rejected"] == [key_y]
    (item,) = applied["candidates"]
    memory = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert memory == "\n".join(item["preview"]["inserted"]) + "\n"
    today = dt.datetime.now(dt.UTC).date().isoformat()
    assert memory.startswith(f"## Promoted {today}\n\n- {X} <!-- memdeck {key_x} ")

    code, out, _ = _run(capsys, "promote", "-w", str(ws), "--json")
    assert json.loads(out)["candidates"] == []  # accepted and rejected are both remembered
    decisions = json.loads((state / "memory" / "main.memdeck-promotions.json").read_text())
    assert {k: v["decision"] for k, v in decisions["decisions"].items()} == {
        key_x: "accepted",
        key_y: "rejected",
    }


def test_dream_writes_dreams_md_only(env, capsys):
    ws, _, day = env
    _seed(ws, day)
    code, out, _ = _run(
        capsys, "dream", "-w", str(ws), "--json", "--phase", "light", "--phase", "deep"
    )
    doc = json.loads(out)
    assert code == 0 and doc["ran"] == ["light", "deep"] and doc["autoWritten"] == []
    assert doc["staged"] == 3 and len(doc["proposed"]) == 2
    assert doc["files"] == [str(ws / "DREAMS.md")]
    dreams = (ws / "DREAMS.md").read_text()
    assert "## Light Sleep" in dreams and "## Deep Sleep" in dreams
    assert not (ws / "MEMORY.md").exists()
    code, out, _ = _run(capsys, "dream", "-w", str(ws), "--due", "--json")
    assert code == 0 and json.loads(out)["ran"] == []  # first look: nothing due yet


def test_sessions_json_via_real_process(env):
    ws, state, _ = env
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    line = {"type": "message", "id": "a", "message": {"role": "user", "content": "x" * 394}}
    (sessions / "s1.jsonl").write_text(json.dumps(line) + "\n")
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": {"sessionId": "s1"}}))
    proc = run_cli("sessions", "-w", str(ws), "--json", env=os.environ)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (s,) = doc["sessions"]
    # "user: " + 394 x = 400 chars = 100 tokens; threshold 200000 − 20000 − 4000 = 176000
    assert (s["key"], s["tokens"], s["threshold"], s["state"]) == (
        "agent:main:main",
        100,
        176000,
        "below-threshold",
    )
    assert doc["flush"]["systemPrompt"] == "Session nearing compaction. Store durable memories now."
    (sessions / "sessions.json").write_text("[1, 2")
    bad = run_cli("sessions", "-w", str(ws), "--json", env=os.environ)
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr


def test_a_review_of_a_never_indexed_workspace_creates_nothing(env, capsys):
    """``promote`` without ``--apply`` (text or JSON, either option order) and a
    workspace no command indexed yet: no index file, no state folder for it."""
    ws, state, _ = env
    before = sorted(p.relative_to(state) for p in state.rglob("*"))
    for argv in (("promote", "-w", str(ws)), ("--json", "-w", str(ws), "promote")):
        code, out, _ = _run(capsys, *argv)
        assert code == 0
        assert "no candidate waiting for review" in out or json.loads(out)["dryRun"] is True
    assert sorted(p.relative_to(state) for p in state.rglob("*")) == before
    assert not list(state.rglob("*.sqlite"))
