"""Every way qmd can fail ends in a builtin answer within ``timeoutMs`` + 1 s.

The failing "qmd" binaries are small scripts written here: one that does not
exist, one that crashes like qmd 2.8.3 on Node 20 (the real qmd under the
machine's own Node when that is older than 22), one that exits non-zero, one
that hangs with a child process, and one that prints garbage. A wrapper around
the real qmd shows the fallback ending as soon as qmd answers again.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.qmd.runner import PROJECT_LAUNCHER
from engine.status import EngineStatus
from engine.tools import memory_search
from tests.engine.test_qmd_runner import gone, script
from tests.integration.test_qmd_backend import QMD_BIN, World, requires_qmd

TIMEOUT_MS = 1500
QUERY = "Postgres pgbouncer port"


def _system_node_major() -> int | None:
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "-p", "process.versions.node"], capture_output=True, text=True)
    return int(out.stdout.split(".")[0]) if out.returncode == 0 else None


def old_node_qmd(dir: Path) -> Path:
    """qmd 2.8.3 run by the machine's Node < 22 (it segfaults), or a stand-in that does."""
    major = _system_node_major()
    entry = PROJECT_LAUNCHER.parents[1] / "pkg/node_modules/@tobilu/qmd/dist/cli/qmd.js"
    if major is not None and major < 22 and entry.is_file():
        return script(dir, "qmd-node-old", f'exec node "{entry}" "$@"\n')
    return script(dir, "qmd-node-old", "kill -SEGV $$\n")


def broken_qmd(dir: Path, when: str, message: str) -> tuple[Path, Path]:
    """The real qmd behind a switch: while the flag file exists and ``when`` holds, it fails."""
    flag = dir / "broken"
    flag.touch()
    wrapper = script(
        dir,
        "qmd-broken",
        f'if {when} && [ -e "{flag}" ]; then echo "{message}" >&2; exit 4; fi\n'
        f'exec "{QMD_BIN}" "$@"\n',
    )
    return flag, wrapper


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.close()


def _fallback_answer(world: World, command: str) -> tuple[dict, float, EngineStatus]:
    engine = world.engine({"command": command, "limits": {"timeoutMs": TIMEOUT_MS}})
    t0 = time.monotonic()
    out = memory_search(engine, QUERY)
    elapsed = time.monotonic() - t0
    return out, elapsed, engine.status()


@pytest.mark.parametrize(
    ("kind", "make", "reason"),
    [
        ("missing", lambda d: d / "not-installed" / "qmd", "not found"),
        ("node", old_node_qmd, "Node ≥ 22"),
        (
            "exit",
            lambda d: script(d, "qmd-exit", "echo 'database is locked' >&2; exit 2\n"),
            "exited with 2: database is locked",
        ),
        (
            "timeout",
            lambda d: script(d, "qmd-hang", f"sleep 60 & echo $! >> {d}/pids\nsleep 60\n"),
            f"timed out after {TIMEOUT_MS} ms",
        ),
        (
            "output",
            lambda d: script(d, "qmd-garbage", "echo '<html>502 Bad Gateway</html>'\n"),
            "not a JSON array",
        ),
    ],
    ids=["missing", "node", "exit", "timeout", "output"],
)
def test_each_failure_is_answered_by_the_builtin_index(world, kind, make, reason):
    command = make(world.root)
    out, elapsed, st = _fallback_answer(world, str(command))
    assert elapsed <= TIMEOUT_MS / 1000 + 1.0, f"{kind}: builtin answer took {elapsed:.2f}s"
    assert out["backend"] == "builtin"
    assert out["backendFallback"]["from"] == "qmd" and reason in out["backendFallback"]["reason"]
    assert out["results"][0]["path"] == "MEMORY.md"
    assert "Postgres listens on port 5433" in out["results"][0]["snippet"]
    assert st.backend == "qmd" and st.fallback == "builtin"
    assert reason in st.fallback_reason
    assert st.qmd.failure_kind == kind and st.qmd.healthy is False
    if kind == "timeout":
        for pid in map(int, (world.root / "pids").read_text().split()):
            assert gone(pid), "the hung qmd's child outlived the timeout"


def test_a_hung_qmd_is_not_asked_again_for_every_query(world):
    hang = script(world.root, "qmd-hang", "sleep 60\n")
    out, elapsed, _ = _fallback_answer(world, str(hang))
    assert out["backend"] == "builtin" and elapsed >= TIMEOUT_MS / 1000
    engine = world.engines[-1]
    t0 = time.monotonic()
    again = memory_search(engine, QUERY)
    assert again["backend"] == "builtin" and time.monotonic() - t0 < 0.5  # cooldown
    assert "timed out" in again["backendFallback"]["reason"]


@requires_qmd
def test_fallback_lasts_until_qmd_answers_again(world):
    flag, wrapper = broken_qmd(world.root, "true", "qmd: index is busy")
    engine = world.engine({"command": str(wrapper)})
    first = memory_search(engine, QUERY)
    assert first["backend"] == "builtin" and "index is busy" in first["backendFallback"]["reason"]
    assert engine.status().fallback == "builtin"
    second = memory_search(engine, QUERY)
    assert second["backend"] == "builtin"  # still failing: still the fallback
    flag.unlink()
    third = memory_search(engine, QUERY)
    assert third["backend"] == "qmd" and "backendFallback" not in third
    assert third["results"][0]["path"] == "MEMORY.md"
    st = engine.status()
    assert st.fallback is None and st.fallback_reason is None
    assert st.qmd.healthy is True and st.qmd.fallbacks == 2


@requires_qmd
def test_a_fallback_is_seen_by_the_next_process_until_qmd_answers(world):
    """Each CLI command is a process of its own: a search that fell back is still
    shown by the next engine's status (``memdeck status``), until a search succeeds."""
    flag, wrapper = broken_qmd(world.root, "true", "qmd: index is busy")
    first = world.engine({"command": str(wrapper)})
    assert memory_search(first, QUERY)["backend"] == "builtin"
    first.close()
    later = world.engine({"command": str(wrapper)}, sync=False)
    st = later.status()
    assert st.fallback == "builtin" and "index is busy" in (st.fallback_reason or "")
    flag.unlink()
    assert memory_search(later, QUERY)["backend"] == "qmd"
    later.close()
    fresh = world.engine({"command": str(wrapper)}, sync=False)
    assert fresh.status().fallback is None  # the success ended it for every process


def test_a_hanging_boot_refresh_does_not_block_start_or_search(world):
    hang = script(world.root, "qmd-hang", "sleep 60\n")
    t0 = time.monotonic()
    engine = world.engine(
        {"command": str(hang), "update": {"onBoot": True}, "limits": {"timeoutMs": TIMEOUT_MS}}
    )
    assert time.monotonic() - t0 < 10  # the builtin sync; qmd's boot runs behind it
    t0 = time.monotonic()
    out = memory_search(engine, QUERY)
    assert out["backend"] == "builtin"
    assert time.monotonic() - t0 <= TIMEOUT_MS / 1000 + 1.0
    t0 = time.monotonic()
    engine.close()  # kills the hung boot refresh's process group
    assert time.monotonic() - t0 < 5


@requires_qmd
def test_a_working_update_does_not_end_a_search_fallback(world):
    flag, wrapper = broken_qmd(world.root, '[ "$1" = search ]', "fts5: corrupt")
    engine = world.engine({"command": str(wrapper)})
    assert memory_search(engine, QUERY)["backend"] == "builtin"
    assert engine.qmd.refresh("manual") is True  # update works...
    st = engine.status()
    assert st.fallback == "builtin" and "fts5: corrupt" in st.fallback_reason  # ...search not
    flag.unlink()
    assert memory_search(engine, QUERY)["backend"] == "qmd"
    assert engine.status().fallback is None
