"""Running qmd: command lookup, environment, exit-code mapping, and the process-group kill.

The "qmd" here are small shell scripts written by the tests: they stand for a
binary that exits non-zero, crashes, or hangs with a child process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from engine.qmd.runner import QmdError, QmdHome, QmdRunner, qmd_env, resolve_command


def script(dir: Path, name: str, body: str) -> Path:
    """An executable /bin/sh script standing in for qmd."""
    path = dir / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def home(tmp_path: Path) -> QmdHome:
    return QmdHome(tmp_path / "state" / "agents" / "main" / "qmd")


def test_missing_binary(tmp_path, home):
    with pytest.raises(QmdError) as info:
        resolve_command(str(tmp_path / "nope" / "qmd"), {"PATH": "/usr/bin"})
    assert info.value.kind == "missing" and "not found" in str(info.value)
    with pytest.raises(QmdError) as info:
        resolve_command("qmd-not-installed-anywhere", {"PATH": str(tmp_path)})
    assert info.value.kind == "missing" and "scripts/install_qmd.sh" in str(info.value)
    runner = QmdRunner("qmd-not-installed-anywhere", home, {"PATH": str(tmp_path)})
    with pytest.raises(QmdError) as info:
        runner.run(["search", "x"], timeout_s=1)
    assert info.value.kind == "missing"


def test_command_with_arguments_and_path_lookup(tmp_path):
    exe = script(tmp_path, "myqmd", "exit 0\n")
    assert resolve_command("myqmd --flag 'a b'", {"PATH": str(tmp_path)}) == [
        str(exe),
        "--flag",
        "a b",
    ]


def test_environment_cwd_and_index_flag(tmp_path, home):
    out = tmp_path / "seen"
    exe = script(
        tmp_path,
        "qmd",
        f'printf "%s\\n" "$PWD" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$NO_COLOR" '
        f'"${{CI:-unset}}" "${{QMD_CONFIG_DIR:-unset}}" "$*" > {out}\n',
    )
    base = {"PATH": "/usr/bin:/bin", "QMD_CONFIG_DIR": "/hijack", "CI": "", "KEEP": "1"}
    runner = QmdRunner(str(exe), home, base)
    runner.run(["search", "--json", "--", "q"], timeout_s=5)
    cwd, cfg, cache, no_color, ci, qmd_dir, args = out.read_text().splitlines()
    assert Path(cwd) == home.run_dir  # never the user's cwd (a .qmd/ there would take over)
    assert (cfg, cache) == (str(home.config_home), str(home.cache_home))
    assert (no_color, ci, qmd_dir) == ("1", "1", "unset")
    assert args == "search --index index --json -- q"
    runner.run(["embed"], timeout_s=5)  # LLM commands run without CI
    assert out.read_text().splitlines()[4] == "unset"
    env = qmd_env(home, base, llm=True)
    assert env["KEEP"] == "1" and "CI" not in env


@pytest.mark.parametrize(
    ("body", "kind", "needle"),
    [
        ("echo 'Collection not found: x' >&2; exit 3\n", "exit", "exited with 3"),
        ("kill -SEGV $$\n", "node", "Node ≥ 22"),
        ("echo boom >&2; exit 139\n", "node", "SIGSEGV"),
        ("echo 'was compiled against NODE_MODULE_VERSION 127' >&2; exit 1\n", "node", "Node"),
        ("kill -KILL $$\n", "exit", "SIGKILL"),
    ],
)
def test_exit_codes(tmp_path, home, body, kind, needle):
    runner = QmdRunner(str(script(tmp_path, "qmd", body)), home, {"PATH": "/usr/bin:/bin"})
    with pytest.raises(QmdError) as info:
        runner.run(["search", "q"], timeout_s=5)
    assert info.value.kind == kind
    assert needle in str(info.value)


def test_timeout_kills_the_whole_process_group(tmp_path, home):
    pids = tmp_path / "pids"
    exe = script(
        tmp_path,
        "qmd",
        # a child that would outlive its parent, then the parent hangs too
        f"sleep 60 & echo $! > {pids}\nsleep 60\n",
    )
    runner = QmdRunner(str(exe), home, {"PATH": "/usr/bin:/bin"})
    t0 = time.monotonic()
    with pytest.raises(QmdError) as info:
        runner.run(["search", "q"], timeout_s=0.5)
    elapsed = time.monotonic() - t0
    assert info.value.kind == "timeout" and "process group killed" in str(info.value)
    assert elapsed < 0.5 + 1.0
    assert gone(int(pids.read_text())), "the hung qmd's child survived the timeout"


def test_close_kills_running_calls(tmp_path, home):
    import threading

    exe = script(tmp_path, "qmd", "sleep 60\n")
    runner = QmdRunner(str(exe), home, {"PATH": "/usr/bin:/bin"})
    errors: list[QmdError] = []

    def call() -> None:
        try:
            runner.run(["update"], timeout_s=60)
        except QmdError as exc:
            errors.append(exc)

    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    runner.close()
    t.join(timeout=5)
    assert not t.is_alive() and time.monotonic() - t0 < 3
    assert errors and errors[0].kind == "exit"


def gone(pid: int, wait_s: float = 2.0) -> bool:
    """True once ``pid`` no longer runs (a zombie counts as gone), polling up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split()[2] == "Z":
                    return True
        except (ProcessLookupError, OSError):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
