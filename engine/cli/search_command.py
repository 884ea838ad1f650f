"""``memdeck search``: memory_search from the shell, one query or a JSONL batch.

The engine is opened read-only (search never builds or changes the index; its
one write is the recall log's row) and asked for its searcher; the answer is
printed as text (with the breakdown under ``--explain``) or as the tool's JSON.
A failed search exits 2 with the reason on stderr, ``--json`` or not.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.cli.common import EXIT_OK, EXIT_RUNTIME, UsageError, open_engine

if TYPE_CHECKING:
    from engine.core import Engine
    from engine.search.model import SearchOptions
    from engine.search.results import SearchAnswer, SearchUnavailable


def _search_options(engine: Engine, args: argparse.Namespace) -> SearchOptions:
    options = engine.default_options()
    changes: dict[str, Any] = {}
    if args.mode:
        changes["mode"] = args.mode
    if args.fusion:
        changes["fusion"] = args.fusion
    if args.mmr is not None:
        changes["mmr_enabled"] = args.mmr
    if args.decay is not None:
        changes["decay_enabled"] = args.decay
    return options.with_(**changes) if changes else options


def cmd_search(args: argparse.Namespace) -> int:
    from engine.search.results import SearchUnavailable, query_problem
    from engine.tools import search_memory, tools_disabled_reason

    if args.batch is not None and args.query is not None:
        raise UsageError("search takes a QUERY or --batch FILE, not both")
    if args.batch is None and args.query is None:
        raise UsageError("search needs a QUERY or --batch FILE")
    if args.query is not None and not args.query.strip():
        raise UsageError("the query is empty: give words to search for")
    if args.query is not None and (problem := query_problem(args.query)) is not None:
        raise UsageError(problem)
    if args.batch is not None and str(args.batch) != "-" and not args.batch.is_file():
        what = "is a folder" if args.batch.is_dir() else "does not exist"
        raise UsageError(f"--batch {args.batch} {what}: give a JSONL file, or '-' for stdin")
    engine = open_engine(args, read_only=True)  # never builds an index nor probes a provider
    try:
        custom = any(x is not None for x in (args.mode, args.fusion, args.mmr, args.decay))
        attached = False
        if args.backend == "qmd" and engine.qmd is None and not tools_disabled_reason(engine):
            from engine.cli.qmd_compare import attach

            attach(engine)  # forced: qmd answers where memory.backend is builtin too
            attached = True
        searcher = engine.searcher_for(args.backend)
        if custom and engine.searcher.name == "openclaw":
            raise UsageError(
                "--mode/--fusion/--mmr/--decay tune the memdeck profile; the openclaw "
                "profile's ranking is OpenClaw 2026.9.6's own and fixed"
            )
        builtin_needed = args.compare or searcher.needs_index
        if builtin_needed and engine.unavailable is not None:
            from engine.core import IndexUnavailable

            if args.json and args.batch is None:  # the answer says why, as a failed search's does
                down = SearchUnavailable(
                    error=engine.unavailable, action="run `memdeck status`, then `memdeck index`"
                )
                print(json.dumps(down.to_json(), ensure_ascii=False, indent=2))
            raise IndexUnavailable(engine.unavailable)
        if builtin_needed and not engine.index_built() and not tools_disabled_reason(engine):
            raise UsageError(
                f"no index yet for workspace {engine.workspace.root}: run `memdeck index` "
                "first (search never builds one)"
            )
        if args.compare or searcher.name == "qmd":
            from engine.cli.qmd_compare import attach, compare, format_compare

            if not attached:
                attach(engine)
            if args.compare:
                if not args.query:
                    raise UsageError("--compare needs a QUERY")
                data = compare(engine, args.query, args.max_results)
                print(
                    json.dumps(data.to_json(), ensure_ascii=False, indent=2)
                    if args.json
                    else format_compare(data)
                )
                return EXIT_OK

        def run(query: str) -> SearchAnswer | SearchUnavailable:
            return search_memory(
                engine,
                query,
                args.max_results,
                args.min_score,
                explain=args.explain,
                session_key=args.session_key,
                backend=args.backend,
                options=_search_options(engine, args) if custom else None,
            )

        if args.batch is not None:
            return _search_batch(args, run)
        result = run(args.query)
    finally:
        engine.close()
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    if isinstance(result, SearchUnavailable):  # a failed search fails, --json or not
        print(f"memory search unavailable: {result.error}", file=sys.stderr)
        return EXIT_RUNTIME
    if args.json:
        return EXIT_OK
    n = len(result.results)
    print(
        f"{n} result{'' if n == 1 else 's'} · mode {result.mode} · provider {result.provider}"
        f" · backend {result.backend}"
        + (" · profile openclaw" if result.profile == "openclaw" else "")
    )
    if result.reason:
        print(f"memdeck: warning: keyword-only: {result.reason}", file=sys.stderr)
    if result.backend_fallback is not None:
        why = result.backend_fallback.reason
        print(f"memdeck: warning: qmd failed, builtin answered: {why}", file=sys.stderr)
    if result.denied:
        print(f"memdeck: qmd search denied by memory.qmd.scope: {result.scope}", file=sys.stderr)
    for i, r in enumerate(result.results, start=1):
        print(f"\n{i}. {r.path}:{r.start_line}-{r.end_line}  score {r.score:.4f}")
        if r.kept_below_min_score:  # the keyword rescue (or OpenClaw's top-up/floor)
            print(f"   {r.kept_below_min_score}")
        if args.explain and r.breakdown is not None:
            for line in _explain_lines(r.breakdown):
                print(f"   {line}")
        print("   " + _preview(r.excerpt, r.focus).replace("\n", "\n   "))
    if args.explain and result.explain is not None:
        dropped: list[dict[str, Any]] = result.explain["dropped"]  # type: ignore[assignment]
        print(f"\n{len(dropped)} dropped candidates")
        for d in dropped[:DROPPED_SHOWN]:
            where = f"{d['path']}:{d['start_line']}-{d['end_line']}"
            print(f"   {where}  {d['score']:.4f}  {d['dropped']}")
        if len(dropped) > DROPPED_SHOWN:
            print(f"   … {len(dropped) - DROPPED_SHOWN} more (--json lists every one)")
    return EXIT_OK


#: dropped candidates the text output of ``--explain`` lists (the best first)
DROPPED_SHOWN = 20


#: characters of a result's snippet the text output shows
PREVIEW_CHARS = 300


def _preview(excerpt: str, focus: int | None) -> str:
    """Up to ``PREVIEW_CHARS`` of a snippet: from the line before the one the ranking
    took (``SearchHit.focus``) when the snippet's start would leave that line out."""
    lines = excerpt.split("\n")
    start = 0
    if focus is not None and len("\n".join(lines[: focus + 1]).strip()) > PREVIEW_CHARS:
        start = max(0, focus - 1)
    body = "\n".join(lines[start:]).strip()
    cut = body[:PREVIEW_CHARS] + ("…" if len(body) > PREVIEW_CHARS else "")
    return ("…\n" if start else "") + cut


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _explain_lines(b: Mapping[str, Any]) -> list[str]:
    """A result's breakdown for ``--explain``: the score's arithmetic, the factor
    each side entered it with (``parts``, what the TUI's columns show) and where
    that came from, then every other line of the arithmetic (bar, sides, decay,
    MMR), each evaluable by hand. The OpenClaw profile has its own formula only."""
    parts: Mapping[str, Any] | None = b.get("parts")
    arithmetic: list[str] = list(b.get("arithmetic") or [])
    lists = ",".join(b["lists"]) or "-"
    if parts is None or not arithmetic:  # the openclaw profile: its formula, step by step
        return [
            str(b["formula"]),
            *([str(b["boost_arithmetic"])] if b.get("boost_arithmetic") else []),
            f"vector {_fmt(b['vector_score'])} (#{b['vector_position'] or '-'})  "
            f"text {_fmt(b['text_score'])} bm25 {_fmt(b['bm25_rank'])} "
            f"(#{b['fts_position'] or '-'})  lists {lists}",
        ]

    def num(x: float | None) -> str:  # as the breakdown prints it (− for minus)
        return _fmt(x).replace("-", "−") if x is not None else "-"

    from engine.search.explain import best_unit

    unit = best_unit(b.get("best_line"), b.get("best_line_end"))
    vec_from = [f"best {unit} {num(b.get('line_cosine'))}"] if unit is not None else []
    if unit is not None and b.get("time_bonus"):  # a query that asks when (engine.search.intent)
        vec_from[0] += f" + {b['time_bonus']:g} for “{b.get('time_words')}”"
    vec_from.append(f"chunk cosine {num(b['vector_score'])}")
    moved = b.get("feedback_from")
    if moved:  # the calibrated fusion's feedback (engine.search.rank.feed_back)
        vec_from.append(f"query moved toward {moved[0]}:{moved[1]}-{moved[2]}")
    if b["vector_position"]:
        vec_from.append(f"vector list #{b['vector_position']}")
    text_from = [f"bm25 {num(b['bm25_rank'])}"]
    if b["fts_position"]:
        text_from.append(f"FTS list #{b['fts_position']}")
    used = (
        f"used: vector {num(parts['vector'])} ({', '.join(vec_from)})"
        f" · text {num(parts['text'])} ({', '.join(text_from)})"
    )
    # the arithmetic: the score line(s) (fusion, then decay), the score bar's
    # segments, then each side, decay and MMR
    n_score = len(str(b["formula"]).split("; "))
    rest = arithmetic[n_score:]
    if rest:
        rest[0] = f"bar: {rest[0]}"
    # the feedback's ‖q + β·f‖, labelled as the TUI labels it (the line after the bar)
    if moved and len(rest) > 1 and rest[1].endswith(f" = {num(b.get('feedback_norm'))}"):
        rest[1] = f"‖q+βf‖ {rest[1]}"
    return [str(b["formula"]), used, *rest]


def _search_batch(
    args: argparse.Namespace, run: Callable[[str], SearchAnswer | SearchUnavailable]
) -> int:
    from engine.search.results import check_query

    stream = sys.stdin if str(args.batch) == "-" else open(args.batch, encoding="utf-8")  # noqa: SIM115
    try:
        for lineno, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            item: Any = None
            try:
                item = json.loads(line)
                if not isinstance(item, dict):
                    raise TypeError('expected an object {"id": …, "query": "…"}')
                query = item.get("query")
                if not isinstance(query, str) or not query.strip():
                    raise TypeError('"query" must be a non-empty string')
                check_query(query)
            except (ValueError, TypeError) as exc:
                ident = item.get("id") if isinstance(item, dict) else None
                error = {"id": ident, "line": lineno, "error": f"bad input line: {exc}"}
                print(json.dumps(error, ensure_ascii=False), flush=True)
                continue
            out = {"id": item.get("id"), **run(query).to_json()}
            print(json.dumps(out, ensure_ascii=False), flush=True)
    finally:
        if stream is not sys.stdin:
            stream.close()
    return EXIT_OK
