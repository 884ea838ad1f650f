"""Exporting the ranking on screen to a file, from the app.

Asks for the path, then for a yes before it writes inside the memory tree (the
export would be indexed and found by searches) or over an existing file. What is
written is :mod:`tui.export`'s Markdown, or ``memdeck search --json --explain``'s
JSON for a ``.json`` path.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from engine.search.model import SearchOutcome
from engine.searchers import search_answer
from tui import export
from tui.actions import DeckHost
from tui.screens.dialogs import ConfirmScreen, ExportScreen

__all__ = ["RankingExport"]


class RankingExport:
    """The export dialog's flow on ``host`` (the app)."""

    def __init__(self, host: DeckHost) -> None:
        self.host = host
        #: where the last export went (None before the first)
        self.last_export: Path | None = None

    def start(self) -> None:
        """Write the ranking on screen to a file: asks for the path, never overwrites or
        writes inside the memory tree without a yes."""
        host = self.host
        outcome = host.search_pane.outcome
        if outcome is None:
            host.notify("Search first: there is no ranking to export.", severity="warning")
            return
        at = host.clock()
        base = Path.cwd()
        if self._in_memory_tree(base / "x"):
            base = host.display_home
        screen = ExportScreen(
            f"Export the ranking for “{outcome.query}”",
            export.default_export_name(outcome.query, at),
            base,
        )
        host.push_screen(screen, lambda path: self._export_to(path, outcome, at, []))

    def _in_memory_tree(self, path: Path) -> bool:
        root = self.host.engine.workspace.root.resolve()
        return path.resolve().is_relative_to(root)

    def _export_to(
        self, path: Path | None, outcome: SearchOutcome, at: dt.datetime, agreed: list[str]
    ) -> None:
        if path is None:
            return
        host = self.host
        questions = [
            (
                "tree",
                self._in_memory_tree(path),
                "Write inside the memory tree?",
                f"{path} is inside the workspace memdeck indexes; the export would be "
                "indexed and found by searches.",
                "Write it there",
            ),
            (
                "overwrite",
                path.exists(),
                "Overwrite the file?",
                f"{path} exists. Replace it with the export?",
                "Overwrite",
            ),
        ]
        for key, needed, title, message, yes in questions:
            if needed and key not in agreed:

                def decided(ok: bool | None, key: str = key) -> None:
                    if ok:
                        self._export_to(path, outcome, at, [*agreed, key])
                    else:
                        host.notify("Not exported.", timeout=3)

                host.push_screen(ConfirmScreen(title, message, yes=yes), decided)
                return
        if path.suffix.lower() == ".json":
            text = export.ranking_json(
                search_answer(host.engine, outcome, explain=True).to_json(), outcome, at
            )
        else:
            text = export.ranking_markdown(outcome, at)
        try:
            if path.is_dir():
                raise IsADirectoryError(f"{path} is a folder")
            export.write_new_file(path, text)
        except OSError as exc:
            host.notify(f"Not exported: {exc}", title="Export failed", severity="error")
            return
        self.last_export = path
        host.notify(f"Exported {len(outcome.results)} results to {path}.", timeout=4)
