"""What ``QmdBackend.status()`` reports: typed records with the historical JSON keys.

The TUI monitor and ``memdeck status`` read these attributes; ``to_json()``
gives the ``qmd`` block of ``memdeck status --json`` unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.qmd.config import QmdSearchMode
from engine.records import JsonRecord


@dataclass(frozen=True)
class QmdStep(JsonRecord):
    """The outcome of one maintenance command (``qmd update`` / ``qmd embed``)."""

    at: str  # local ISO time, seconds
    ok: bool
    duration_s: float
    detail: str | None = None


@dataclass(frozen=True)
class QmdCollectionInfo(JsonRecord):
    """One qmd collection memdeck keeps (name, root, glob, what it holds)."""

    name: str
    path: str
    pattern: str
    kind: str


@dataclass(frozen=True)
class QmdReconcileSummary(JsonRecord):
    """What the last collection reconcile kept, added, removed and failed at."""

    kept: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    errors: tuple[str, ...]


@dataclass(frozen=True)
class QmdSessionsExport(JsonRecord):
    """The last session-transcript export: where, and how many files changed."""

    dir: str
    written: int
    unchanged: int
    removed: int
    expired: int


@dataclass(frozen=True)
class QmdStatusLimits(JsonRecord):
    """``memory.qmd.limits`` as resolved (camelCase keys, as in openclaw.json)."""

    JSON_NAMES: ClassVar[dict[str, str]] = {
        "max_results": "maxResults",
        "max_snippet_chars": "maxSnippetChars",
        "max_injected_chars": "maxInjectedChars",
        "timeout_ms": "timeoutMs",
    }

    max_results: int
    max_snippet_chars: int
    max_injected_chars: int
    timeout_ms: int


@dataclass(frozen=True)
class QmdStatus(JsonRecord):
    """The qmd sidecar's health, schedule and configuration at one moment.

    ``healthy`` is None until qmd has either answered or failed once;
    ``fallback`` is ``"builtin"`` while searches are served by the builtin index.
    """

    command: str
    resolved_command: str | None
    search_mode: QmdSearchMode
    home: str
    started: bool
    healthy: bool | None
    fallback: str | None
    fallback_reason: str | None
    failure_kind: str | None
    last_ok: str | None
    last_failure: str | None
    searches: int
    fallbacks: int
    refreshing: str | None
    last_update: QmdStep | None
    last_embed: QmdStep | None
    embed_model: str | None
    embed_enabled: bool
    collections: tuple[QmdCollectionInfo, ...]
    reconciled: bool
    reconcile: QmdReconcileSummary | None
    sessions_export: QmdSessionsExport | None
    limits: QmdStatusLimits
    warnings: tuple[str, ...]
