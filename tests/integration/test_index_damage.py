"""A damaged index: a search fails with the reason and leaves the file alone; the
next ``memdeck index`` finds the damage, says so, and rebuilds from the Markdown.

Damage is written into a real, cleanly closed index file (invalid UTF-8 in a
row, an emptied keyword table, NaN and zero vectors), then the CLI is run as a
user would.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from engine.index.db import Database
from tests.cli_process import cli_env, run_cli
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import write


@pytest.fixture
def built(workspace_dir: Path, state_dir: Path, make_settings) -> tuple[Path, dict[str, str]]:
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- Deploys go out on Tuesday\n")
    write(workspace_dir, "memory/2026-03-01.md", "# 2026-03-01\n\n- Coffee with Dana at nine\n")
    env = cli_env(state_dir)
    out = run_cli("index", "--workspace", str(workspace_dir), env=env)
    assert out.returncode == 0, out.stderr
    return make_settings().index_path, env


def _search(ws: Path, env: dict[str, str], *extra: str):
    return run_cli("search", "--workspace", str(ws), "deploys", *extra, env=env)


def test_invalid_text_in_a_row_fails_the_search_and_index_rebuilds_it(built, workspace_dir) -> None:
    index, env = built
    db = Database(index)
    db.execute(
        "update chunks set text = cast(x'ffff4465706c6f7973ffff' as text) where path = 'MEMORY.md'"
    )
    db.close()
    for extra in ((), ("--json",)):
        out = _search(workspace_dir, env, *extra)
        assert out.returncode == 2, out
        assert "not valid UTF-8" in out.stderr and "run `memdeck index`" in out.stderr
        assert str(index) in out.stderr  # names the file
    assert not list(index.parent.glob("*.corrupt"))  # a reader never moves the index
    fixed = run_cli("index", "--workspace", str(workspace_dir), "--json", env=env)
    assert fixed.returncode == 0, fixed.stderr
    data = json.loads(fixed.stdout)
    assert "not valid UTF-8" in data["recovered"] and data["full"] is True
    assert "memdeck: index was unreadable" in fixed.stderr
    found = json.loads(_search(workspace_dir, env, "--json").stdout)
    assert found["results"][0]["path"] == "MEMORY.md"


def test_an_emptied_keyword_table_is_reported_and_repaired(built, workspace_dir) -> None:
    index, env = built
    before = json.loads(_search(workspace_dir, env, "--json").stdout)["results"]
    db = Database(index)
    db.execute("delete from kw_postings")
    db.close()
    status = json.loads(
        run_cli("status", "--workspace", str(workspace_dir), "--json", env=env).stdout
    )
    assert any("no postings" in f for f in status["damage"]), status["damage"]
    text = run_cli("status", "--workspace", str(workspace_dir), env=env).stdout
    assert "damage      the keyword index has no postings" in text
    fixed = run_cli("index", "--workspace", str(workspace_dir), "--json", env=env)
    assert fixed.returncode == 0
    assert "keyword index has no postings" in json.loads(fixed.stdout)["recovered"]
    assert "memdeck: index damage found" in fixed.stderr
    assert json.loads(_search(workspace_dir, env, "--json").stdout)["results"] == before
    clean = json.loads(
        run_cli("status", "--workspace", str(workspace_dir), "--json", env=env).stdout
    )
    assert clean["damage"] == []


def test_damaged_vectors_are_never_ranked_and_check_rebuilds_them(make_engine, workspace_dir):
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- espresso beans\n")
    write(workspace_dir, "memory/2026-03-01.md", "# Day\n\n- postgres migration\n")
    engine = make_engine(provider=ConceptEmbedder())
    engine.sync()
    dims = engine.provider.dims
    nan = struct.pack(f"{dims}f", *([float("nan")] * dims))
    engine.store.db.execute("update chunks set embedding = ? where path = 'MEMORY.md'", (nan,))
    engine.store.db.execute(
        "update embedding_cache set embedding = ? where length(embedding) > 0", (nan,)
    )
    options = engine.default_options().with_(min_score=0.0)
    out = engine.search("coffee", options)
    scores = [c.score for c in out.results] + [c.vector_score or 0.0 for c in out.results]
    assert all(np.isfinite(scores))  # the NaN row is left out, never ranked with NaN
    found = engine.store.check("thorough")
    assert any("chunk vectors are not finite" in f for f in found), found
    done = engine.sync(check="thorough")
    assert done.full and "chunk vectors are not finite" in (engine.recovered or "")
    assert engine.store.check("thorough") == ()
    assert engine.search("coffee", options).results[0].path == "MEMORY.md"


def test_a_file_that_is_not_an_index_is_left_alone_by_every_reader(built, workspace_dir) -> None:
    """status, search, get and curate only read: a garbage file stays where it is,
    each says it is damaged (not "not built yet"), and ``memdeck index`` rebuilds."""
    index, env = built
    index.write_bytes(b"GARBAGE" * 20_000)
    before = index.read_bytes()
    text = run_cli("status", "--workspace", str(workspace_dir), env=env)
    assert text.returncode == 0, text.stderr
    assert "damage      the index cannot be read: file is not a database" in text.stdout
    assert "not built yet" not in text.stdout
    status = json.loads(
        run_cli("status", "--workspace", str(workspace_dir), "--json", env=env).stdout
    )
    assert status["damage"] == ["the index cannot be read: file is not a database"]
    assert status["recovered"] is None
    out = _search(workspace_dir, env, "--json")
    assert out.returncode == 2, out
    answer = json.loads(out.stdout)
    assert answer["disabled"] is True and "is damaged (file is not a database)" in answer["error"]
    assert str(index) in out.stderr and "run `memdeck index`" in out.stderr
    assert _search(workspace_dir, env).returncode == 2
    assert run_cli("curate", "--workspace", str(workspace_dir), env=env).returncode == 0
    got = run_cli("get", "MEMORY.md", "--workspace", str(workspace_dir), env=env)
    assert got.returncode == 0 and "Deploys go out on Tuesday" in got.stdout
    assert index.read_bytes() == before and not list(index.parent.glob("*.corrupt"))
    fixed = run_cli("index", "--workspace", str(workspace_dir), "--json", env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert "file is not a database" in json.loads(fixed.stdout)["recovered"]
    found = json.loads(_search(workspace_dir, env, "--json").stdout)
    assert found["results"][0]["path"] == "MEMORY.md"


def test_status_lists_damaged_pages(built, workspace_dir) -> None:
    """A page SQLite cannot read is a finding of ``memdeck status`` before any search
    meets it (the file is small enough for its page check)."""
    index, env = built
    data = bytearray(index.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    page = 65536 if page == 1 else page
    pages = len(data) // page
    for n in range(pages // 3, pages // 3 + 6):  # inside pages the open check never reads
        data[n * page + 8 : n * page + page // 4] = b"\xab" * (page // 4 - 8)
    index.write_bytes(bytes(data))
    status = json.loads(
        run_cli("status", "--workspace", str(workspace_dir), "--json", env=env).stdout
    )
    assert [f for f in status["damage"] if f.startswith("damaged pages: ")], status["damage"]
    assert not any("*** in database" in f for f in status["damage"])
    text = run_cli("status", "--workspace", str(workspace_dir), env=env).stdout
    assert "damage      damaged pages: " in text


def test_linked_memory_files_are_named_when_skipped(tmp_path: Path) -> None:
    """A MEMORY.md and a memory/ that are symlinks to files outside the workspace are
    not read; ``memdeck index`` says each was skipped and why, and a search of the
    empty index says why it is empty instead of asking for ``memdeck index``."""
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    (outside / "logs").mkdir(parents=True)
    (outside / "secret.md").write_text("- SECRETWORD kept elsewhere\n")
    (outside / "logs" / "2026-11-01.md").write_text("- SECRETWORD in a log\n")
    ws.mkdir()
    (ws / "MEMORY.md").symlink_to(outside / "secret.md")
    (ws / "memory").symlink_to(outside / "logs")
    env = cli_env(tmp_path / "state")
    for argv in (("index", "-w", str(ws)), ("-w", str(ws), "index", "--json")):
        out = run_cli(*argv, env=env)
        assert out.returncode == 0, out.stderr
        for name in ("MEMORY.md", "memory/"):
            assert f"{name}: a symlink, not followed" in out.stdout, out.stdout
    found = run_cli("search", "SECRETWORD", "-w", str(ws), "--json", env=env)
    assert found.returncode == 0 and json.loads(found.stdout)["results"] == []


def test_a_search_of_an_empty_index_says_why_it_is_keyword_only(
    make_engine, workspace_dir: Path
) -> None:
    """Nothing was indexed (every memory file skipped): the reason a hybrid search
    gives is that, not "no vectors for this provider yet; run `memdeck index`"."""
    from engine.searchers import keyword_only_reason

    engine = make_engine(provider=ConceptEmbedder())
    engine.sync()
    outcome = engine.search("SECRETWORD", engine.default_options().with_(min_score=0))
    assert outcome.mode == "fts" and outcome.results == []
    assert keyword_only_reason(engine, outcome) == (
        "the index holds no text: no memory file was indexed (`memdeck index` says why)"
    )


def test_a_file_error_names_its_path_once(built, workspace_dir) -> None:
    """A file that cannot be indexed: ``status`` and ``watch``'s errors say its path
    once ("memory/bin.md: looks binary…", not "memory/bin.md: memory/bin.md: …")."""
    from engine.events import FileError

    _, env = built
    (workspace_dir / "memory" / "bin.md").write_bytes(b"abc\x00def\n")
    assert run_cli("index", "-w", str(workspace_dir), env=env).returncode == 0
    text = run_cli("status", "-w", str(workspace_dir), env=env).stdout
    assert "file error  memory/bin.md: looks binary (NUL bytes), not indexed" in text
    assert "memory/bin.md: memory/bin.md" not in text
    event = FileError("memory/bin.md", "memory/bin.md: looks binary (NUL bytes), not indexed")
    assert event.line == "memory/bin.md: looks binary (NUL bytes), not indexed"
    assert FileError("a.md", "cannot read").line == "a.md: cannot read"


def test_a_refused_hard_link_does_not_keep_the_index_dirty(built, workspace_dir, tmp_path) -> None:
    """A hard-linked note is refused at each sync (its bytes are shared with a file
    outside the memory); ``status`` after that sync says the index is up to date,
    not dirty forever (every search would start a sync for nothing)."""
    _, env = built
    outside = tmp_path / "outside.md"
    outside.write_text("- shared bytes\n")
    os.link(outside, workspace_dir / "memory" / "hard.md")
    assert run_cli("index", "-w", str(workspace_dir), env=env).returncode == 0
    status = json.loads(run_cli("status", "-w", str(workspace_dir), "--json", env=env).stdout)
    assert "memory/hard.md" in status["file_errors"], status["file_errors"]
    assert status["dirty"] is False


def test_index_check_says_what_it_checked(built, workspace_dir) -> None:
    """``index --check`` on a sound index says so (text and JSON, either order);
    without ``--check`` the JSON says only the pages were checked."""
    _, env = built
    text = run_cli("index", "--check", "-w", str(workspace_dir), env=env)
    assert text.returncode == 0, text.stderr
    assert "checked: nothing damaged (pages, FTS5 against the text" in text.stdout
    data = json.loads(
        run_cli("--json", "-w", str(workspace_dir), "index", "--check", env=env).stdout
    )
    assert data["checked"] == "thorough" and data["recovered"] is None
    plain = json.loads(run_cli("index", "-w", str(workspace_dir), "--json", env=env).stdout)
    assert plain["checked"] == "pages"
    assert "checked:" not in run_cli("index", "-w", str(workspace_dir), env=env).stdout


def test_a_file_indexed_with_a_warning_keeps_it_in_status(built, workspace_dir) -> None:
    """A note that is not valid UTF-8 is indexed with U+FFFD: ``status`` (and the app,
    which reads the same records) lists the warning for as long as the file is so,
    counts the file as indexed, and is not dirty; fixed, the warning goes."""
    _, env = built
    note = workspace_dir / "memory" / "latin1.md"
    note.write_bytes(b"# latin1 caf\xe9 notes\n")
    assert run_cli("index", "-w", str(workspace_dir), env=env).returncode == 0
    status = json.loads(run_cli("status", "-w", str(workspace_dir), "--json", env=env).stdout)
    assert "not valid UTF-8 at byte 12" in status["file_errors"]["memory/latin1.md"]
    assert status["files"] == 3 and status["dirty"] is False
    found = json.loads(_search(workspace_dir, env, "--json", "--min-score", "0").stdout)
    assert found["results"]  # the rest of the index answers as before
    note.write_text("# latin1 café notes\n", encoding="utf-8")
    assert run_cli("index", "-w", str(workspace_dir), env=env).returncode == 0
    status = json.loads(run_cli("status", "-w", str(workspace_dir), "--json", env=env).stdout)
    assert "memory/latin1.md" not in status["file_errors"]
