"""The command palette: memdeck's actions, worded for the current state.

Commands are rebuilt on every palette search, so their titles say what they
will do now ("Search: MMR on" while it is off; "Editor: allow editing…" only
while a locked daily log is open) and every memory file can be opened by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui import toggles
from tui.actions import DeckActions, current_keys


@dataclass(frozen=True)
class PaletteCommand:
    title: str
    help: str
    callback: Callable[[], object]
    discover: bool = True
    binding: str | None = None  # the binding id whose key the palette shows

    def help_with_key(self, keys: dict[str, str]) -> str:
        key = keys.get(self.binding or "")
        return f"{key}  ·  {self.help}" if key else self.help


def palette_commands(app: DeckActions) -> list[PaletteCommand]:
    """The commands that make sense right now."""
    pane = app.search_pane
    opts = pane.options
    nxt_mode = toggles.describe(toggles.cycle_mode(opts))["mode"]
    nxt_fusion = toggles.cycle_fusion(opts).fusion
    cmds = [
        PaletteCommand(
            "Search: focus the search box",
            "From anywhere, the editor included",
            app.action_focus_search,
            binding="search.focus",
        ),
        PaletteCommand(
            f"Search: switch mode to {nxt_mode}",
            f"Now {toggles.describe(opts)['mode']}; re-ranks without re-querying",
            pane.action_cycle_mode,
            binding="search.mode",
        ),
        PaletteCommand(
            f"Search: fusion {nxt_fusion}",
            f"Now {opts.fusion}",
            pane.action_cycle_fusion,
            binding="search.fusion",
        ),
        PaletteCommand(
            f"Search: MMR {'off' if opts.mmr_enabled else 'on'}",
            "Diversity re-rank of the results",
            pane.action_toggle_mmr,
            binding="search.mmr",
        ),
        PaletteCommand(
            f"Search: temporal decay {'off' if opts.decay_enabled else 'on'}",
            f"Half-life {opts.half_life_days:g} days",
            pane.action_toggle_decay,
            binding="search.decay",
        ),
        PaletteCommand(
            "Search: more vector weight (+0.1)",
            f"Now vector {opts.vector_weight:.2f} / text {opts.text_weight:.2f}",
            partial(pane.action_weight, 1),
            binding="search.weight_up",
        ),
        PaletteCommand(
            "Search: more text weight (+0.1)",
            f"Now vector {opts.vector_weight:.2f} / text {opts.text_weight:.2f}",
            partial(pane.action_weight, -1),
            binding="search.weight_down",
        ),
        PaletteCommand(
            "Search: show why-not / breakdown",
            "Dropped candidates and reasons",
            pane.action_toggle_detail,
            binding="search.whynot",
        ),
        PaletteCommand(
            "Copy: highlighted result (path#lines and text)",
            "To the clipboard (OSC 52)",
            partial(pane.copy_result),
            binding="search.copy",
        ),
        PaletteCommand(
            "Copy: breakdown of the highlighted result",
            "The formula and parts as the breakdown shows them",
            partial(pane.copy_result, breakdown=True, result=False),
        ),
        PaletteCommand("Copy: why-not list", "Every dropped candidate and why", pane.copy_whynot),
        PaletteCommand(
            "Export: ranking to a file (Markdown, or JSON for .json)",
            "Asks for the path; never overwrites without asking",
            app.action_export_ranking,
            binding="search.export",
        ),
        PaletteCommand(
            "View: hide or show the memory tree",
            "The tree hides itself below 100 columns",
            app.action_toggle_tree,
            binding="app.tree",
        ),
        PaletteCommand(
            "Index: sync now",
            "Index changed files in the background",
            app.action_sync_now,
            binding="index.sync",
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
            binding="editor.append",
        ),
        PaletteCommand(
            "Go to: memory tree",
            "Pane 1",
            partial(app.action_focus_pane, "tree"),
            binding="pane.tree",
        ),
        PaletteCommand(
            "Go to: editor",
            "Pane 2",
            partial(app.action_focus_pane, "editor"),
            binding="pane.editor",
        ),
        PaletteCommand(
            "Go to: search",
            "Pane 3",
            partial(app.action_focus_pane, "search"),
            binding="pane.search",
        ),
        PaletteCommand(
            "Go to: monitor",
            "Pane 4",
            partial(app.action_focus_pane, "monitor"),
            binding="pane.monitor",
        ),
        PaletteCommand(
            "Help: keys", "Every key and its binding id", app.action_help, binding="app.help"
        ),
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
        PaletteCommand(
            "Context: what the agent is given every turn",
            "MEMORY.md and the other bootstrap files against OpenClaw's budget; unseen lines",
            app.action_context_view,
            binding="app.context",
        ),
        PaletteCommand(
            "Curate: MEMORY.md's entries worth a second look",
            "Duplicates, entries a daily log repeats, unseen or unrecalled ones; merge, "
            "move, delete (diff first, undoable)",
            app.action_curation_queue,
            binding="app.curate",
        ),
        PaletteCommand(
            "Agent activity: the searches agents made",
            "Newest first, live (MCP clients, memdeck search); Enter replays one",
            app.action_agent_activity,
            binding="app.agent_activity",
        ),
    ]
    if app.workspace_problem is not None and app.workspace_problem.creatable:
        cmds.insert(
            0,
            PaletteCommand(
                f"Workspace: create {app.workspace_problem.path}",
                "The folder does not exist yet; creates it with an empty memory/",
                app.action_create_workspace,
            ),
        )
    editor = app.editor_pane
    if editor.rel is not None:
        cmds.append(
            PaletteCommand(
                f"Editor: save {editor.rel}",
                "Write the file and re-index it",
                app.action_save,
                binding="editor.save",
            )
        )
        cmds.append(
            PaletteCommand(
                f"Editor: reload {editor.rel} from disk",
                "Discards unsaved edits (asks first)",
                app.action_reload,
                binding="editor.reload",
            )
        )
        if editor.is_daily and not editor.unlocked:
            cmds.append(
                PaletteCommand(
                    f"Editor: allow editing {editor.rel}",
                    "Daily logs are append-only; unlock this daily log's earlier entries",
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
        app = self.app
        return palette_commands(app) if isinstance(app, DeckActions) else []

    def _keys(self) -> dict[str, str]:
        app = self.app
        return current_keys(app.keymap) if isinstance(app, DeckActions) else {}

    async def discover(self) -> Hits:
        keys = self._keys()
        for cmd in self._commands():
            if cmd.discover:
                yield DiscoveryHit(cmd.title, cmd.callback, help=cmd.help_with_key(keys))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        keys = self._keys()
        for cmd in self._commands():
            score = matcher.match(cmd.title)
            title = matcher.highlight(cmd.title) if score > 0 else cmd.title
            if score <= 0:  # found by what it does ("unlock", "daily"), ranked below
                score = matcher.match(cmd.help) * 0.5
            if score > 0:
                yield Hit(score, title, cmd.callback, help=cmd.help_with_key(keys))
