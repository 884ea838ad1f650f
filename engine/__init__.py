"""memdeck's UI-free engine: index, hybrid search with explanations, tools, CLI.

Never imports Textual or Rich (``tests/engine/test_import_hygiene.py`` checks).
A program embeds it through :mod:`engine.api` (``from engine import open_memory``,
docs/embedding.md); those names are loaded on first use, so ``import engine``
stays cheap for the command line.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from engine.api import Memory, SearchFailed, WorkspaceError, open_memory

__all__ = ["Memory", "SearchFailed", "WorkspaceError", "__version__", "open_memory"]
_API = frozenset({"Memory", "SearchFailed", "WorkspaceError", "open_memory"})


def __getattr__(name: str) -> Any:
    # imported by name, on first use: every engine module imports this package (for
    # __version__), and none of them may depend on the facade above them all
    if name in _API:
        return getattr(importlib.import_module("engine.api"), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
