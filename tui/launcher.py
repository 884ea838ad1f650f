"""The ``memdeck`` console script: the engine's CLI with the terminal app plugged in.

The engine stays UI-free (``tests/engine/test_import_hygiene.py``); this is the
one place that joins the two. Headless commands (``status``, ``search``…) never
import Textual even from here: ``tui.app`` is imported only when the app opens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.cli.main import main as cli_main


def _run_app(engine: Any) -> int:
    from tui.app import run_app

    return run_app(engine)


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(argv, app_runner=_run_app)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
