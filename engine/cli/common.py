"""What every ``memdeck`` subcommand shares: exit codes, errors, output, opening the engine.

The command modules (:mod:`engine.cli.main`, :mod:`engine.cli.dreaming`) import
from here rather than from each other, so adding a command never creates an
import cycle and every command exits with the same codes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from engine.core import Engine

#: 0 ok, 1 usage or configuration error, 2 runtime failure (documented in README).
EXIT_OK: Final = 0
EXIT_USAGE: Final = 1
EXIT_RUNTIME: Final = 2


class UsageError(Exception):
    """A command line that cannot run as given; ``main`` prints it and exits 1."""


def print_json(data: Any) -> None:
    """The ``--json`` spelling every command uses: indented, UTF-8, dates as strings."""
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """``data`` as JSON under ``--json``, else the human ``text``."""
    if args.json:
        print_json(data)
    else:
        print(text)


def open_engine(args: argparse.Namespace, workspace: Path | None = None) -> Engine:
    """The engine for ``--config/--workspace/--agent``; config warnings go to stderr."""
    from engine.config.loader import load_settings
    from engine.core import Engine

    settings = load_settings(
        config_path=args.config, workspace=workspace or args.workspace, agent_id=args.agent
    )
    for warning in (*settings.warnings, *settings.openclaw_rejections):
        print(f"memdeck: warning: {warning}", file=sys.stderr)
    return Engine(settings)
