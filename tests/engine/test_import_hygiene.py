"""The engine is a UI-free library: importing all of it must not pull in Textual or Rich."""

import subprocess
import sys

ENGINE_MODULES = [
    "engine",
    "engine.cli.main",
    "engine.config.loader",
    "engine.core",
    "engine.tools",
    "engine.search.pipeline",
    "engine.index.indexer",
    "engine.index.store",
    "engine.workspace.files",
    "engine.cli.demo",
    "engine.cli.progress_bar",
    "engine.embeddings.factory",
]


def test_engine_never_imports_ui_libraries() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in ENGINE_MODULES)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'textual', 'rich', 'tui'})\n"
        + "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"engine imported UI modules: {out.stdout}"
