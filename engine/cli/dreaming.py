"""``memdeck sessions``, ``memdeck promote`` and ``memdeck dream`` (headless).

``engine.cli.main`` parses the arguments and calls these; they print text or, with
``--json``, one JSON document, and return the exit code (0 ok, 1 usage or
configuration error, 2 runtime failure).

``promote`` never writes without ``--apply``: it lists the queue with every
score part, the sources and the exact MEMORY.md diff each accept would make.
With ``--apply`` it accepts the listed candidates one after the other (each
preview is computed against the file as the previous accept left it, and that
preview is what is written and printed). ``--reject KEY`` remembers a refusal.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    open_engine,
    print_json,
    require_workspace,
)
from engine.memory.dreaming.deep import WEIGHTS
from engine.memory.dreaming.promotion import PromotionError, memory_path
from engine.memory.dreaming.service import Dreamer, proposal_dict

if TYPE_CHECKING:
    from engine.core import Engine


def sessions_command(args: argparse.Namespace) -> int:
    from engine.config.loader import load_settings
    from engine.memory.flush import SessionStoreError, sessions_report

    settings = load_settings(config_path=args.config, workspace=args.workspace, agent_id=args.agent)
    require_workspace(settings)
    try:
        report = sessions_report(settings)
    except SessionStoreError as exc:
        print(f"memdeck: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    for warning in (*settings.warnings, *report["warnings"]):
        print(f"memdeck: warning: {warning}", file=sys.stderr)
    if args.json:
        print_json(report)
        return EXIT_OK
    flush = report["flush"]
    state = "on" if flush["enabled"] else "off"
    print(
        f"memory flush {state} · reserveTokensFloor {flush['reserveTokensFloor']} · "
        f"softThresholdTokens {flush['softThresholdTokens']}"
        + (f" · read-only: {flush['readOnly']}" if flush["readOnly"] else "")
    )
    if not report["sessions"]:
        print(f"no sessions in {report['sessionsDir']}")
    for s in report["sessions"]:
        print(
            f"{s['key']:<32} {s['tokens']:>8} / {s['threshold']:<8} "
            f"cycle {s['compaction_count']:<3} {s['state']:<16} {s['reason']}"
        )
    print(f"\nsystem prompt: {flush['systemPrompt']}\nprompt:        {flush['prompt']}")
    return EXIT_OK


def _open(args: argparse.Namespace, *, read_only: bool = False) -> tuple[Engine, Dreamer]:
    engine = open_engine(args, read_only=read_only)
    dreamer = Dreamer(engine)
    for warning in dreamer.config.warnings:
        print(f"memdeck: warning: {warning}", file=sys.stderr)
    return engine, dreamer


def promote_command(args: argparse.Namespace) -> int:
    # a review writes nothing: without --apply or --reject not even an index is created
    engine, dreamer = _open(args, read_only=not (args.apply or args.reject))
    try:
        deep = dreamer.deep()
        queue = deep.queue
        known = {p.key: p for p in queue}
        unknown = [k for k in [*(args.keys or []), *args.reject] if k not in known]
        if unknown:
            print(f"memdeck: no queued candidate {', '.join(unknown)}", file=sys.stderr)
            return EXIT_USAGE
        rejected = []
        for key in args.reject:
            dreamer.reject(known[key])
            rejected.append(key)
        chosen = [
            p for p in queue if p.key not in rejected and (not args.keys or p.key in args.keys)
        ]
        items, applied = [], []
        for p in chosen:
            shown = dreamer.preview(p)
            if args.apply:
                try:
                    dreamer.accept(p, shown)
                except PromotionError as exc:
                    print(f"memdeck: {p.key}: {exc}", file=sys.stderr)
                    return EXIT_RUNTIME
                applied.append(p.key)
            items.append(proposal_dict(p, shown))
        data = {
            "memoryFile": str(memory_path(dreamer.workspace)),
            "health": round(deep.health, 6),
            "recoveryTriggered": deep.recovery_triggered,
            "candidates": items,
            "applied": applied,
            "rejected": rejected,
            "dryRun": not args.apply,
        }
    finally:
        engine.close()
    if args.json:
        print_json(data)
        return EXIT_OK
    if not items:
        print("no candidate waiting for review")
    for item in items:
        print(_describe(item))
    if not args.apply and items:
        print("\nnothing written; run with --apply to accept (or --reject KEY)")
    return EXIT_OK


def _describe(item: dict[str, Any]) -> str:
    parts = "  ".join(
        f"{name} {item['components'][name]:.2f}×{WEIGHTS[name]:.2f}" for name in WEIGHTS
    )
    lines = [
        f"\n{item['key']}  score {item['score']:.3f}"
        + (" (recovered)" if item["recovered"] else ""),
        f"  {item['text']}",
        f"  {parts}",
        f"  recalls {item['recalls']} · queries {item['uniqueQueries']} · days {item['days']}"
        f" · sources {', '.join(item['sources'])}",
        "  " + item["preview"]["diff"].rstrip("\n").replace("\n", "\n  "),
    ]
    return "\n".join(lines)


def dream_command(args: argparse.Namespace) -> int:
    engine, dreamer = _open(args)
    try:
        report = dreamer.run_due() if args.due else dreamer.run(args.phase or None)
    finally:
        engine.close()
    data = {
        "ran": report.ran,
        "skipped": report.skipped,
        "files": report.files,
        "autoWritten": report.auto_written,
        "staged": len(report.light.staged) if report.light else None,
        "proposed": [proposal_dict(p) for p in report.deep.queue] if report.deep else None,
        "themes": (
            [{"tags": list(t.tags), "strength": t.strength} for t in report.rem.themes]
            if report.rem
            else None
        ),
    }
    if args.json:
        print_json(data)
        return EXIT_OK
    print(f"ran: {', '.join(report.ran) or 'nothing due'}")
    for name, why in report.skipped.items():
        print(f"skipped {name}: {why}")
    for path in report.files:
        print(f"wrote {path}")
    if report.auto_written:
        print(f"auto-written to MEMORY.md: {', '.join(report.auto_written)}")
    return EXIT_OK


__all__ = ["dream_command", "promote_command", "sessions_command"]
