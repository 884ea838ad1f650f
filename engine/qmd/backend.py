"""``memory.backend = "qmd"``: retrieval delegated to the qmd CLI, with a safety net.

``QmdBackend`` owns one agent's qmd home and keeps it current:

* collections reconciled from the settings before the first qmd search;
* ``qmd update`` then ``qmd embed`` at start (``update.onBoot``; in the
  background unless ``update.waitForBootSync``), every ``update.interval``,
  and ``update.debounceMs`` after the last file change. There is no second
  watcher: the engine's sync service watches ``memory.qmd.paths`` and the
  transcripts in the same plan as the workspace (:meth:`QmdBackend.watch_trees`)
  and the engine forwards ``mark_dirty`` to :meth:`QmdBackend.notify_change`;
  the timing rules are the sync service's own (:mod:`engine.index.schedule`);
  ``embed`` only when there is a model to embed with (memdeck's local GGUF, or
  a non-``search`` mode that asked for qmd's own models) and then at most every
  ``update.embedInterval`` unless the search mode needs fresh vectors;
* session transcripts exported as Markdown before each update.

Searches run ``qmd <searchMode> --json -n <limit> -c <coll>… -- <query>``
under ``limits.timeoutMs`` for the whole qmd part of the query. Every failure
(:class:`~engine.qmd.runner.QmdError`) is returned as a failed answer with its
reason — the caller then serves the query from the builtin index — and
recorded, so ``status()`` shows ``fallback: builtin`` and why, until a qmd
search succeeds again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.config.paths import sessions_dir
from engine.config.settings import Settings
from engine.index.schedule import RefreshSchedule, wait_for_job
from engine.qmd.collections import (
    ReconcileReport,
    desired_collections,
    pattern_matches,
    reconcile,
)
from engine.qmd.config import QmdSearchMode, QmdSettings, load_qmd_settings
from engine.qmd.embed_model import memdeck_embed_model, set_embed_model
from engine.qmd.results import QmdHit, clamp_snippets, parse_search_output
from engine.qmd.runner import QmdError, QmdHome, QmdRunner, resolve_command
from engine.qmd.scope import check_scope
from engine.qmd.session_export import ExportReport, export_sessions
from engine.qmd.status import (
    QmdCollectionInfo,
    QmdReconcileSummary,
    QmdSessionsExport,
    QmdStatus,
    QmdStatusLimits,
    QmdStep,
)
from engine.search.results import SearchAnswer, SearchHit, search_hit
from engine.workspace.files import PathRefused, Workspace
from engine.workspace.safe_open import OpenedFile, check_parts, open_beneath

log = logging.getLogger("memdeck.qmd")

_AUTO: Any = object()
#: After a search timeout, queries skip qmd this long (a hung qmd would cost every
#: query its full timeout); the first query after it tries qmd again.
TIMEOUT_COOLDOWN_S = 30.0


def qmd_home(settings: Settings) -> QmdHome:
    """The agent's qmd home, as OpenClaw's; another folder gets one of its own
    (``qmd-<tag>``, ``Settings.folder_tag``) beside it."""
    tag = settings.folder_tag
    return QmdHome(
        settings.state_dir / "agents" / settings.agent_id / ("qmd" if tag is None else f"qmd-{tag}")
    )


def search_args(
    mode: QmdSearchMode, limit: int, collections: list[str], query: str, local_embed: Path | None
) -> list[str]:
    """The qmd argv (after the binary) for one search; the query always follows ``--``.

    ``vsearch`` in qmd 2.8.3 first expands the query with its generative model,
    which offline means a HuggingFace download that hangs. With memdeck's local
    embedding model configured, vector-only search therefore runs as the
    equivalent structured query ``qmd query --no-rerank -- "vec: <query>"``:
    the caller's own ``vec:`` line needs no expansion and ``--no-rerank`` no
    reranker, so only the local GGUF is loaded.
    """
    if mode == "vsearch" and local_embed is not None:
        line = " ".join(query.replace('"', " ").split())
        args = ["query", "--json", "--no-rerank", "-n", str(limit)]
        query = f"vec: {line}"
    else:
        args = [mode, "--json", "-n", str(limit)]
    for name in collections:
        args += ["-c", name]
    return [*args, "--", query]


@dataclass
class QmdAnswer:
    """One memory_search through qmd: results, a scope denial, or a failure to fall back from."""

    ok: bool
    results: list[SearchHit] = field(default_factory=list)
    denied: str | None = None
    error: str | None = None
    kind: str | None = None
    duration_ms: float = 0.0


@dataclass
class _Step:
    """The outcome of one maintenance command, for status."""

    at: float
    ok: bool
    duration_s: float
    detail: str | None = None

    def to_status(self) -> QmdStep:
        at = dt.datetime.fromtimestamp(self.at).isoformat(timespec="seconds")
        return QmdStep(at, self.ok, round(self.duration_s, 3), self.detail)


QmdStepName = Literal["collections", "update", "embed"]


@dataclass(frozen=True)
class QmdProgress:
    """A maintenance step of qmd starting or ending (``seconds`` once it ended)."""

    step: QmdStepName
    state: Literal["started", "finished", "failed"]
    reason: str  # "boot", "manual", "change", "interval", "first use"
    seconds: float


class QmdBackend:
    """The qmd sidecar of one Engine (settings, workspace) — thread-safe."""

    def __init__(
        self,
        settings: Settings,
        workspace: Workspace,
        *,
        env: Mapping[str, str] = os.environ,
        qmd_settings: QmdSettings | None = None,
        embed_model: Path | None = _AUTO,
    ):
        self.settings = settings
        self.workspace = workspace
        self.env = dict(env)
        self.qs = qmd_settings or load_qmd_settings(settings, env)
        self.home = qmd_home(settings)
        self.runner = QmdRunner(self.qs.command, self.home, self.env)
        self.embed_model: Path | None = (
            memdeck_embed_model(env) if embed_model is _AUTO else embed_model
        )
        self.sessions_out: Path | None = None
        if self.qs.sessions.enabled:
            self.sessions_out = self.qs.sessions.export_dir or self.home.sessions_dir
        self.collections, warnings = desired_collections(self.qs, workspace.root, self.sessions_out)
        self.warnings: list[str] = [*self.qs.warnings, *warnings]
        self.by_name = {c.name: c for c in self.collections}
        self.timeout_cooldown_s = TIMEOUT_COOLDOWN_S
        self._lock = threading.Lock()  # guards the state fields below
        self._collections_lock = threading.Lock()
        self._maint_lock = threading.Lock()
        self._stop = threading.Event()
        # the schedule (change debounce, interval, boot) and the condition guarding it
        self._cond = threading.Condition()
        self._schedule = RefreshSchedule(
            debounce=self.qs.update.debounce_ms / 1000,
            interval=self.qs.update.interval_ms / 1000,
            change_reason="change",
        )
        self._threads: list[threading.Thread] = []
        self._started = False
        self._reconciled = False
        self.reconcile_report: ReconcileReport | None = None
        self.export_report: ExportReport | None = None
        # health
        self.fallback_reason: str | None = None
        self.failure_kind: str | None = None
        self._failure_source: str | None = None  # "search" or "maintenance"
        self.last_ok: float | None = None
        self.last_failure: float | None = None
        self._skip_until = 0.0
        self._load_health()  # a search of an earlier process fell back: still so
        self.searches = 0
        self.fallbacks = 0
        # maintenance
        self.last_update: _Step | None = None
        self.last_embed: _Step | None = None
        self.refreshing: str | None = None
        self._next_embed = 0.0
        #: told when a maintenance step starts and ends (the CLI shows progress:
        #: a first ``qmd embed`` on a fresh home can take minutes)
        self.on_step: Callable[[QmdProgress], None] | None = None

    @contextlib.contextmanager
    def _step(self, step: QmdStepName, reason: str) -> Iterator[None]:
        listener = self.on_step
        if listener is None:
            yield
            return
        t0 = time.monotonic()
        listener(QmdProgress(step, "started", reason, 0.0))
        try:
            yield
        except BaseException:
            listener(QmdProgress(step, "failed", reason, time.monotonic() - t0))
            raise
        listener(QmdProgress(step, "finished", reason, time.monotonic() - t0))

    # -- lifecycle -----------------------------------------------------------------
    @property
    def embed_enabled(self) -> bool:
        return self.embed_model is not None or self.qs.search_mode != "search"

    def start(self, *, wait: bool | None = None) -> None:
        """Boot refresh and the background schedule (idempotent).

        The boot refresh blocks when ``wait`` is true, or by default with
        ``update.waitForBootSync``; a one-shot CLI command passes ``wait=True``
        since a background refresh would be killed at exit before it helps.
        """
        with self._lock:
            if self._started or self._stop.is_set():
                return
            self._started = True
        now = time.monotonic()
        self._next_embed = now + self.qs.update.embed_interval_ms / 1000
        with self._cond:
            self._schedule.start_interval(now)
        boot = self.qs.update.on_boot
        if wait is None:
            wait = self.qs.update.wait_for_boot_sync
        if boot and wait:
            self._guarded_refresh("boot")
        elif boot:
            with self._cond:
                self._schedule.request("boot", first=True)
        self._spawn(self._scheduler, "qmd-scheduler")

    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def close(self) -> None:
        """Stop the schedule and kill any qmd process group still running."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self.runner.close()
        for t in self._threads:
            t.join(timeout=5)

    def notify_change(self) -> None:
        """A memory file changed: update after ``debounceMs`` of quiet."""
        with self._cond:
            self._schedule.note_change(time.monotonic())
            self._cond.notify_all()

    def watch_trees(self) -> tuple[Path, ...]:
        """The folders of the ``memory.qmd.paths`` collections, whose Markdown files
        qmd indexes, for the sync service's watch plan (which skips any already
        covered by the workspace's own)."""
        return tuple(c.path for c in self.collections if c.kind == "path")

    def watch_transcripts(self) -> Path | None:
        """The transcripts folder when qmd exports sessions (a new transcript line
        means a new export), for the sync service's watch plan."""
        if self.sessions_out is None:
            return None
        return sessions_dir(self.settings.state_dir, self.settings.agent_id)

    # -- maintenance -------------------------------------------------------------
    def ensure_collections(self, timeout_s: float | None = None) -> None:
        """Reconcile qmd's collections once (again after a failure); raises QmdError."""
        if self._reconciled:
            return
        wait = -1 if timeout_s is None else max(0.0, timeout_s)
        if not self._collections_lock.acquire(timeout=wait):
            raise QmdError("busy", "qmd collections are still being set up (boot refresh)")
        try:
            if self._reconciled:
                return
            u = self.qs.update
            cmd_s = u.command_timeout_ms / 1000
            upd_s = u.update_timeout_ms / 1000
            if timeout_s is not None:
                cmd_s, upd_s = min(cmd_s, timeout_s), min(upd_s, timeout_s)
            if self.embed_model is not None:
                set_embed_model(self.home, self.embed_model)
            if self.sessions_out is not None:
                self._export_sessions()
            with self._step("collections", "first use"):
                report = reconcile(
                    self.runner, self.collections, command_timeout_s=cmd_s, update_timeout_s=upd_s
                )
            self.reconcile_report = report
            for err in report.errors:
                log.warning("qmd: %s", err)
            self._reconciled = True
            if report.added or report.removed:
                log.info("qmd collections: added %s, removed %s", report.added, report.removed)
        finally:
            self._collections_lock.release()

    def _export_sessions(self) -> None:
        assert self.sessions_out is not None
        try:
            self.export_report = export_sessions(
                self.settings, self.sessions_out, self.qs.sessions.retention_days
            )
        except OSError as exc:
            self.warnings.append(f"session export failed: {exc}")

    def refresh(self, reason: str = "manual", *, embed: bool | None = None) -> bool:
        """``qmd update`` (+ ``qmd embed``) now; True when update succeeded.

        If a refresh is already running, wait for it instead of starting a
        second one: it covers the same files.
        """
        if not self._maint_lock.acquire(blocking=False):
            with self._maint_lock:
                return self.last_update is not None and self.last_update.ok
        try:
            self.refreshing = reason
            u = self.qs.update
            try:
                self.ensure_collections()
                if self.sessions_out is not None:
                    self._export_sessions()
                t0 = time.monotonic()
                with self._step("update", reason):
                    self.runner.run(["update"], timeout_s=u.update_timeout_ms / 1000)
                self.last_update = _Step(time.time(), True, time.monotonic() - t0, reason)
            except QmdError as exc:
                self.last_update = _Step(time.time(), False, 0.0, f"{reason}: {exc}")
                self._record_failure(exc, f"qmd update ({reason})", source="maintenance")
                return False
            self._record_ok(source="maintenance")
            now = time.monotonic()
            if embed is None:
                embed = self.embed_enabled and (
                    reason == "boot"
                    or self.qs.search_mode != "search"
                    or (u.embed_interval_ms > 0 and now >= self._next_embed)
                )
            if embed and self.embed_enabled:
                self._embed(reason)
                self._next_embed = time.monotonic() + u.embed_interval_ms / 1000
            return True
        finally:
            self.refreshing = None
            self._maint_lock.release()

    def _embed(self, reason: str) -> None:
        t0 = time.monotonic()
        try:
            with self._step("embed", reason):
                self.runner.run(["embed"], timeout_s=self.qs.update.embed_timeout_ms / 1000)
            self.last_embed = _Step(time.time(), True, time.monotonic() - t0, reason)
        except QmdError as exc:
            # Vectors missing only hurt vsearch/query, which report their own failure.
            self.last_embed = _Step(time.time(), False, time.monotonic() - t0, str(exc))
            log.warning("qmd embed failed (%s): %s", reason, exc)

    def _scheduler(self) -> None:
        """Run the refreshes the schedule makes due (boot, change, interval)."""
        while True:
            with self._cond:
                job = wait_for_job(self._schedule, self._cond, self._stop)
            if job is None:
                return
            self._guarded_refresh(job.reason)
            with self._cond:
                # ``update.interval`` counts from the last update, whatever caused it
                self._schedule.start_interval(time.monotonic())

    def _guarded_refresh(self, reason: str) -> None:
        try:
            self.refresh(reason)
        except Exception as exc:  # a bug here must not kill the schedule thread
            log.exception("qmd refresh (%s) failed", reason)
            err = QmdError("exit", f"{type(exc).__name__}: {exc}")
            self._record_failure(err, reason, source="maintenance")

    def _record_ok(self, source: str = "search") -> None:
        """qmd answered. A working ``update`` does not vouch for a failing search."""
        with self._lock:
            if source == "maintenance" and self._failure_source == "search":
                return
            recovered = self.fallback_reason is not None
            self._failure_source = None
            self.fallback_reason = None
            self.failure_kind = None
            self.last_ok = time.time()
            self._skip_until = 0.0
            if recovered:
                self._save_health()
        if recovered:
            log.warning("qmd answers again; builtin fallback ended")

    def _record_failure(self, exc: QmdError, what: str, source: str = "search") -> None:
        if self._stop.is_set():
            return  # killed by close(): not a qmd problem
        reason = f"{what}: {exc}"
        with self._lock:
            self._failure_source = source
            self.fallback_reason = reason
            self.failure_kind = exc.kind
            self.last_failure = time.time()
            if exc.kind == "timeout" and source == "search":
                self._skip_until = time.monotonic() + self.timeout_cooldown_s
            if exc.kind not in ("timeout", "busy"):
                self._reconciled = False  # reconcile again once qmd works
            if source == "search":
                self._save_health()
        log.warning("qmd failed, serving from the builtin index: %s", reason)

    # -- the fallback, across processes ------------------------------------------
    @property
    def _health_path(self) -> Path:
        return self.home.root / "memdeck-fallback.json"

    def _save_health(self) -> None:
        """A search's fallback outlives its process (each CLI command is one): the
        next ``memdeck status`` says it until a qmd search succeeds again. Called
        under the lock; a home that cannot be written keeps it in memory only."""
        path = self._health_path
        with contextlib.suppress(OSError):
            if self.fallback_reason is None:
                path.unlink(missing_ok=True)
                return
            if not path.parent.is_dir():
                return
            data = {
                "reason": self.fallback_reason,
                "kind": self.failure_kind,
                "at": self.last_failure,
            }
            tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, path)

    def _load_health(self) -> None:
        try:
            data = json.loads(self._health_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and isinstance(data.get("reason"), str):
            self.fallback_reason = data["reason"]
            self.failure_kind = data.get("kind") if isinstance(data.get("kind"), str) else None
            at = data.get("at")
            self.last_failure = float(at) if isinstance(at, int | float) else None
            self._failure_source = "search"

    # -- search ------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        session_key: str | None = None,
        citations: bool = True,
        mode: QmdSearchMode | None = None,
    ) -> QmdAnswer:
        """One memory_search through qmd (never raises for a qmd problem).

        ``mode`` overrides ``searchMode`` for this call (the CLI comparison).
        """
        mode = mode or self.qs.search_mode
        t0 = time.monotonic()
        decision = check_scope(self.qs.scope, session_key)
        if not decision.allowed:
            log.warning("qmd search denied by memory.qmd.scope: %s", decision.reason)
            return QmdAnswer(ok=True, denied=decision.reason)
        if not query.strip():
            return QmdAnswer(ok=True)
        self.start()
        with self._lock:
            self.searches += 1
            skipping = time.monotonic() < self._skip_until
            reason = self.fallback_reason
        if skipping:
            return self._failed(reason or "qmd recently timed out", "timeout", t0)
        limits = self.qs.limits
        deadline = t0 + limits.timeout_ms / 1000
        limit = min(max_results or limits.max_results, limits.max_results)
        try:
            self.ensure_collections(timeout_s=deadline - time.monotonic())
            names = [c.name for c in self.collections]
            if not names:
                return QmdAnswer(ok=True, duration_ms=(time.monotonic() - t0) * 1000)
            args = search_args(mode, limit, names, query, self.embed_model)
            left = deadline - time.monotonic()
            if left <= 0:
                raise QmdError("timeout", f"qmd timed out after {limits.timeout_ms} ms")
            run = self.runner.run(args, timeout_s=left)
            hits = parse_search_output(run.stdout, run.stderr)
        except QmdError as exc:
            self._record_failure(exc, f"qmd {mode}")
            return self._failed(str(exc), exc.kind, t0)
        self._record_ok()
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        results = self.map_hits(hits[:limit], citations=citations)
        return QmdAnswer(ok=True, results=results, duration_ms=(time.monotonic() - t0) * 1000)

    def _failed(self, reason: str, kind: str | None, t0: float) -> QmdAnswer:
        with self._lock:
            self.fallbacks += 1
        return QmdAnswer(
            ok=False, error=reason, kind=kind, duration_ms=(time.monotonic() - t0) * 1000
        )

    def display_path(self, hit: QmdHit) -> tuple[str, Path | None]:
        """Workspace-relative when memory_get can read it there, else ``qmd/<coll>/<path>``."""
        c = self.by_name.get(hit.collection)
        if c is not None:
            absolute = Path(os.path.normpath(c.path / hit.rel_path))
            if absolute.is_relative_to(self.workspace.root):
                with contextlib.suppress(PathRefused):
                    target = self.workspace.resolve(str(absolute))
                    return self.workspace.rel(target), target
        return f"qmd/{hit.collection}/{hit.rel_path}", None

    def map_hits(self, hits: list[QmdHit], *, citations: bool) -> list[SearchHit]:
        """qmd hits in the memory_search result shape, snippet limits applied."""
        limits = self.qs.limits
        texts = clamp_snippets(
            [h.text for h in hits], limits.max_snippet_chars, limits.max_injected_chars
        )
        out: list[SearchHit] = []
        for hit, text in zip(hits, texts, strict=False):
            path, _ = self.display_path(hit)
            c = self.by_name.get(hit.collection)
            source = "sessions" if c is not None and c.kind == "sessions" else "memory"
            out.append(
                search_hit(
                    path,
                    hit.start_line,
                    hit.end_line,
                    hit.score,
                    text,
                    source,
                    cite=citations,
                    collection=hit.collection,
                    docid=hit.docid,
                    title=hit.title,
                )
            )
        return out

    # -- memory_get --------------------------------------------------------------
    def resolve_qmd_path(self, path: str) -> Path:
        """``qmd/<collection>/<path>`` → the file in that collection's root, or PathRefused.

        Only what the collection indexes can be read: the path must match the
        collection's pattern, and a file of the default memory collections must
        also be a memory file by the workspace's rules (``qmd/memory-root/AGENTS.md``
        is refused though ``AGENTS.md`` sits in that collection's root).
        """
        return self._qmd_target(path)[0]

    def open_qmd_path(self, path: str) -> OpenedFile:
        """Open a ``qmd/<collection>/<path>`` file beneath its collection's root without
        following symlinks (``safe_open``); what is checked is what is read."""
        _target, root, rel = self._qmd_target(path)
        return open_beneath(root, rel, shown=path.strip())

    def _qmd_target(self, path: str) -> tuple[Path, Path, str]:
        raw = path.strip().replace("\\", "/")
        parts = raw.split("/")
        if len(parts) < 3 or parts[0] != "qmd":
            raise PathRefused(f"{path}: not a qmd/<collection>/<path> path")
        if any(p in ("..", "") for p in parts[1:]) or any(p == "." for p in parts):
            raise PathRefused(f"{path}: '..' and empty segments are not allowed")
        c = self.by_name.get(parts[1])
        if c is None:
            known = ", ".join(sorted(self.by_name)) or "none"
            raise PathRefused(f"{path}: no qmd collection {parts[1]!r} (collections: {known})")
        rel = "/".join(parts[2:])
        check_parts(rel, path)
        if not rel.lower().endswith(".md"):
            raise PathRefused(f"{path}: only .md files can be read")
        if not pattern_matches(c.pattern, rel):
            raise PathRefused(f"{path}: not in collection {c.name} (its pattern is {c.pattern!r})")
        root = Path(os.path.abspath(c.path))
        target = Path(os.path.normpath(root / rel))
        if not target.is_relative_to(root):
            raise PathRefused(f"{path}: outside collection {c.name}")
        if c.kind == "memory":
            self.workspace.resolve(str(target))  # the memory rules, as for memory_get
        probe = root
        for part in Path(rel).parts:
            probe = probe / part
            if probe.is_symlink():
                raise PathRefused(f"{path}: symlinks are not followed ({part})")
        return target, root, rel

    # -- status ------------------------------------------------------------------
    def status(self) -> QmdStatus:
        try:
            resolved: str | None = resolve_command(self.qs.command, self.env)[0]
            missing = None
        except QmdError as exc:
            resolved, missing = None, str(exc)
        limits = self.qs.limits
        with self._lock:
            reason = self.fallback_reason or missing
            report, export = self.reconcile_report, self.export_report
            return QmdStatus(
                command=self.qs.command,
                resolved_command=resolved,
                search_mode=self.qs.search_mode,
                home=str(self.home.root),
                started=self._started,
                healthy=None if (self.last_ok is None and reason is None) else reason is None,
                fallback="builtin" if reason else None,
                fallback_reason=reason,
                failure_kind=self.failure_kind or ("missing" if missing else None),
                last_ok=_iso(self.last_ok),
                last_failure=_iso(self.last_failure),
                searches=self.searches,
                fallbacks=self.fallbacks,
                refreshing=self.refreshing,
                last_update=self.last_update.to_status() if self.last_update else None,
                last_embed=self.last_embed.to_status() if self.last_embed else None,
                embed_model=str(self.embed_model) if self.embed_model else None,
                embed_enabled=self.embed_enabled,
                collections=tuple(
                    QmdCollectionInfo(c.name, str(c.path), c.pattern, c.kind)
                    for c in self.collections
                ),
                reconciled=self._reconciled,
                reconcile=(
                    QmdReconcileSummary(
                        tuple(report.kept),
                        tuple(report.added),
                        tuple(report.removed),
                        tuple(report.errors),
                    )
                    if report
                    else None
                ),
                sessions_export=(
                    QmdSessionsExport(
                        dir=str(self.sessions_out),
                        written=len(export.written),
                        unchanged=export.unchanged,
                        removed=len(export.removed),
                        expired=export.expired,
                    )
                    if export and self.sessions_out
                    else None
                ),
                limits=QmdStatusLimits(
                    limits.max_results,
                    limits.max_snippet_chars,
                    limits.max_injected_chars,
                    limits.timeout_ms,
                ),
                warnings=tuple(self.warnings),
            )


def _iso(t: float | None) -> str | None:
    return None if t is None else dt.datetime.fromtimestamp(t).isoformat(timespec="seconds")


def search_answer(backend: QmdBackend, answer: QmdAnswer, citations: str) -> SearchAnswer:
    """A successful (or scope-denied) qmd answer as the memory_search answer."""
    return SearchAnswer(
        results=tuple(answer.results),
        provider="qmd",
        model=str(backend.embed_model) if backend.embed_model else None,
        fallback=None,
        citations=citations,
        mode=backend.qs.search_mode,
        backend="qmd",
        denied=True if answer.denied is not None else None,
        scope=answer.denied,
    )
