"""``memdeck context`` and ``memdeck curate``: MEMORY.md against what the agent is given.

``context`` lists every bootstrap file OpenClaw 2026.9.6 injects into each
main-session turn, what of it reaches the agent and the lines that never do
(:mod:`engine.memory.context`). ``curate`` lists the MEMORY.md entries worth a
second look, each with its evidence (:mod:`engine.memory.curation`). Both only read.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.memory.context import ContextFile, ContextReport

CONTEXT_HELP = "what the agent is given every turn: each bootstrap file against the budget"
CURATE_HELP = "MEMORY.md entries worth a second look (duplicates, unrecalled, unseen), with why"


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    sub.add_parser("context", parents=[common], help=CONTEXT_HELP, description=CONTEXT_HELP)
    p = sub.add_parser("curate", parents=[common], help=CURATE_HELP, description=CURATE_HELP)
    p.add_argument(
        "--days",
        type=_days,
        default=None,
        metavar="N",
        help="an entry no search recalled in N days is suggested (default 30)",
    )


def _days(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of days (got {text!r})") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def context_command(args: argparse.Namespace) -> int:
    from engine.cli.common import EXIT_OK, emit, load_cli_settings, require_workspace
    from engine.memory.context import context_report

    settings = load_cli_settings(args)
    require_workspace(settings)
    report = context_report(settings)
    emit(args, report.to_json(), render_report(report))
    return EXIT_OK


def render_report(report: ContextReport) -> str:
    """The text form: one row per file, then the total and what is never seen."""
    lines = [
        "What the agent is given every turn (OpenClaw 2026.9.6 bootstrap files: "
        f"{report.max_chars:,} chars a file, {report.total_max_chars:,} in all)",
        "",
        f"{'file':<14}{'raw chars':>11}{'injected':>11}{'~tokens':>9}",
    ]
    for f in report.files:
        raw = "missing" if f.missing else f"{f.raw_chars:,}"
        lines.append(
            f"{f.path:<14}{raw:>11}{f.injected_chars:>11,}{f.tokens:>9,}  {_state(f)}".rstrip()
        )
    lines.append(
        f"{'total':<14}{'':>11}{report.total_chars:>11,}{report.tokens:>9,}"
        f"  of {report.total_max_chars:,}"
    )
    for f in report.files:
        for r in f.hidden:
            lines.append(f"{f.path}: {r} never reach the agent ({r.lines:,} lines)")
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


def _state(f: ContextFile) -> str:
    if f.missing:
        return "injected as a [MISSING] line"
    if f.injected_chars == 0 and f.raw_chars:
        return "not injected (no budget left)"
    if not f.truncated:
        return ""
    why = ", ".join("max/file" if c == "per-file-limit" else "max/total" for c in f.causes)
    return f"cut ({why}): {f.hidden_lines:,} lines unseen"


def curate_command(args: argparse.Namespace) -> int:
    from engine.cli.common import EXIT_OK, UsageError, emit, open_engine
    from engine.memory.curation import DEFAULT_DAYS, render_suggestions, suggest
    from engine.workspace.files import PathRefused, UnreadableFile

    engine = open_engine(args, read_only=True)
    try:
        found = suggest(engine, days=args.days or DEFAULT_DAYS)
    except (PathRefused, UnreadableFile) as exc:  # a symlink, a folder, a binary file
        raise UsageError(f"cannot curate: {exc}") from None
    finally:
        engine.close()
    emit(args, found.to_json(), render_suggestions(found))
    return EXIT_OK
