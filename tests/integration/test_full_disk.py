"""A full disk, a read-only state folder and an index path that is a folder.

The full disk is real: the state folder is an 8 MiB tmpfs mounted for the test
and filled to the last byte (``mount -t tmpfs -o size=8m``); the read-only
state folder is the same tmpfs remounted ``ro`` (root ignores permission bits,
a read-only filesystem it cannot). Where mounting is not permitted these tests
are skipped, saying so. Reading — search, get, status — must work without
writing; writing (index) must fail naming the path and the remedy.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.full_disk import fill, small_tmpfs

NOTE = "# Memory\n\nDana prefers flat white coffee.\n"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "state") as mount:
        yield mount


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    (d / "MEMORY.md").write_text(NOTE)
    return d


def reads_work(ws: Path, env: dict[str, str]) -> dict:
    search = run_cli("search", "flat white", "--json", "-w", str(ws), env=env)
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout)["results"][0]["path"] == "MEMORY.md"
    get = run_cli("get", "MEMORY.md", "-w", str(ws), env=env)
    assert get.returncode == 0, get.stderr
    assert get.stdout == NOTE
    status = run_cli("status", "--json", "-w", str(ws), env=env)
    assert status.returncode == 0, status.stderr
    return json.loads(status.stdout)


def test_a_full_disk_keeps_reads_working_and_names_the_problem(small_fs: Path, ws: Path) -> None:
    env = cli_env(small_fs)
    assert run_cli("index", "-w", str(ws), env=env).returncode == 0
    index = next((small_fs / "memory").glob("*.sqlite"))
    fill(small_fs)
    st = reads_work(ws, env)
    warning = f"index opened read-only: cannot write the index {index}: the disk holding"
    assert any(w.startswith(warning) and "is full; free space there" in w for w in st["warnings"])
    (ws / "MEMORY.md").write_text(NOTE + "\nAnd tea on Fridays.\n")
    write = run_cli("index", "-w", str(ws), env=env)
    assert write.returncode == 2
    assert str(index) in write.stderr and "is full; free space there" in write.stderr


def test_a_read_only_state_folder_keeps_reads_working(small_fs: Path, ws: Path) -> None:
    env = cli_env(small_fs)
    assert run_cli("index", "-w", str(ws), env=env).returncode == 0
    index = next((small_fs / "memory").glob("*.sqlite"))
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    st = reads_work(ws, env)
    assert any("is read-only; fix its permissions" in w for w in st["warnings"]), st["warnings"]
    (ws / "MEMORY.md").write_text(NOTE + "\nAnd tea on Fridays.\n")
    write = run_cli("index", "-w", str(ws), env=env)
    assert write.returncode == 2
    assert str(index) in write.stderr and "read-only" in write.stderr


def test_an_index_path_that_is_a_folder(tmp_path: Path, ws: Path, state_dir: Path) -> None:
    env = cli_env(state_dir)
    assert run_cli("index", "-w", str(ws), env=env).returncode == 0
    index = next((state_dir / "memory").glob("*.sqlite"))
    for leftover in index.parent.glob(index.name + "*"):
        leftover.unlink()
    index.mkdir()
    get = run_cli("get", "MEMORY.md", "-w", str(ws), env=env)  # needs no index
    assert get.returncode == 0 and get.stdout == NOTE
    for args in (("search", "flat white"), ("index",)):
        r = run_cli(*args, "-w", str(ws), env=env)
        assert r.returncode == 2, r.stderr
        assert f"the index path {index} is a folder, not a file: move it away" in r.stderr


def test_the_app_engine_keeps_serving_reads_on_a_full_disk(small_fs: Path, ws: Path) -> None:
    """The app's (writable) engine opens on a full disk, answers searches, and its
    sync fails with the problem named (the monitor shows SyncFailed's error)."""
    from engine.config.loader import load_settings
    from engine.core import Engine, IndexUnavailable
    from engine.events import SyncFailed

    env = {"OPENCLAW_STATE_DIR": str(small_fs), "HOME": str(small_fs)}
    settings = load_settings(workspace=ws, env=env)
    first = Engine(settings, provider=None, env=env)
    first.sync()
    first.close()
    fill(small_fs)
    engine = Engine(settings, provider=None, env=env)
    failures: list[SyncFailed] = []
    engine.bus.subscribe(lambda e: failures.append(e) if isinstance(e, SyncFailed) else None)
    try:
        assert engine.search("flat white").results[0].path == "MEMORY.md"
        (ws / "MEMORY.md").write_text(NOTE + "\nAnd tea.\n")
        with pytest.raises(IndexUnavailable, match="is full; free space there"):
            engine.sync()
        assert failures and "is full; free space there" in failures[-1].error
        assert engine.search("flat white").results[0].path == "MEMORY.md"  # still reading
        st = engine.status()
        assert st.last_error is not None
        assert st.write_problem is not None and st.write_problem.kind == "disk full"
        assert st.to_json()["write_problem"]["kind"] == "disk full"
        (small_fs / "filler").unlink()  # the remedy: free space there
        assert engine.sync().files_indexed == 1  # writes work again ...
        assert engine.status().write_problem is None  # ... and the monitor stops saying so
        assert "And tea." in engine.search("tea").candidates[0].text
    finally:
        engine.close()


def test_status_warns_of_a_full_disk_and_a_failed_write_gives_its_log_back(
    small_fs: Path, ws: Path
) -> None:
    env = cli_env(small_fs)
    assert run_cli("index", "-w", str(ws), env=env).returncode == 0
    index = next((small_fs / "memory").glob("*.sqlite"))
    fill(small_fs)
    st = json.loads(run_cli("status", "--json", "-w", str(ws), env=env).stdout)
    assert st["write_problem"] is not None and st["write_problem"]["kind"] == "disk full"
    assert str(small_fs / "memory") in st["write_problem"]["text"]
    (ws / "MEMORY.md").write_text(NOTE + "\n" + "And tea on Fridays.\n" * 2000)
    assert run_cli("index", "-w", str(ws), env=env).returncode == 2
    wal = Path(str(index) + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # the log's pages were given back
    (small_fs / "filler").unlink()
    (ws / "MEMORY.md").write_text(NOTE)  # the Markdown shrinks back: writing works again
    again = run_cli("index", "-w", str(ws), env=env)
    assert again.returncode == 0, again.stderr


def test_a_first_build_that_cannot_fit_says_how_much_it_needs(small_fs: Path, ws: Path) -> None:
    env = cli_env(small_fs)
    (ws / "MEMORY.md").write_text(NOTE + "- a long note about nothing in particular\n" * 8000)
    out = run_cli("index", "-w", str(ws), env=env)  # ~340 KB of Markdown on an 8 MiB disk
    assert out.returncode != 0
    assert "a full rebuild of the index needs about" in out.stderr and "MB free in" in out.stderr
    assert not list((small_fs / "memory").glob("*.reindex-*"))  # refused before it started
