"""Reviewed promotion into MEMORY.md and the "never without an accept" guarantee."""

from __future__ import annotations

import dataclasses
import json

import pytest

from engine.memory.dreaming.config import DeepSettings, DreamingSettings, RecoverySettings
from engine.memory.dreaming.promotion import (
    PromotionConflict,
    PromotionError,
    insert_under_section,
    promoted_text,
)
from engine.memory.dreaming.service import Dreamer
from engine.memory.recall import record_events
from tests.engine import dreaming_month as m

SECTION = "## Promoted 2026-03-31"


@pytest.fixture
def month(make_engine, workspace_dir):
    return m.month_engine(make_engine, workspace_dir)


def _dreamer(engine, **recovery):
    deep = DeepSettings(recovery=dataclasses.replace(RecoverySettings(), **recovery))
    return Dreamer(engine, config=DreamingSettings(timezone="UTC", deep=deep))


# --------------------------------------------------------------------------- pure insertion


@pytest.mark.parametrize(
    ("before", "after", "start"),
    [
        # empty or missing file: the section starts the file
        ("", f"{SECTION}\n\n- x\n", 1),
        # no section yet: appended after a blank line; a missing final newline is added
        ("# Memory\n\n- a", f"# Memory\n\n- a\n\n{SECTION}\n\n- x\n", 4),
        ("# Memory\n- a\n", f"# Memory\n- a\n\n{SECTION}\n\n- x\n", 3),
        # the section exists: the line goes after its last entry, before the next heading
        (
            f"# M\n\n{SECTION}\n\n- old\n\n## Later\n\n- keep\n",
            f"# M\n\n{SECTION}\n\n- old\n- x\n\n## Later\n\n- keep\n",
            6,
        ),
        # an empty existing section gets a blank line then the entry
        (f"{SECTION}\n", f"{SECTION}\n\n- x\n", 2),
        # CRLF files stay CRLF
        ("# M\r\n- a\r\n", f"# M\r\n- a\r\n\r\n{SECTION}\r\n\r\n- x\r\n", 3),
    ],
)
def test_insert_under_section(before, after, start):
    new, block, first = insert_under_section(before, "- x", SECTION)
    assert new == after
    lines = new.splitlines()
    assert lines[first - 1 : first - 1 + len(block)] == list(block)
    rest = lines[: first - 1] + lines[first - 1 + len(block) :]
    assert rest == before.splitlines()  # nothing else changed


def test_promoted_text_is_one_line_and_bounded():
    assert promoted_text("a\n  b\tc") == "a b c"
    assert promoted_text("x --> y <!-- z") == "x -- > y <! -- z"  # cannot close our comment
    long = promoted_text("word " * 400)
    assert len(long) <= 640 and long.endswith("…")


# --------------------------------------------------------------------------- accept / reject


def test_accept_changes_memory_exactly_as_previewed(month, workspace_dir):
    dreamer = _dreamer(month)
    (first, second) = dreamer.queue(m.NOW)
    shown = dreamer.preview(first, m.NOW)
    assert shown.before == m.MEMORY
    assert shown.diff.splitlines()[-4:] == [f"+{ln}" for ln in shown.inserted]
    dreamer.accept(first, shown)
    assert (workspace_dir / "MEMORY.md").read_text(encoding="utf-8") == shown.after
    assert shown.after == m.MEMORY + "\n" + "\n".join(shown.inserted[1:]) + "\n"
    # The accepted candidate leaves the queue and is recorded.
    assert [p.key for p in dreamer.queue(m.NOW)] == [second.key]
    saved = json.loads(dreamer.decisions.path.read_text())["decisions"][first.key]
    assert saved["decision"] == "accepted" and saved["by"] == "user"
    assert saved["source"] == "memory/2026-03-27.md#L5"


def test_stale_preview_is_refused(month, workspace_dir):
    dreamer = _dreamer(month)
    p = dreamer.queue(m.NOW)[0]
    shown = dreamer.preview(p, m.NOW)
    (workspace_dir / "MEMORY.md").write_text(m.MEMORY + "- typed meanwhile\n")
    with pytest.raises(PromotionConflict, match="changed since the preview"):
        dreamer.accept(p, shown)
    assert (workspace_dir / "MEMORY.md").read_text() == m.MEMORY + "- typed meanwhile\n"
    assert p.key not in dreamer.decisions.verdicts()


def test_non_utf8_memory_is_never_rewritten(month, workspace_dir):
    raw = b"# Memory\n- caf\xe9\n"
    (workspace_dir / "MEMORY.md").write_bytes(raw)
    dreamer = _dreamer(month)
    p = dreamer.queue(m.NOW)[0]
    with pytest.raises(PromotionError, match="not valid UTF-8"):
        dreamer.preview(p, m.NOW)
    assert (workspace_dir / "MEMORY.md").read_bytes() == raw


def test_reject_is_remembered(month):
    dreamer = _dreamer(month)
    first = dreamer.queue(m.NOW)[0]
    dreamer.reject(first)
    assert first.key not in [p.key for p in _dreamer(month).queue(m.NOW)]
    assert dreamer.decisions.verdicts()[first.key] == "rejected"


# --------------------------------------------------------------------------- no silent writes


def test_dream_runs_never_write_memory_without_configured_auto_write(month, workspace_dir):
    dreamer = _dreamer(month)  # autoWriteMinConfidence not configured (default 0.97 unused)
    report = dreamer.run(None, m.NOW)
    assert report.ran == ["light", "deep", "rem"]
    assert report.auto_written == []
    assert (workspace_dir / "MEMORY.md").read_text() == m.MEMORY
    dreams = (workspace_dir / "DREAMS.md").read_text()
    for title in ("## Light Sleep", "## Deep Sleep", "## REM Sleep"):
        assert dreams.count(title) == 1
    assert "Nothing was written to MEMORY.md" in dreams
    # A second run replaces the blocks and keeps what the user wrote in between.
    (workspace_dir / "DREAMS.md").write_text(dreams + "\nmy own note\n")
    dreamer.run(["light"], m.NOW)
    again = (workspace_dir / "DREAMS.md").read_text()
    assert again.count("## Light Sleep") == 1 and "my own note" in again


def test_configured_auto_write_needs_the_confidence(month, workspace_dir):
    # F/A scores 0.872917, R (recovered) 0.909762.
    strict = _dreamer(month, auto_write_min_confidence=0.95, auto_write_configured=True)
    assert strict.run(["deep"], m.NOW, write_reports=False).auto_written == []
    assert (workspace_dir / "MEMORY.md").read_text() == m.MEMORY

    mid = _dreamer(month, auto_write_min_confidence=0.9, auto_write_configured=True)
    report = mid.run(["deep"], m.NOW, write_reports=False)
    (key,) = report.auto_written
    text = (workspace_dir / "MEMORY.md").read_text()
    assert text.startswith(m.MEMORY) and m.R in text and m.F not in text
    assert mid.decisions.load()[key]["by"] == "auto"


def test_separate_reports_storage(month, workspace_dir):
    config = DreamingSettings(timezone="UTC", storage_mode="separate")
    report = Dreamer(month, config=config).run(["rem"], m.NOW)
    path = workspace_dir / "memory" / "dreaming" / "rem" / "2026-03-31.md"
    assert report.files == [str(path)]
    assert path.read_text().startswith("# REM Sleep — 2026-03-31")
    assert not (workspace_dir / "DREAMS.md").exists()
    # Reports under memory/dreaming/ are never material for the phases.
    assert all(
        not e.path.startswith("memory/dreaming/")
        for e in Dreamer(month, config=config).daily_entries()
    )


def test_non_utf8_dreams_file_is_left_alone(month, workspace_dir):
    raw = b"# Dreams\n\xff\xfe broken\n"
    (workspace_dir / "DREAMS.md").write_bytes(raw)
    report = _dreamer(month).run(["light"], m.NOW)
    assert "not valid UTF-8" in report.skipped["light report"]
    assert (workspace_dir / "DREAMS.md").read_bytes() == raw


def test_recalled_transcript_messages_are_candidates(month, state_dir):
    import json as _json

    from engine.memory.recall import RecallEvent, query_key

    sessions = state_dir / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    said = "I always deploy from the release branch, never from main"
    lines = [
        _json.dumps({"type": "session", "id": "h"}),
        _json.dumps(
            {
                "type": "message",
                "timestamp": "2026-03-30T10:00:00Z",
                "message": {"role": "user", "content": said},
            }
        ),
    ]
    (sessions / "s1.jsonl").write_text("\n".join(lines) + "\n")
    events = [
        RecallEvent(m.at(31, h), q, query_key(q), "sessions/s1.jsonl", "sessions", 2, 2, "s", 0.9)
        for h, q in ((1, "deploy branch"), (2, "release branch rule"), (3, "where to deploy"))
    ]
    record_events(month.store, events)
    result = _dreamer(month).deep(m.NOW)
    p = {x.candidate.text: x for x in result.rejected}[said]
    assert p.candidate.sources == ["sessions/s1.jsonl#L2"]
    assert p.candidate.entry.day.isoformat() == "2026-03-30"
    # relevance .9; frequency ln4/ln11 = 0.578130; diversity 3/5 = .6; last hit 03:00,
    # 9 h = 0.375 d -> recency 0.5^(0.375/14) = 0.981605; days {30 note, 31 hits}:
    # 0.55*ln2/ln5 + 0.45*1/7 = 0.236872 + 0.064286 = 0.301158; no tags
    # total = .27 + .138751 + .09 + .147241 + .030116 = 0.676108 < minScore 0.8
    assert p.score == pytest.approx(0.676108, abs=1e-6)
    assert p.failed == ["score 0.676 < minScore 0.8"]
    lowered = Dreamer(
        month, config=DreamingSettings(timezone="UTC", deep=DeepSettings(min_score=0.6))
    ).deep(m.NOW)
    assert said in [x.candidate.text for x in lowered.proposed]
