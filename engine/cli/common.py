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
    from engine.config.settings import Settings
    from engine.core import Engine

#: 0 ok, 1 usage or configuration error, 2 runtime failure (documented in README).
EXIT_OK: Final = 0
EXIT_USAGE: Final = 1
EXIT_RUNTIME: Final = 2


class UsageError(Exception):
    """A command line that cannot run as given; ``main`` prints it and exits 1."""


class CommandTypo(UsageError):
    """A first word that is no command and no folder (``memdeck staus``)."""


def print_json(data: Any) -> None:
    """The ``--json`` spelling every command uses: indented, UTF-8, dates as strings."""
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """``data`` as JSON under ``--json``, else the human ``text``."""
    if args.json:
        print_json(data)
    else:
        print(text)


def load_cli_settings(args: argparse.Namespace, workspace: Path | None = None) -> Settings:
    """Settings for ``--config/--workspace/--agent`` (``workspace`` overrides ``-w``)."""
    from engine.config.loader import load_settings

    return load_settings(
        config_path=args.config,
        workspace=workspace or args.workspace,
        agent_id=args.agent,
        profile=getattr(args, "profile", None),
    )


def require_workspace(settings: Settings) -> None:
    """Exit 1 naming the path when the workspace folder is missing or unusable:
    a command must not report a healthy, empty memory for a folder that is not there."""
    from engine.workspace.presence import workspace_problem

    problem = workspace_problem(settings.workspace)
    if problem is not None:
        hint = " (create it, or pass --workspace DIR)" if problem.creatable else ""
        raise UsageError(problem.message + hint)


def open_engine(
    args: argparse.Namespace,
    workspace: Path | None = None,
    *,
    need_workspace: bool = True,
    read_only: bool = False,
) -> Engine:
    """The engine for ``--config/--workspace/--agent``; config warnings go to stderr.
    A missing workspace is a ``UsageError`` unless ``need_workspace`` is False (the
    app reports it itself and offers to create the folder; until then the engine is
    read-only, so that declining creates nothing: ``Engine.open_for_writing`` follows
    a yes). ``read_only`` engines (status, search, get) never create an index nor ask
    a remote provider its size."""
    from engine.core import Engine
    from engine.workspace.presence import workspace_problem

    settings = load_cli_settings(args, workspace)
    # before the workspace check: a config warning (an unset ${VAR} in the
    # workspace's path) is often why the folder is missing
    for warning in (*settings.warnings, *settings.openclaw_rejections):
        print(f"memdeck: warning: {warning}", file=sys.stderr)
    if need_workspace:
        require_workspace(settings)
    elif workspace_problem(settings.workspace) is not None:
        read_only = True
    return Engine(settings, read_only=read_only)
