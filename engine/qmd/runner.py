"""Running the ``qmd`` CLI: its own home, a neutral cwd, a hard timeout.

Every qmd call can go wrong in a way memdeck must survive: the binary is
missing, its Node is too old (qmd 2.8.3 on Node 20 segfaults on every database
command), it exits non-zero, or it hangs (offline, its model downloads stall for
minutes). So each call runs in a new process group with a deadline; at the
deadline the whole group is killed — qmd may have spawned helpers — and the
caller gets a :class:`QmdError` whose ``kind`` says which failure it was.

qmd is always run with ``--index index`` and from a directory of its own: a
``.qmd/`` folder in the cwd or any parent would otherwise take over the index.
Its LLM features are switched off with ``CI=1`` except for the commands that
need an embedding model (``embed``, ``vsearch``, ``query``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: qmd subcommands that load a GGUF model; everything else runs with CI=1.
LLM_COMMANDS = frozenset({"embed", "vsearch", "query"})
#: Where scripts/install_qmd.sh puts its launcher in a source checkout.
PROJECT_LAUNCHER = Path(__file__).resolve().parents[2] / ".cache" / "qmd" / "bin" / "qmd"
_KILL_GRACE_S = 0.3
_DRAIN_S = 1.0
_SIGSEGV_CODES = (-signal.SIGSEGV, 128 + signal.SIGSEGV)


class QmdError(RuntimeError):
    """A qmd call that did not produce a usable answer.

    ``kind`` is one of ``missing`` (no binary), ``node`` (its Node cannot run
    qmd), ``exit`` (non-zero exit), ``timeout`` (killed at the deadline) and
    ``output`` (stdout was not the JSON qmd promises).
    """

    def __init__(self, kind: str, message: str, *, stderr: str = "", returncode: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.stderr = stderr
        self.returncode = returncode


@dataclass(frozen=True)
class QmdRun:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float


@dataclass(frozen=True)
class QmdHome:
    """The self-contained qmd home of one agent: ``<state>/agents/<id>/qmd``."""

    root: Path

    @property
    def config_home(self) -> Path:
        return self.root / "xdg-config"

    @property
    def cache_home(self) -> Path:
        return self.root / "xdg-cache"

    @property
    def index_yml(self) -> Path:
        return self.config_home / "qmd" / "index.yml"

    @property
    def run_dir(self) -> Path:
        """The neutral cwd: nothing but qmd's own files above or in it."""
        return self.root / "run"

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    def create(self) -> None:
        for d in (self.config_home, self.cache_home, self.run_dir):
            d.mkdir(parents=True, exist_ok=True)


def resolve_command(command: str, env: Mapping[str, str]) -> list[str]:
    """The argv prefix for ``memory.qmd.command`` (which may carry arguments).

    A bare ``qmd`` is looked up on PATH, then in the project's own install
    (``scripts/install_qmd.sh``), so a source checkout works without PATH edits.
    """
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise QmdError(
            "missing", f"memory.qmd.command {command!r} cannot be parsed: {exc}"
        ) from None
    if not argv:
        raise QmdError("missing", "memory.qmd.command is empty")
    exe = argv[0]
    if "/" in exe:
        path = Path(os.path.expanduser(exe))
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise QmdError("missing", f"qmd binary not found or not executable: {path}")
        return [str(path), *argv[1:]]
    found = shutil.which(exe, path=env.get("PATH", os.defpath))
    if found is None and exe == "qmd" and os.access(PROJECT_LAUNCHER, os.X_OK):
        found = str(PROJECT_LAUNCHER)
    if found is None:
        raise QmdError(
            "missing",
            f"qmd binary not found: {exe!r} is not on PATH "
            "(run scripts/install_qmd.sh or set memory.qmd.command)",
        )
    return [found, *argv[1:]]


def qmd_env(home: QmdHome, base: Mapping[str, str], *, llm: bool) -> dict[str, str]:
    """The environment of a qmd call: its own XDG dirs, no colour, no stray QMD_* overrides."""
    env = {k: v for k, v in base.items() if not k.startswith("QMD_") and k != "CI"}
    env["XDG_CONFIG_HOME"] = str(home.config_home)
    env["XDG_CACHE_HOME"] = str(home.cache_home)
    env["NO_COLOR"] = "1"
    if not llm:
        env["CI"] = "1"
    return env


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _tail(text: str, limit: int = 400) -> str:
    text = _ANSI.sub("", text).strip()
    return text if len(text) <= limit else "…" + text[-limit:]


class QmdRunner:
    """Runs qmd subcommands for one home; ``close()`` kills whatever still runs."""

    def __init__(self, command: str, home: QmdHome, env: Mapping[str, str] = os.environ):
        self.command = command
        self.home = home
        self.base_env = dict(env)
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._closed = False

    def argv(self, args: Sequence[str]) -> list[str]:
        prefix = resolve_command(self.command, self.base_env)
        # --index right after the subcommand: it also stops the .qmd/ lookup.
        return [*prefix, args[0], "--index", "index", *args[1:]]

    def run(self, args: Sequence[str], *, timeout_s: float) -> QmdRun:
        """Run ``qmd <args>``; raise QmdError unless it exits 0 within ``timeout_s``."""
        if self._closed:
            raise QmdError("exit", "qmd runner is closed")
        argv = self.argv(args)
        self.home.create()
        env = qmd_env(self.home, self.base_env, llm=args[0] in LLM_COMMANDS)
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=self.home.run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise QmdError("missing", f"cannot start qmd ({argv[0]}): {exc}") from None
        with self._lock:
            self._procs.add(proc)
        try:
            try:
                out, err = proc.communicate(timeout=max(0.01, timeout_s))
            except subprocess.TimeoutExpired:
                self._kill_group(proc)
                out, err = self._drain(proc)
                raise QmdError(
                    "timeout",
                    f"qmd {args[0]} timed out after {timeout_s * 1000:.0f} ms "
                    "(process group killed)",
                    stderr=_tail(err.decode("utf-8", errors="replace")),
                ) from None
        finally:
            with self._lock:
                self._procs.discard(proc)
        run = QmdRun(
            tuple(argv),
            proc.returncode,
            out.decode("utf-8", errors="replace"),
            err.decode("utf-8", errors="replace"),
            time.monotonic() - t0,
        )
        if run.returncode != 0:
            raise self._exit_error(args[0], run)
        return run

    def _exit_error(self, sub: str, run: QmdRun) -> QmdError:
        rc = run.returncode
        detail = _tail(run.stderr) or _tail(run.stdout)
        if rc in _SIGSEGV_CODES:
            return QmdError(
                "node",
                f"qmd {sub} crashed with SIGSEGV (exit {rc}): qmd 2.8.3 needs Node ≥ 22 "
                "(on Node 20 every database command segfaults); run scripts/install_qmd.sh",
                stderr=detail,
                returncode=rc,
            )
        lowered = run.stderr.lower()
        if "node_module_version" in lowered or "unsupported engine" in lowered:
            return QmdError(
                "node",
                f"qmd {sub} cannot run on this Node (exit {rc}): {detail}",
                stderr=detail,
                returncode=rc,
            )
        if rc < 0:
            name = signal.Signals(-rc).name if -rc in signal.valid_signals() else str(-rc)
            return QmdError("exit", f"qmd {sub} was killed by {name}", stderr=detail, returncode=rc)
        return QmdError(
            "exit",
            f"qmd {sub} exited with {rc}: {detail or 'no output'}",
            stderr=detail,
            returncode=rc,
        )

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGTERM the group, then SIGKILL whatever is left after a short grace."""
        for sig, wait in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, _DRAIN_S)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait)
                # The leader is gone; children in the group may not be.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                return
            except subprocess.TimeoutExpired:
                continue

    @staticmethod
    def _drain(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
        try:
            return proc.communicate(timeout=_DRAIN_S)
        except (subprocess.TimeoutExpired, ValueError):
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            return b"", b""

    def close(self) -> None:
        """Kill every qmd process group still running (engine shutdown)."""
        self._closed = True
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            if proc.poll() is None:
                self._kill_group(proc)
