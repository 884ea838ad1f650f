"""The engine is a UI-free library: importing all of it must not pull in Textual or Rich.

The walk covers every module under ``engine/`` (pkgutil), so a new module is checked
the day it is added; ``lint-imports`` checks the same rule statically, this test
checks what really ends up in ``sys.modules`` at run time (lazy imports included
only where a module runs them on import).
"""

import json
import subprocess
import sys

# httpx imports its optional command-line client (which uses rich) whenever click is
# installed, as it is in the dev environment (import-linter needs it). That import is
# httpx's, not the engine's: block it so the test sees only what engine code pulls in.
_WALK = """
import importlib, json, pkgutil, sys
sys.modules["httpx._main"] = None
import engine
names = ["engine"]
for info in pkgutil.walk_packages(engine.__path__, "engine."):
    if info.name.endswith("__main__"):
        continue  # running it would start the CLI
    importlib.import_module(info.name)
    names.append(info.name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in {"textual", "rich", "tui"})
print(json.dumps({"modules": names, "ui": bad}))
"""


def _walk() -> dict[str, list[str]]:
    out = subprocess.run([sys.executable, "-c", _WALK], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_engine_never_imports_ui_libraries() -> None:
    result = _walk()
    assert result["ui"] == [], f"engine imported UI modules: {result['ui']}"


def test_the_walk_reaches_every_engine_package() -> None:
    """Guards the test above: a walk that silently imported nothing would pass it."""
    modules = set(_walk()["modules"])
    for expected in (
        "engine.cli.main",
        "engine.config.reader",
        "engine.index.sync_service",
        "engine.memory.dreaming.service",
        "engine.qmd.backend",
        "engine.embeddings.remote",
        "engine.search.retrieve",
        "engine.search.rank",
        "engine.tools",
    ):
        assert expected in modules
    assert len(modules) > 60


def test_no_module_imports_itself_back() -> None:
    """No import circle between modules of engine/ or tui/ (type-only imports aside):
    a circle hides which module a change belongs to. Strongly connected parts of
    the import graph (grimp, which lint-imports uses) must all be single modules."""
    import grimp

    graph = grimp.build_graph("engine", "tui", exclude_type_checking_imports=True)
    circles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != module and graph.chain_exists(imported, module):
                circles.append((module, imported))
    assert circles == []
