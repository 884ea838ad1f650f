"""The test tiers: markers each test gets from what it uses (a pytest plugin).

A test is marked

- ``pg`` when it needs the PostgreSQL server (``pg_server``, ``pg_dsn``, or
  ``tests.pg_server.start_server`` called directly),
- ``model`` when it needs the converted MiniLM GGUF (``minilm_gguf``),
- ``openclaw`` when it runs OpenClaw itself (the ``openclaw`` reference),
- ``subprocess`` when it, one of its fixtures or a helper they call starts a process
  (``subprocess``, ``os.fork``, the MCP SDK's stdio client, a qmd the engine runs):
  the ``memdeck`` CLI, ``memdeck mcp``, qmd, a lock holder, ...,
- ``slow`` when it runs the Textual app (``snap_compare``, ``App.run_test``) or says so
  (``@pytest.mark.slow``: in-process, but a second of CPU or seconds of waiting).

The helpers are found by reading code, not by running it: from the test function and
each fixture it uses, every global name that is a function or class of this test tree
is followed into its own code (``HELPER_MARKERS`` names the helpers that stand for a
tier, such as the engines whose backend is the real qmd). ``--tier fast`` runs what
carries none of these markers: no server, model or process (``make test-fast``);
``--tier rest`` the others.

The reading is checked while the tests run: a test that starts a process without
carrying ``subprocess`` (or ``pg``/``openclaw``, whose servers are processes) fails
at teardown, so the fast tier cannot silently grow a process.

Under pytest-xdist (``-n 2 --dist loadgroup``) the tests that share a module-scoped
fixture go to one worker (an ``xdist_group``), so it is built once, and the costly
tiers are handed out first, so both workers end on short tests.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

#: the tiers below ``fast``; ``make test-fast`` deselects all of them
TIER_MARKERS = ("pg", "model", "openclaw", "subprocess", "slow")
#: markers under which a test may start processes
SPAWNING = {"pg", "openclaw", "subprocess"}

FIXTURE_MARKERS = {
    "pg_server": "pg",
    "pg_dsn": "pg",
    "minilm_gguf": "model",
    "openclaw": "openclaw",
}

#: helpers of this test tree (file under tests/, qualified name) that stand for a tier
HELPER_MARKERS = {
    ("pg_server.py", "start_server"): "pg",
    ("openclaw/reference.py", "reference"): "openclaw",
    # an executable for the engine's qmd runner to start
    ("engine/test_qmd_runner.py", "script"): "subprocess",
    # engines whose backend is the real qmd CLI
    ("integration/test_qmd_backend.py", "World"): "subprocess",
}

#: fixtures and names that run the Textual app (Pilot): a second or more each
SLOW_FIXTURES = {"snap_compare"}
SLOW_NAMES = {"run_test"}

#: names that start a process wherever they appear (``import subprocess`` in a function,
#: ``os.fork()``, ``asyncio.create_subprocess_exec(...)``)
SPAWN_NAMES = {
    "subprocess",
    "multiprocessing",
    "Popen",
    "create_subprocess_exec",
    "create_subprocess_shell",
    "fork",
    "posix_spawn",
}


def _triggers() -> dict[int, str]:
    """Objects from outside this tree that start processes (the MCP SDK's stdio client
    only when a test module imported it: importing it here would cost every run a
    second)."""
    found = {id(subprocess): "subprocess", id(multiprocessing): "subprocess"}
    stdio = sys.modules.get("mcp.client.stdio")
    if stdio is not None:
        found[id(stdio.StdioServerParameters)] = "subprocess"
        found[id(stdio.stdio_client)] = "subprocess"
    return found


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


TESTS = Path(__file__).resolve().parent


def _ours(obj: object) -> bool:
    """Defined in this test tree (test modules import as ``test_x``, helpers as ``tests.x``)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    return _in_tests(module)


def _in_tests(module: types.ModuleType | None) -> bool:
    path = getattr(module, "__file__", None)
    return path is not None and Path(path).resolve().is_relative_to(TESTS)


def _helper_key(obj: Any) -> tuple[str, str]:
    """(file relative to tests/, qualified name): the same for every import of a module."""
    path = Path(sys.modules[obj.__module__].__file__ or "").resolve()
    return path.relative_to(TESTS).as_posix(), getattr(obj, "__qualname__", "")


def _functions_of(cls: type) -> Iterator[Callable[..., Any]]:
    for value in vars(cls).values():
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            value = value.fget
        if isinstance(value, types.FunctionType):
            yield value


class _Reader:
    """Markers reachable from a function, memoised per function."""

    def __init__(self) -> None:
        self.triggers = _triggers()
        self.memo: dict[int, set[str]] = {}

    def markers(self, func: Any) -> set[str]:
        func = getattr(func, "__wrapped__", func)
        key = id(func)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = found = set()  # a cycle reads as "nothing more"
        code = getattr(func, "__code__", None)
        if code is None:
            return found
        env = func.__globals__
        for inner in _codes(code):
            names = set(inner.co_names)
            if SPAWN_NAMES & names:
                found.add("subprocess")
            if SLOW_NAMES & names:
                found.add("slow")
            ours = [env[n] for n in names if isinstance(env.get(n), types.ModuleType)]
            ours = [m for m in ours if _in_tests(m)]
            for name in names:
                if name in env:
                    found |= self.follow(env[name])
                for module in ours:  # helper_module.helper(...)
                    if hasattr(module, name):
                        found |= self.follow(getattr(module, name))
        return found

    def follow(self, obj: Any) -> set[str]:
        marker = self.triggers.get(id(obj))
        if marker is not None:
            return {marker}
        if not _ours(obj):
            return set()
        marker = HELPER_MARKERS.get(_helper_key(obj))
        if marker is not None:
            return {marker}
        if isinstance(obj, types.FunctionType):
            return self.markers(obj)
        if isinstance(obj, type):
            key = id(obj)
            if key not in self.memo:
                self.memo[key] = set()
                self.memo[key] = set().union(*(self.markers(f) for f in _functions_of(obj)))
            return self.memo[key]
        return set()


def tier_markers(item: pytest.Item, reader: _Reader) -> set[str]:
    """The tier markers ``item`` earns from its fixtures and the code it calls."""
    names = getattr(item, "fixturenames", ())
    found = {FIXTURE_MARKERS[n] for n in names if n in FIXTURE_MARKERS}
    if SLOW_FIXTURES & set(names):
        found.add("slow")
    func = getattr(item, "function", None)
    if func is not None:
        found |= reader.markers(func)
    info = getattr(item, "_fixtureinfo", None)
    for name in names:
        if name in FIXTURE_MARKERS or info is None:
            continue
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if _ours(fixturedef.func):
                found |= reader.markers(fixturedef.func)
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=("all", "fast", "rest"),
        default="all",
        help="fast: only tests with none of the markers pg, model, openclaw, subprocess, "
        "slow (no server, model or process; about a minute); rest: the others; all: both",
    )


def _scoped_group(item: pytest.Item) -> str | None:
    """The module (or class) of a module- or class-scoped fixture of this tree that the
    test uses: under xdist its tests share one worker, so the fixture is built once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in item.fixturenames:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if fixturedef.scope in ("module", "class", "package") and _ours(fixturedef.func):
                return item.nodeid.split("::")[0]
    return None


#: under xdist, the order in which single tests are handed out: the costly first, so
#: that the run ends on short tests and both workers finish together
COST_ORDER = ("openclaw", "subprocess", "pg", "model", "slow")


def _cost_rank(item: pytest.Item) -> int:
    have = {m.name for m in item.iter_markers()}
    return next((i for i, name in enumerate(COST_ORDER) if name in have), len(COST_ORDER))


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reader = _Reader()
    for item in items:
        have = {m.name for m in item.iter_markers()}
        for name in sorted(tier_markers(item, reader) - have):
            item.add_marker(name)

    tier = config.getoption("--tier")
    if tier != "all":
        keep, drop = [], []
        for item in items:
            fast = not {m.name for m in item.iter_markers()} & set(TIER_MARKERS)
            (keep if fast == (tier == "fast") else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    if hasattr(config, "workerinput"):  # an xdist worker (every worker sorts alike)
        for item in items:
            group = _scoped_group(item)
            if group is not None and not item.get_closest_marker("xdist_group"):
                item.add_marker(pytest.mark.xdist_group(group))
        # per module, so a module's tests stay together (sorted() is stable)
        module_rank: dict[str, int] = {}
        for item in items:
            module = item.nodeid.split("::")[0]
            module_rank[module] = min(module_rank.get(module, 99), _cost_rank(item))
        items.sort(key=lambda item: module_rank[item.nodeid.split("::")[0]])


# -- the subprocess marker, checked while the tests run ---------------------------------
_spawned: list[str] = []
#: recording during a test's setup and call; not in its teardown, where the last test
#: on a worker also stops the session's servers (pg_ctl stop)
_recording = False
_real_execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]
_real_fork = os.fork


#: the standard library's own probes (ctypes.util.find_library runs ldconfig) are no
#: process a test starts
_PROBES = (os.path.join("ctypes", "util.py"), os.sep + "platform.py")


def _recording_execute_child(self: subprocess.Popen[Any], args: Any, *rest: Any) -> Any:
    caller = sys._getframe(1)
    while caller is not None and caller.f_code.co_filename.endswith(os.sep + "subprocess.py"):
        caller = caller.f_back
    if _recording and (caller is None or not caller.f_code.co_filename.endswith(_PROBES)):
        _spawned.append(args if isinstance(args, str) else " ".join(map(str, args)))
    return _real_execute_child(self, args, *rest)


def _recording_fork() -> int:
    if _recording:
        _spawned.append("os.fork()")
    return _real_fork()


def pytest_configure(config: pytest.Config) -> None:
    subprocess.Popen._execute_child = _recording_execute_child  # type: ignore[attr-defined]
    os.fork = _recording_fork


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen._execute_child = _real_execute_child  # type: ignore[attr-defined]
    os.fork = _real_fork


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _spawned.clear()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    global _recording
    _recording = True
    try:
        return (yield)
    finally:
        _recording = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    global _recording
    _recording = True
    try:
        return (yield)
    finally:
        _recording = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report: pytest.TestReport = yield
    if call.when != "teardown" or not _spawned or report.failed:
        return report
    if SPAWNING & {m.name for m in item.iter_markers()}:
        return report
    report.outcome = "failed"
    report.longrepr = (
        f"{item.nodeid} started {len(_spawned)} process(es), the first: "
        f"{_spawned[0][:300]}\nbut it is not marked subprocess, so it would run in the fast "
        "tier: start processes through a helper the tier reader sees (tests/tiers.py) or "
        "mark the test @pytest.mark.subprocess"
    )
    return report
