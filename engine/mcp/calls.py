"""What each MCP tool does, in plain synchronous Python over one ``Engine``.

The server runs these on worker threads. Each returns the JSON-able answer or
raises :class:`ToolFailure` with a message a model can act on (what went wrong
and what to do next); the server turns that into an MCP tool error. The work
itself is the engine's: ``engine.tools`` for search and get (the same code as
``memdeck search`` and ``memdeck get``, so the answers are identical), and the
workspace's append-only writer for ``memory_append``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core import Engine
from engine.mcp.schemas import (
    MEMORY_APPEND,
    MEMORY_GET,
    MEMORY_SEARCH,
    MEMORY_STATUS,
    READ_TOOLS,
    BadArguments,
    ToolSpec,
    validate,
)
from engine.mcp.settings import McpSettings
from engine.tools import MemoryGetError, memory_get_answer, memory_search, read_memory, read_rule
from engine.workspace.files import PathRefused

#: a run of characters without a space that an error would rather not repeat whole
_LONG_RUN = re.compile(r"\S{81,}")


def shorten_runs(text: str) -> str:
    """An error never repeats a long argument back (docs/mcp.md "Errors"): a run of
    more than 80 characters without a space keeps its first 60 and its length."""
    return _LONG_RUN.sub(lambda m: f"{m.group()[:60]}… ({len(m.group()):,} characters)", text)


class ToolFailure(RuntimeError):
    """A tool call that cannot be answered; the message is shown to the model."""


@dataclass(frozen=True)
class CallContext:
    """Who is calling: recorded with each search in the app's Agent activity."""

    client: str = "mcp"


class Tools:
    """The tool set of one server: its engine, its settings and (optionally) its sync."""

    def __init__(
        self,
        engine: Engine,
        settings: McpSettings,
        *,
        sync_state: Callable[[], Mapping[str, Any]] | None = None,
        on_write: Callable[[], None] | None = None,
    ):
        self.engine = engine
        self.settings = settings
        self._sync_state = sync_state
        self._on_write = on_write
        self.specs: tuple[ToolSpec, ...] = READ_TOOLS + (
            (MEMORY_APPEND,) if settings.allow_append else ()
        )
        self._by_name = {s.name: s for s in self.specs}
        self._running = 0
        self._idle = threading.Condition()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the calls running now to finish
        (a stopping server lets them answer before it closes the engine)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._running == 0, timeout)

    def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: CallContext) -> Any:
        with self._idle:
            self._running += 1
        try:
            return self._call(name, arguments, ctx)
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def _call(self, name: str, arguments: Mapping[str, Any] | None, ctx: CallContext) -> Any:
        spec = self._by_name.get(name)
        if spec is None:
            if name == MEMORY_APPEND.name:
                raise ToolFailure(
                    "memory_append is turned off: this memdeck only lets agents read memory. "
                    'The user can allow writing with "mcp": {"allowAppend": true} in '
                    f"{self.settings.path or 'memdeck settings.json'} and restarting the server."
                )
            known = ", ".join(s.name for s in self.specs)
            raise ToolFailure(f"unknown tool {name!r}; this server has: {known}")
        try:
            args = validate(spec, arguments)
        except BadArguments as exc:
            raise ToolFailure(str(exc)) from None
        handler = {
            MEMORY_SEARCH.name: self._search,
            MEMORY_GET.name: self._get,
            MEMORY_STATUS.name: self._status,
            MEMORY_APPEND.name: self._append,
        }[name]
        try:
            return handler(args, ctx)
        except ToolFailure:
            raise
        except Exception as exc:  # an engine failure must never take the server down
            raise ToolFailure(
                f"{name} failed: {type(exc).__name__}: {exc}. Call memory_status to see the "
                "index state; if the index is damaged the user can run `memdeck index --force`."
            ) from exc

    # -- the tools ---------------------------------------------------------------
    def _search(self, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        out = memory_search(
            self.engine,
            args["query"],
            args.get("maxResults"),
            args.get("minScore"),
            explain=bool(args.get("explain", False)),
            client=ctx.client,
        )
        if out.get("disabled"):
            raise ToolFailure(f"memory search is unavailable: {out['error']} ({out['action']})")
        return out

    def _get(self, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        """``from``/``lines`` below 1 never get here (the schema refuses them, as
        OpenClaw 2026.9.6's tool does). A ``from`` past the end is an empty page
        under the ``openclaw`` profile (OpenClaw's answer: ``status: "ok"``, ``lines:
        0``) and an error naming the file's line count in memdeck's own."""
        try:
            got = read_memory(self.engine, args["path"], args.get("from"), args.get("lines"))
        except MemoryGetError as exc:
            if read_rule(self.engine) == "openclaw" and not exc.disabled:
                # OpenClaw 2026.9.6's answer, a missing file or a refused path
                # included, is the agent's data (status not_found / error)
                return exc.answer.with_status().to_json()
            raise self._get_failure(exc) from None
        page = got.page
        if page.past_end and not got.openclaw:
            total = page.total_lines
            raise ToolFailure(
                f"{got.path} has {total} line{'' if total == 1 else 's'}; from={page.start} "
                f"is past its end. Read from=1, or from={max(1, total)} for the last line."
            )
        return memory_get_answer(got).to_json()

    @staticmethod
    def _get_failure(exc: MemoryGetError) -> ToolFailure:
        error = shorten_runs(exc.answer.error or str(exc))
        if exc.disabled:
            return ToolFailure(f"memory tools are disabled: {error}")
        if error.endswith("no such memory file"):
            return ToolFailure(
                f"{error}. Use a path exactly as memory_search returned it; daily logs "
                "are memory/YYYY-MM-DD.md."
            )
        return ToolFailure(
            f"refused: {error}. memory_get reads only MEMORY.md, memory.md, files under "
            "memory/ and configured extra paths, by workspace-relative path."
        )

    def _status(self, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        st = self.engine.status().to_json()
        keys = (
            "workspace",
            "store",  # sqlite or postgres (store.backend)
            "index",  # the SQLite file, or PostgreSQL's DSN (password masked) and namespace
            "store_version",
            "backend",
            "provider",
            "model",
            "dims",
            "mode",
            "fts",
            "vector",
            "files",
            "files_on_disk",
            "chunks",
            "embedded_chunks",
            "dirty",
            "needs_full_reindex",
            "provider_error",
            "last_error",
            "file_errors",
            "fallback",
            "fallback_reason",
        )
        out: dict[str, Any] = {k: st.get(k) for k in keys}
        out["search_enabled"] = self.engine.ms.enabled and self.engine.settings.tools_enabled
        out["append_enabled"] = self.settings.allow_append
        if self._sync_state is not None:
            out["sync"] = dict(self._sync_state())
        return out

    def _append(self, args: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        try:
            path, line = self.engine.workspace.append_entry(args["text"])
        except (PathRefused, ValueError) as exc:
            raise ToolFailure(f"memory_append refused: {exc}") from None
        self.engine.mark_dirty()
        if self._on_write is not None:
            self._on_write()
        return {"path": self.engine.workspace.rel(path), "line": line, "appended": True}
