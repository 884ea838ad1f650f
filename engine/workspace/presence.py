"""Is there a workspace folder at all? One check shared by the CLI and the app.

A workspace that does not exist used to look healthy: an empty index, "up to
date", zero search results and exit 0. Every entry point asks this first and
says what is wrong instead: the CLI exits 1 naming the path, the terminal app
shows the message and offers to create the folder. The check only reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ProblemKind = Literal["missing", "not_a_folder", "unreadable"]


@dataclass(frozen=True)
class WorkspaceProblem:
    """Why ``path`` cannot be used as a workspace; ``creatable`` when making the
    folder (and its missing parents) would fix it."""

    path: Path
    kind: ProblemKind

    @property
    def creatable(self) -> bool:
        return self.kind == "missing"

    @property
    def message(self) -> str:
        if self.kind == "missing":
            return f"workspace {self.path} does not exist"
        if self.kind == "not_a_folder":
            return f"workspace {self.path} is not a folder"
        return f"workspace {self.path} cannot be read (permission denied)"


def workspace_problem(root: Path) -> WorkspaceProblem | None:
    """None when ``root`` is a readable folder, else what is wrong with it."""
    path = Path(root).expanduser()
    try:
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
    except OSError:
        return WorkspaceProblem(path, "unreadable")
    if not exists:
        return WorkspaceProblem(path, "missing")
    if not is_dir:
        return WorkspaceProblem(path, "not_a_folder")
    if not os.access(path, os.R_OK | os.X_OK):
        return WorkspaceProblem(path, "unreadable")
    return None


def create_workspace(root: Path) -> Path:
    """Make the folder (with parents) and its ``memory/`` folder; nothing else is written."""
    path = Path(root).expanduser()
    (path / "memory").mkdir(parents=True, exist_ok=True)
    return path
