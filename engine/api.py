"""memdeck as a library: open an agent's memory, search it, read it, keep it fresh.

The supported way for a program to use the engine (docs/embedding.md). Everything
here is typed and stable; the modules behind it (``engine.core``, ``engine.tools``,
the settings loader) may change between versions.

>>> with open_memory("~/notes", embeddings="off") as memory:   # doctest: +SKIP
...     answer = memory.search("flat white")
...     page = memory.get(answer.results[0].path)

The answers are the records the CLI and the MCP tools print: :class:`SearchAnswer`
(``memory_search``), :class:`MemoryGetAnswer` (``memory_get``), :class:`EngineStatus`
(``memdeck status``); each has ``to_json()`` for the tools' JSON.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from engine.config.loader import load_settings
from engine.config.reader import ConfigError
from engine.core import Engine
from engine.events import Event, SyncDone
from engine.search.results import QueryRefused, SearchAnswer, SearchHit, SearchUnavailable
from engine.status import EngineStatus
from engine.tools import MemoryGetError, memory_get_answer, read_memory, search_memory
from engine.workspace.get_answer import MemoryGetAnswer
from engine.workspace.presence import workspace_problem

if TYPE_CHECKING:
    from engine.index.sync_service import SyncService

__all__ = [
    "ConfigError",
    "EngineStatus",
    "Event",
    "Memory",
    "MemoryGetAnswer",
    "MemoryGetError",
    "QueryRefused",
    "SearchAnswer",
    "SearchFailed",
    "SearchHit",
    "SyncDone",
    "WorkspaceError",
    "open_memory",
]

PathArg = str | os.PathLike[str]


class WorkspaceError(OSError):
    """The workspace folder is missing, not a folder, or unreadable (the message says
    which, and names the path)."""


class SearchFailed(RuntimeError):
    """A search that could not run (memory search disabled, the index damaged or
    unavailable); ``unavailable`` is the tool's answer, with ``error`` and ``action``."""

    def __init__(self, unavailable: SearchUnavailable):
        super().__init__(f"{unavailable.error} ({unavailable.action})")
        self.unavailable = unavailable


def open_memory(
    workspace: PathArg | None = None,
    *,
    config: PathArg | None = None,
    agent: str | None = None,
    profile: Literal["memdeck", "openclaw"] | None = None,
    embeddings: Literal["auto", "off"] = "auto",
    read_only: bool = False,
    client: str = "api",
    env: Mapping[str, str] | None = None,
) -> Memory:
    """Open one agent's memory, as ``memdeck --workspace W --config C --agent A`` does.

    ``workspace`` defaults to the agent's workspace in ``openclaw.json``; ``config``
    to ``$OPENCLAW_CONFIG_PATH`` or ``<state>/openclaw.json`` (optional, unless given);
    ``profile`` to ``$MEMDECK_PROFILE``, then memdeck's settings, else ``memdeck``.
    ``embeddings="off"`` searches by keywords only (no model, no provider request);
    ``"auto"`` picks the provider the configuration names, else the local model if
    one is registered. ``read_only`` never creates or changes the index (``sync`` is
    refused; a search needs an index built before). ``client`` names this program
    in the recall log (the app's Agent activity). ``env`` replaces ``os.environ``
    for where state lives and which keys exist.

    Raises :class:`WorkspaceError` for a workspace folder that is not there and
    :class:`ConfigError` for a configuration memdeck cannot run with.
    """
    environ = os.environ if env is None else env
    settings = load_settings(
        config_path=Path(config).expanduser() if config is not None else None,
        workspace=Path(workspace).expanduser() if workspace is not None else None,
        agent_id=agent,
        env=environ,
        profile=profile,
    )
    problem = workspace_problem(settings.workspace)
    if problem is not None:
        raise WorkspaceError(problem.message)
    engine = Engine(
        settings,
        provider="auto" if embeddings == "auto" else None,
        env=environ,
        read_only=read_only,
    )
    return Memory(engine, client=client)


class Memory:
    """One workspace's memory: its index, search and reads. Use it as a context manager
    (or call :meth:`close`); it is safe to call from several threads."""

    def __init__(self, engine: Engine, *, client: str = "api"):
        self._engine = engine
        self._client = client
        self._service: SyncService | None = None
        self._lock = threading.Lock()
        self._closed = False

    # -- reading ---------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        explain: bool = False,
    ) -> SearchAnswer:
        """``memory_search``: the best passages for ``query``, ranked by the active
        profile. ``max_results`` (1–50) and ``min_score`` (0–1) default to the
        configured ``query.*``; ``explain`` adds each result's breakdown.

        A never-built index is built first (unless opened ``read_only``). Raises
        :class:`QueryRefused` for a query over 4,096 characters and
        :class:`SearchFailed` when the search cannot run."""
        self._check_open()
        if max_results is not None and not 1 <= max_results <= 50:
            raise ValueError(f"max_results must be from 1 to 50, got {max_results}")
        if min_score is not None and not 0.0 <= min_score <= 1.0:
            raise ValueError(f"min_score must be from 0 to 1, got {min_score}")
        answer = search_memory(
            self._engine, query, max_results, min_score, explain=explain, client=self._client
        )
        if isinstance(answer, SearchUnavailable):
            raise SearchFailed(answer)
        return answer

    def get(
        self,
        path: str,
        from_line: int | None = None,
        lines: int | None = None,
        *,
        from_char: int | None = None,
    ) -> MemoryGetAnswer:
        """``memory_get``: up to ``lines`` lines (default 120, within 12,000
        characters) of a memory file from 1-based ``from_line``. ``truncated`` and
        ``next_from`` say where to continue; a ``from_line`` past the end is an empty
        page (``lines == 0``). ``path`` is workspace-relative, as search results give it.

        Raises :class:`MemoryGetError` for a path memory_get may not read or that does
        not exist (its ``answer`` says why), ``ValueError`` for ``from_line`` or
        ``lines`` below 1."""
        self._check_open()
        for name, value, lowest in (("from_line", from_line, 1), ("lines", lines, 1)):
            if value is not None and value < lowest:
                raise ValueError(f"{name} must be at least {lowest}, got {value}")
        if from_char is not None and from_char < 0:
            raise ValueError(f"from_char must be at least 0, got {from_char}")
        got = read_memory(self._engine, path, from_line, lines, from_char=from_char)
        return memory_get_answer(got)

    def status(self) -> EngineStatus:
        """Where the index is, what built it, how fresh it is (``memdeck status``)."""
        self._check_open()
        return self._engine.status()

    # -- keeping it fresh --------------------------------------------------------------
    def sync(self, *, force: bool = False) -> SyncDone:
        """Bring the index up to date with the files now (``force``: a full atomic
        rebuild); blocking. Raises ``RuntimeError`` on a ``read_only`` memory."""
        self._check_open()
        return self._engine.sync(reason="api", force=force)

    def watch(self) -> None:
        """Keep the index fresh in the background until :meth:`close`: the file
        watcher, the configured schedules and a sync now (``memdeck watch``'s rules)."""
        self._check_open()
        if self._engine.read_only:
            raise RuntimeError("this memory was opened read_only: it cannot sync")
        from engine.index.sync_service import SyncService

        with self._lock:
            if self._service is None:
                self._service = SyncService(self._engine)
                self._service.start()

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback`` with every engine event (sync started, progress, done or
        failed, file errors, search timings), on the thread that publishes it; returns
        the function that unsubscribes. A callback that raises is dropped."""
        self._check_open()
        return self._engine.bus.subscribe(callback)

    # -- lifetime ----------------------------------------------------------------------
    @property
    def workspace(self) -> Path:
        """The workspace folder this memory reads."""
        return self._engine.workspace.root

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the background sync (if :meth:`watch` started it) and close the index.
        Closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            service, self._service = self._service, None
        if service is not None:
            service.stop()
        self._engine.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this memory is closed")
