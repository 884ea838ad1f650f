"""A curation change shown as a diff before anything is written.

The dialog shows the plan's title and its unified diff, every file it touches. For a
move it also asks where to (a topic file under ``memory/``) and whether a one-line
pointer stays in MEMORY.md; changing either plans again and redraws the diff.
It dismisses with the plan to write, or None (Escape, Cancel): nothing is written here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static

if TYPE_CHECKING:  # imported when a preview re-plans (the app starts without it)
    from engine.memory.curation_actions import Plan

#: plans a move again for (topic file, leave a pointer)
Replan = Callable[[str, bool], "Plan"]


def render_diff(diff: str) -> Text:
    """The unified diff, added lines green, removed red, hunk heads cyan."""
    text = Text()
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            text.append(line + "\n", style="bold")
        elif line.startswith("+"):
            text.append(line + "\n", style="green")
        elif line.startswith("-"):
            text.append(line + "\n", style="red")
        elif line.startswith("@@"):
            text.append(line + "\n", style="cyan")
        else:
            text.append(line + "\n", style="dim")
    return text


class CurationPreviewScreen(ModalScreen["Plan | None"]):
    """The change to MEMORY.md (and a topic file), as a diff; Apply writes it."""

    DEFAULT_CSS = """
    CurationPreviewScreen { align: center middle; background: $background 60%; }
    CurationPreviewScreen #preview-box {
        width: 90%; max-width: 110; height: 85%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    CurationPreviewScreen #preview-diff { height: 1fr; border: round $panel; }
    CurationPreviewScreen #preview-move { height: auto; }
    CurationPreviewScreen #preview-topic { width: 1fr; }
    CurationPreviewScreen #preview-problem { color: $error; height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "dismiss(None)",
            "Cancel",
            id="curation.cancel",
            tooltip="Close the preview; nothing is written",
        ),
        Binding("ctrl+s", "apply", "Apply", id="curation.apply", tooltip="Write the change shown"),
    ]

    def __init__(self, plan: Plan, *, topic: str | None = None, replan: Replan | None = None):
        super().__init__()
        self.plan: Plan | None = plan
        self._topic = topic
        self._replan = replan

    def compose(self) -> ComposeResult:
        with Vertical(id="preview-box"):
            yield Label(
                self.plan.title if self.plan else "", id="preview-title", classes="dialog-title"
            )
            if self._replan is not None:
                with Horizontal(id="preview-move"):
                    yield Input(
                        self._topic or "", id="preview-topic", placeholder="memory/topic.md"
                    )
                    yield Checkbox("leave a pointer", id="preview-pointer")
            yield Static("", id="preview-problem")
            with VerticalScroll(id="preview-diff"):
                yield Static(render_diff(self.plan.diff if self.plan else ""), id="preview-text")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply (ctrl+s)", id="apply", variant="warning")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#apply", Button).focus()

    def _show(self, plan: Plan | None, problem: str = "") -> None:
        self.plan = plan
        self.query_one("#preview-title", Label).update(plan.title if plan else "nothing to apply")
        self.query_one("#preview-text", Static).update(render_diff(plan.diff if plan else ""))
        self.query_one("#preview-problem", Static).update(problem)
        self.query_one("#apply", Button).disabled = plan is None

    @on(Input.Changed, "#preview-topic")
    @on(Checkbox.Changed, "#preview-pointer")
    def _again(self) -> None:
        if self._replan is None:
            return
        topic = self.query_one("#preview-topic", Input).value
        pointer = self.query_one("#preview-pointer", Checkbox).value
        from engine.memory.curation_actions import CurationConflict

        try:
            self._show(self._replan(topic, pointer))
        except (ValueError, CurationConflict) as exc:
            self._show(None, str(exc))

    @on(Input.Submitted, "#preview-topic")
    def _submitted(self) -> None:
        self.action_apply()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self.action_apply()
        else:
            self.dismiss(None)

    def action_apply(self) -> None:
        if self.plan is not None:
            self.dismiss(self.plan)


__all__ = ["CurationPreviewScreen", "render_diff"]
