"""The command palette: memdeck's actions, worded for the current state.

Commands are rebuilt on every palette search, so their titles say what they
will do now ("Search: MMR on" while it is off; "Editor: allow editing…" only
while a locked daily log is open) and every memory file can be opened by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui import toggles

if TYPE_CHECKING:
    from tui.app import MemdeckApp


@dataclass(frozen=True)
class PaletteCommand:
    title: str
    help: str
    callback: Callable[[], object]
    discover: bool = True


def palette_commands(app: MemdeckApp) -> list[PaletteCommand]:
    """The commands that make sense right now."""
    pane = app.search_pane
    opts = pane.options
    nxt_mode = toggles.describe(toggles.cycle_mode(opts))["mode"]
    nxt_fusion = toggles.cycle_fusion(opts).fusion
    cmds = [
        PaletteCommand(
            "Search: focus the search box", "Same as / from anywhere", app.action_focus_search
        ),
        PaletteCommand(
            f"Search: switch mode to {nxt_mode}",
            f"Now {toggles.describe(opts)['mode']}; re-ranks without re-querying",
            pane.action_cycle_mode,
        ),
        PaletteCommand(
            f"Search: fusion {nxt_fusion}", f"Now {opts.fusion}", pane.action_cycle_fusion
        ),
        PaletteCommand(
            f"Search: MMR {'off' if opts.mmr_enabled else 'on'}",
            "Diversity re-rank of the results",
            pane.action_toggle_mmr,
        ),
        PaletteCommand(
            f"Search: temporal decay {'off' if opts.decay_enabled else 'on'}",
            f"Half-life {opts.half_life_days:g} days",
            pane.action_toggle_decay,
        ),
        PaletteCommand(
            "Search: more vector weight (+0.1)",
            f"Now vector {opts.vector_weight:.2f} / text {opts.text_weight:.2f}",
            partial(pane.action_weight, 1),
        ),
        PaletteCommand(
            "Search: more text weight (+0.1)",
            f"Now vector {opts.vector_weight:.2f} / text {opts.text_weight:.2f}",
            partial(pane.action_weight, -1),
        ),
        PaletteCommand(
            "Search: show why-not / breakdown",
            "Dropped candidates and reasons",
            pane.action_toggle_detail,
        ),
        PaletteCommand(
            "Index: sync now", "Index changed files in the background", app.action_sync_now
        ),
        PaletteCommand(
            "Index: full reindex",
            "Rebuild the index from the Markdown files",
            app.action_full_reindex,
        ),
        PaletteCommand(
            "Editor: append an entry to today's log",
            "Timestamped; earlier content is never rewritten",
            app.action_append_entry,
        ),
        PaletteCommand("Go to: memory tree", "Pane 1", partial(app.action_focus_pane, "tree")),
        PaletteCommand("Go to: editor", "Pane 2", partial(app.action_focus_pane, "editor")),
        PaletteCommand("Go to: search", "Pane 3", partial(app.action_focus_pane, "search")),
        PaletteCommand("Go to: monitor", "Pane 4", partial(app.action_focus_pane, "monitor")),
        PaletteCommand("Help: keys", "Every key and its binding id", app.action_help),
        PaletteCommand(
            "Dreaming: review promotion candidates",
            "Accept or reject what the deep phase proposes for MEMORY.md",
            app.action_promotion_queue,
        ),
        PaletteCommand(
            "Sessions: memory-flush state",
            "Token estimates against the flush threshold, per session",
            app.action_sessions_view,
        ),
    ]
    editor = app.editor_pane
    if editor.rel is not None:
        cmds.append(PaletteCommand(f"Editor: save {editor.rel}", "ctrl+s", app.action_save))
        cmds.append(
            PaletteCommand(
                f"Editor: reload {editor.rel} from disk",
                "Discards unsaved edits (asks first)",
                app.action_reload,
            )
        )
        if editor.is_daily and not editor.unlocked:
            cmds.append(
                PaletteCommand(
                    f"Editor: allow editing {editor.rel}",
                    "Daily logs are append-only; this unlocks earlier entries for this file",
                    app.action_unlock_editor,
                )
            )
    for name in sorted(app.available_themes):
        if name != app.theme:
            cmds.append(
                PaletteCommand(
                    f"Theme: {name}",
                    "Switch the colour theme",
                    partial(app.set_theme, name),
                    discover=False,
                )
            )
    for rel in app.memory_tree.states:
        cmds.append(
            PaletteCommand(
                f"Open: {rel}",
                "Open in the editor",
                partial(app.open_location, rel, 1),
                discover=False,
            )
        )
    return cmds


class MemdeckCommands(Provider):
    """Command palette provider for memdeck's own commands."""

    def _commands(self) -> list[PaletteCommand]:
        from tui.app import MemdeckApp

        app = self.app
        return palette_commands(app) if isinstance(app, MemdeckApp) else []

    async def discover(self) -> Hits:
        for cmd in self._commands():
            if cmd.discover:
                yield DiscoveryHit(cmd.title, cmd.callback, help=cmd.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for cmd in self._commands():
            score = matcher.match(cmd.title)
            if score > 0:
                yield Hit(score, matcher.highlight(cmd.title), cmd.callback, help=cmd.help)
