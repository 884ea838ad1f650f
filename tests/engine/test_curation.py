"""Curating MEMORY.md: the suggestions and their evidence, and the actions (a plan
shown as a diff, written only if nothing changed meanwhile, undoable, no byte of
another entry touched, the index following at once)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from engine.cli.main import main
from engine.core import Engine
from engine.memory.curation import (
    EntryRef,
    memory_entries,
    near_duplicates,
    repeated_daily_lines,
    suggest,
)
from engine.memory.curation_actions import (
    CurationConflict,
    apply,
    apply_and_index,
    check_topic,
    new_sentences,
    plan_delete,
    plan_merge,
    plan_move,
    topic_path,
)
from engine.memory.recall import RecallEvent, query_key, record_events
from tests.engine.concept_embedder import ConceptEmbedder

MEMORY = (
    "# Memory\n"
    "\n"
    "## People\n"
    "\n"
    "- Dana prefers flat white coffee in the morning.\n"
    "- Ravi owns the Atlas rollback plan.\n"
    "- Dana likes flat white coffee in the morning. She takes oat milk.\n"
    "\n"
    "## Infra\n"
    "\n"
    "The build cache lives on the NAS under /srv/cache,\n"
    "and it is wiped every Sunday night.\n"
    "\n"
    "- Backups run nightly at 02:00.\n"
)
DAILY = "# 2026-03-01\n\n## 09:00\n\n- backups run nightly at 02:00\n- Bought milk\n"


def entry(ws: Path, start: int) -> EntryRef:
    text = (ws / "MEMORY.md").read_bytes().decode("utf-8-sig")  # CRLF kept
    return next(EntryRef.of(e) for e in memory_entries(text) if e.start_line == start)


@pytest.fixture
def ws(workspace_dir: Path) -> Path:
    (workspace_dir / "MEMORY.md").write_bytes(MEMORY.encode())
    (workspace_dir / "memory" / "2026-03-01.md").write_text(DAILY, encoding="utf-8")
    return workspace_dir


@pytest.fixture
def engine(ws: Path, make_engine: Any) -> Engine:
    e: Engine = make_engine(provider=None)
    e.sync(reason="test")
    return e


# -- suggestions ---------------------------------------------------------------------------
def test_entries_are_list_items_and_paragraphs() -> None:
    found = [(e.start_line, e.end_line, e.heading) for e in memory_entries(MEMORY)]
    assert found == [
        (5, 5, "People"),
        (6, 6, "People"),
        (7, 7, "People"),
        (11, 12, "Infra"),
        (14, 14, "Infra"),
    ]


def test_near_duplicates_by_words_and_by_vectors() -> None:
    entries = memory_entries(MEMORY)
    (dup,) = near_duplicates(entries)
    assert (dup.entry.start_line, dup.other and dup.other.start_line) == (7, 5)
    assert "words are in the other" in dup.evidence and dup.actions[0] == "merge"
    # vectors alone can make a pair (here: every entry the same direction)
    import numpy as np

    same = np.ones((len(entries), 4), dtype=np.float32) / 2
    pairs = near_duplicates(entries, same)
    assert len(pairs) == len(entries) - 1 and all("vector cosine" in p.evidence for p in pairs)


def test_an_entry_repeating_a_daily_log_line() -> None:
    (found,) = repeated_daily_lines(memory_entries(MEMORY), [("memory/2026-03-01.md", DAILY)])
    assert found.entry.start_line == 14 and found.other is not None
    assert found.other.where == "memory/2026-03-01.md#L5"


def test_suggest_with_recall_and_the_unseen_lines(engine: Engine, ws: Path) -> None:
    found = suggest(engine, days=30)
    kinds = [(s.kind, s.entry.start_line) for s in found.suggestions]
    assert ("duplicate", 7) in kinds and ("daily-log", 14) in kinds
    assert not any(k == "not-recalled" for k, _ in kinds)  # no search recorded yet
    assert found.notes and "recall is not judged" in found.notes[0]
    now = time.time()
    os.utime(ws / "MEMORY.md", (now - 7200, now - 7200))  # written before the search
    engine.sync(reason="test")
    with engine.pinned_store() as store:
        record_events(
            store,
            [
                RecallEvent(
                    now - 3600, "coffee", query_key("coffee"), "MEMORY.md", "memory", 5, 7, "h", 0.9
                )
            ],
        )
    found = suggest(engine, days=30, now=now)
    unrecalled = {s.entry.start_line for s in found.suggestions if s.kind == "not-recalled"}
    assert unrecalled == {11, 14}  # lines 5–7 were returned by the search
    assert all("no search in the last 30 days returned it" in s.evidence
               for s in found.suggestions if s.kind == "not-recalled")  # fmt: skip
    # past the budget: under a 260-character limit the middle of the file is unseen
    engine.settings.raw["agents"] = {"defaults": {"bootstrapMaxChars": 260}}
    found = suggest(engine, days=30, now=now)
    unseen = {s.entry.start_line for s in found.suggestions if s.kind == "unseen"}
    assert unseen == {7, 11}  # line 7 is cut, 8–11 never seen, 12 cut
    evidence = {s.entry.start_line: s.evidence for s in found.suggestions if s.kind == "unseen"}
    assert "only partly seen by the agent (line 7 (cut))" in evidence[7]
    assert "lines 8–11" in evidence[11]


def test_results_from_before_an_edit_are_not_pinned_on_the_lines_now_there(
    engine: Engine, ws: Path
) -> None:
    """A search returned lines 5–7 (Dana's coffee); then two lines were inserted above
    them. Those line numbers now hold other entries: the old result is not counted
    for them, and "not recalled" is claimed only for the searches since the edit,
    saying so."""
    now = time.time()
    os.utime(ws / "MEMORY.md", (now - 7200, now - 7200))
    engine.sync(reason="test")
    with engine.pinned_store() as store:
        record_events(store, [RecallEvent(
            now - 3600, "coffee", query_key("coffee"), "MEMORY.md", "memory", 5, 7, "h", 0.9
        )])  # fmt: skip
    text = (ws / "MEMORY.md").read_text()
    (ws / "MEMORY.md").write_text(text.replace("## People\n\n", "## People\n\n- Kai: on call.\n\n"))
    engine.sync(reason="test")
    found = suggest(engine, days=30, now=time.time())
    unrecalled = {
        s.entry.start_line: s.evidence for s in found.suggestions if s.kind == "not-recalled"
    }
    assert 5 in unrecalled and 7 in unrecalled  # "Kai" now sits on line 5: never returned
    why = unrecalled[5]
    assert why.startswith("no search returned it since MEMORY.md changed (")
    assert why.endswith("1 result of earlier searches cannot be placed in the edited file")


def test_vectors_come_from_the_engine_provider(ws: Path, make_engine: Any) -> None:
    engine: Engine = make_engine(provider=ConceptEmbedder())
    engine.sync(reason="test")
    found = suggest(engine)
    assert found.compared_by.startswith("words and vectors")


def test_memdeck_curate_json(engine: Engine, ws: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(engine.settings.state_dir))
    assert main(["curate", "-w", str(ws), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["path"] == "MEMORY.md" and data["entries"] == 5
    kinds = {s["kind"] for s in data["suggestions"]}
    assert {"duplicate", "daily-log"} <= kinds
    dup = next(s for s in data["suggestions"] if s["kind"] == "duplicate")
    assert dup["entry"]["startLine"] == 7 and dup["other"]["startLine"] == 5
    assert main(["curate", "-w", str(ws), "--days", "7"]) == 0
    assert "near-duplicate of lines 5–5" in capsys.readouterr().out


def test_memdeck_curate_refuses_a_memory_file_it_cannot_read(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """A symlinked MEMORY.md or a folder of that name: a usage error (exit 1) that
    says why, in either option order, not a runtime failure naming an exception."""
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    ws, outside = tmp_path / "ws", tmp_path / "outside.md"
    (ws / "memory").mkdir(parents=True)
    outside.write_text("- a secret kept elsewhere\n")
    (ws / "MEMORY.md").symlink_to(outside)
    for argv in (["curate", "-w", str(ws)], ["--json", "-w", str(ws), "curate"]):
        assert main(argv) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert "memdeck: cannot curate: MEMORY.md: symlinks are not followed" in err
        assert "PathRefused" not in err
    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").mkdir()
    assert main(["curate", "-w", str(ws)]) == 1
    assert "cannot curate: MEMORY.md: is a folder, not a memory file" in capsys.readouterr().err


# -- actions -----------------------------------------------------------------------------------
def _others_unchanged(before: str, after: str, removed: set[int]) -> None:
    """Every line of every other entry is still there, byte for byte and in order."""
    kept = [ln for i, ln in enumerate(before.split("\n"), 1) if i not in removed and ln.strip()]
    assert [ln for ln in after.split("\n") if ln.strip() and ln in kept] == kept


def test_delete_shows_a_diff_then_writes_and_undoes(engine: Engine, ws: Path) -> None:
    path = ws / "MEMORY.md"
    before = path.read_bytes()
    plan = plan_delete(engine.workspace, entry(ws, 6))
    assert path.read_bytes() == before  # planning writes nothing
    assert "-- Ravi owns the Atlas rollback plan." in plan.diff
    undo = apply_and_index(engine, plan)
    after = path.read_text(encoding="utf-8")
    assert "Ravi" not in after
    _others_unchanged(before.decode(), after, {6})
    assert engine.search("Ravi Atlas rollback").results == []  # the index followed
    apply(engine.workspace, undo)
    assert path.read_bytes() == before


def test_a_file_changed_meanwhile_is_not_overwritten(engine: Engine, ws: Path) -> None:
    path = ws / "MEMORY.md"
    plan = plan_delete(engine.workspace, entry(ws, 6))
    path.write_text(MEMORY + "- added by the agent meanwhile\n", encoding="utf-8")
    with pytest.raises(CurationConflict, match="changed on disk"):
        apply(engine.workspace, plan)
    assert path.read_text(encoding="utf-8").endswith("meanwhile\n")
    # planning again on a changed entry refuses too
    ref = entry(ws, 6)
    path.write_text(MEMORY.replace("Ravi owns", "Ravi now owns"), encoding="utf-8")
    with pytest.raises(CurationConflict, match="no longer the entry"):
        plan_delete(engine.workspace, ref)


def test_merge_keeps_one_and_adds_what_only_the_other_says(engine: Engine, ws: Path) -> None:
    path = ws / "MEMORY.md"
    before = path.read_text(encoding="utf-8")
    assert new_sentences("Dana prefers coffee.", "dana prefers  coffee. She takes oat milk.") == [
        "She takes oat milk."
    ]
    plan = plan_merge(engine.workspace, entry(ws, 5), entry(ws, 7))
    undo = apply(engine.workspace, plan)
    after = path.read_text(encoding="utf-8")
    assert "- Dana prefers flat white coffee in the morning. She takes oat milk.\n" in after
    assert "Dana likes" not in after
    _others_unchanged(before, after, {5, 7})
    apply(engine.workspace, undo)
    assert path.read_text(encoding="utf-8") == before


def test_move_to_a_topic_file_with_a_pointer_and_undo(engine: Engine, ws: Path) -> None:
    path = ws / "MEMORY.md"
    before = path.read_bytes()
    ref = entry(ws, 11)
    assert topic_path(ref) == "memory/infra.md"
    plan = plan_move(engine.workspace, ref, "memory/infra.md", pointer=True)
    assert "+++ b/memory/infra.md" in plan.diff and "--- /dev/null" in plan.diff
    undo = apply_and_index(engine, plan)
    topic = (ws / "memory" / "infra.md").read_text(encoding="utf-8")
    assert topic == (
        "# Infra\n\nThe build cache lives on the NAS under /srv/cache,\n"
        "and it is wiped every Sunday night.\n"
    )
    after = path.read_text(encoding="utf-8")
    assert "Moved to memory/infra.md: The build cache lives on the NAS" in after
    _others_unchanged(before.decode(), after, {11, 12})
    hits = engine.search("build cache NAS wiped Sunday").results
    assert hits and hits[0].path == "memory/infra.md"  # still searchable
    apply_and_index(engine, undo)
    assert path.read_bytes() == before and not (ws / "memory" / "infra.md").exists()


def test_move_appends_to_an_existing_topic_file(engine: Engine, ws: Path) -> None:
    topic = ws / "memory" / "people.md"
    topic.write_text("# People\n\n- Old note.\n", encoding="utf-8")
    apply(engine.workspace, plan_move(engine.workspace, entry(ws, 6), "memory/people.md"))
    assert topic.read_text(encoding="utf-8") == (
        "# People\n\n- Old note.\n\n- Ravi owns the Atlas rollback plan.\n"
    )


def test_crlf_and_bom_survive_every_action(ws: Path, engine: Engine) -> None:
    path = ws / "MEMORY.md"
    raw = ("\ufeff" + MEMORY).replace("\n", "\r\n").encode("utf-8")
    path.write_bytes(raw)
    undo = apply(engine.workspace, plan_delete(engine.workspace, entry(ws, 6)))
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf# Memory\r\n") and b"Ravi" not in after
    assert raw.replace(b"- Ravi owns the Atlas rollback plan.\r\n", b"") == after
    apply(engine.workspace, undo)
    assert path.read_bytes() == raw


def test_a_moved_entry_takes_the_topic_files_line_ends(ws: Path, engine: Engine) -> None:
    """A CRLF MEMORY.md's entry moved to a new topic file makes it CRLF throughout
    (its heading too); moved into an existing LF file, it is written with LF."""
    path = ws / "MEMORY.md"
    path.write_bytes(MEMORY.replace("\n", "\r\n").encode("utf-8"))
    new = ws / "memory" / "people.md"
    apply(engine.workspace, plan_move(engine.workspace, entry(ws, 6), "memory/people.md"))
    assert new.read_bytes() == b"# People\r\n\r\n- Ravi owns the Atlas rollback plan.\r\n"
    old = ws / "memory" / "infra.md"
    old.write_bytes(b"# Infra\n\n- The NAS is in the hall cupboard.\n")
    apply(engine.workspace, plan_move(engine.workspace, entry(ws, 13), "memory/infra.md"))
    assert old.read_bytes() == (
        b"# Infra\n\n- The NAS is in the hall cupboard.\n\n- Backups run nightly at 02:00.\n"
    )
    assert b"\n" not in path.read_bytes().replace(b"\r\n", b"")  # MEMORY.md stays CRLF


def test_topic_files_are_checked(engine: Engine) -> None:
    ws = engine.workspace
    assert check_topic(ws, "./memory/projects/atlas.md") == "memory/projects/atlas.md"
    for bad in ("MEMORY.md", "memory/2026-03-01.md", "memory/x.txt", "memory/../x.md", "notes.md"):
        with pytest.raises(ValueError):
            check_topic(ws, bad)


def test_an_importance_comment_is_not_part_of_the_wording() -> None:
    """``<!-- importance: 8 -->`` is metadata: an entry carrying one is still the
    duplicate of the same sentence, and still repeats a daily-log line."""
    memory = (
        "# Memory\n\n"
        "- Writes commit messages in the imperative mood. <!-- importance: 9 -->\n"
        "- Writes commit messages in the imperative mood and squashes before merging.\n"
        "- Deploys go through ArgoCD; never kubectl apply by hand. <!-- importance: 8 -->\n"
    )
    entries = memory_entries(memory)
    assert not any("importance" in e.words for e in entries)
    pairs = {(s.entry.start_line, s.other.start_line) for s in near_duplicates(entries, None)
             if s.other is not None}  # fmt: skip
    assert (4, 3) in pairs or (3, 4) in pairs, pairs
    log = "# 2026-10-28\n\n- Deploys go through ArgoCD; never kubectl apply by hand\n"
    (found,) = repeated_daily_lines(entries, [("memory/2026-10-28.md", log)])
    assert found.entry.start_line == 5 and found.other is not None
    assert found.other.where == "memory/2026-10-28.md#L3"


def test_the_diff_says_when_a_file_has_no_final_newline(ws: Path, engine: Engine) -> None:
    """MEMORY.md without a final newline: the preview marks it as diff does, and the
    next file's header starts a line of its own."""
    (ws / "MEMORY.md").write_text(MEMORY.rstrip("\n"), encoding="utf-8")
    plan = plan_move(engine.workspace, entry(ws, 14), "memory/infra.md")  # the last line
    diff = plan.diff
    assert "\n\\ No newline at end of file\n" in diff
    assert "\n--- /dev/null\n" in diff  # the topic file's header on a line of its own
    assert all(line.startswith(("---", "+++", "@@", " ", "-", "+", "\\"))
               for line in diff.splitlines()), diff  # fmt: skip
