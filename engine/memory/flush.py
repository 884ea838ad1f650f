"""Memory flush before compaction: which sessions need one, and the prompts.

When a session's context nears auto-compaction, OpenClaw runs one silent turn
that asks the model to write durable notes to disk before older messages are
summarised away. memdeck is not the agent, so it does not run that turn; it
computes the same decision for every session of the agent from the transcripts
on disk, shows it, and hands the decision and the two prompts to whoever does
run the turn (``FlushPolicy``), which then records it with
:meth:`FlushPolicy.mark_flushed`.

The rule, per session:

* token estimate = the context the model would see now: the text of every
  message after the last compaction (plus the compaction summary and the
  messages it kept), at about 4 characters per token (CJK characters count as
  one token each, as in the chunker);
* threshold = ``contextWindow − reserveTokensFloor − softThresholdTokens``;
* a flush is *due* when the estimate reaches the threshold, flush is enabled,
  the workspace is writable and no flush was recorded for the current
  compaction cycle. The cycle is the number of compactions so far; a flush is
  recorded in OpenClaw's ``sessions.json`` as ``memoryFlushCompactionCount``
  (plus ``memoryFlushAt``, epoch milliseconds), so "one flush per compaction
  cycle" means the two counts differ.

``contextWindow`` is the session's ``contextTokens`` from ``sessions.json``
when the gateway recorded it, else 200 000; ``agents.defaults.contextTokens``
caps it. A sandboxed session with ``workspaceAccess`` ``"ro"`` or ``"none"``
(or a workspace on a read-only file system) never flushes: the model could not
write the notes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.config.blocks import settings_reader
from engine.config.paths import sessions_dir
from engine.config.reader import ConfigError, ConfigReader, warn_unknown
from engine.config.settings import Settings
from engine.index.tokens import estimate_chars_cost
from engine.workspace.files import atomic_write_json

DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_SYSTEM_PROMPT = "Session nearing compaction. Store durable memories now."
DEFAULT_PROMPT = (
    "Write any lasting notes to memory/YYYY-MM-DD.md; reply with NO_REPLY if nothing to store."
)
STORE_FILE = "sessions.json"
DATE_TOKEN = "YYYY-MM-DD"

_COMPACTION_KEYS: dict[str, Any] = {
    "reserveTokensFloor": None,
    "memoryFlush": {
        "enabled": None,
        "softThresholdTokens": None,
        "systemPrompt": None,
        "prompt": None,
    },
    # Compaction keys that belong to the agent runtime, not to the flush decision.
    "mode": None,
    "reserveTokens": None,
    "keepRecentTokens": None,
}
_READ_ONLY_ACCESS = ("ro", "none")


@dataclass(frozen=True)
class FlushSettings:
    """``agents.defaults.compaction`` as far as the flush decision needs it."""

    enabled: bool = True
    reserve_tokens_floor: int = 20_000
    soft_threshold_tokens: int = 4_000
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    prompt: str = DEFAULT_PROMPT
    context_tokens_cap: int | None = None  # agents.defaults.contextTokens
    sandbox_mode: str = "off"
    workspace_access: str = "rw"
    warnings: tuple[str, ...] = ()

    def threshold(self, context_window: int) -> int:
        """``contextWindow − reserveTokensFloor − softThresholdTokens`` (never negative)."""
        return max(0, context_window - self.reserve_tokens_floor - self.soft_threshold_tokens)


def load_flush_settings(settings: Settings) -> FlushSettings:
    """Read the compaction block from ``settings.raw`` with the config module's checks.

    Raises :class:`ConfigError` (file, key path, expectation) for wrong types;
    unknown keys become warnings on the returned object.
    """
    root = settings_reader(settings)
    base = ("agents", "defaults", "compaction")
    warn_unknown(root.obj(base), _COMPACTION_KEYS, "agents.defaults.compaction", root.ctx)
    defaults = FlushSettings()
    sandbox = _sandbox(root, settings.agent_id)
    cap = root.integer(("agents", "defaults", "contextTokens"), 0, lo=0)
    return FlushSettings(
        enabled=root.boolean((*base, "memoryFlush", "enabled"), defaults.enabled),
        reserve_tokens_floor=root.integer(
            (*base, "reserveTokensFloor"), defaults.reserve_tokens_floor, lo=0
        ),
        soft_threshold_tokens=root.integer(
            (*base, "memoryFlush", "softThresholdTokens"), defaults.soft_threshold_tokens, lo=0
        ),
        system_prompt=_prompt(root, (*base, "memoryFlush", "systemPrompt"), DEFAULT_SYSTEM_PROMPT),
        prompt=_prompt(root, (*base, "memoryFlush", "prompt"), DEFAULT_PROMPT),
        context_tokens_cap=cap or None,
        sandbox_mode=sandbox[0],
        workspace_access=sandbox[1],
        warnings=tuple(root.ctx.warnings),
    )


def _prompt(root: ConfigReader, keys: tuple[str, ...], default: str) -> str:
    text = root.string(keys)
    return text if text and text.strip() else default


def _sandbox(root: ConfigReader, agent_id: str) -> tuple[str, str]:
    """(mode, workspaceAccess): the agent's own sandbox block over the defaults."""
    mode = root.string(("agents", "defaults", "sandbox", "mode")) or "off"
    access = root.string(("agents", "defaults", "sandbox", "workspaceAccess")) or "rw"
    agents = root.get(("agents", "list"))
    if isinstance(agents, list):
        for index, entry in enumerate(agents):
            if isinstance(entry, dict) and entry.get("id") == agent_id:
                reader = ConfigReader(entry, {(): f"agents.list[{index}]"}, root.ctx)
                mode = reader.string(("sandbox", "mode")) or mode
                access = reader.string(("sandbox", "workspaceAccess")) or access
    return mode, access


# --------------------------------------------------------------------------- transcripts


@dataclass(frozen=True)
class TranscriptEstimate:
    """What a transcript says about the live context."""

    tokens: int  # estimated tokens in context now (after the last compaction)
    total_tokens: int  # estimated tokens of every message ever written
    messages: int  # message lines in context now
    compactions: int  # compaction records in the transcript
    bad_lines: int  # lines that were not JSON objects (skipped)


def estimate_tokens(text: str) -> int:
    """About 4 characters per token, a CJK character about one token."""
    if not text:
        return 0
    return math.ceil(estimate_chars_cost(text) / 4)


def _content_text(content: Any) -> str:
    """All text a message puts into the context: text, thinking, tool calls and results."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        for key in ("text", "thinking"):
            if isinstance(item.get(key), str):
                parts.append(item[key])
        if item.get("type") == "toolCall":
            parts.append(str(item.get("name") or ""))
            with contextlib.suppress(TypeError, ValueError):
                parts.append(json.dumps(item.get("arguments"), ensure_ascii=False))
    return "\n".join(p for p in parts if p)


def estimate_transcript(path: Path) -> TranscriptEstimate:
    """Read a JSONL transcript and estimate the tokens of the context it implies.

    A ``compaction`` record replaces everything before it with its summary,
    except the messages from ``firstKeptEntryId`` on, which it keeps. Bad lines
    are skipped and counted, never fatal.
    """
    kept: list[tuple[str | None, int, bool]] = []  # (entry id, tokens, is a message) in context
    total = compactions = bad = 0
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                bad += 1
                continue
            if not isinstance(obj, dict):
                bad += 1
                continue
            kind = obj.get("type")
            if kind == "message" and isinstance(obj.get("message"), dict):
                message = obj["message"]
                role = str(message.get("role") or "")
                tokens = estimate_tokens(role + ": " + _content_text(message.get("content")))
                total += tokens
                kept.append((obj.get("id"), tokens, True))
            elif kind == "compaction":
                compactions += 1
                first = obj.get("firstKeptEntryId")
                ids = [entry_id for entry_id, _, _ in kept]
                keep_from = ids.index(first) if first is not None and first in ids else len(kept)
                raw_summary = obj.get("summary")
                summary = raw_summary if isinstance(raw_summary, str) else ""
                kept = [(None, estimate_tokens(summary), False), *kept[keep_from:]]
    return TranscriptEstimate(
        tokens=sum(t for _, t, _ in kept),
        total_tokens=total,
        messages=sum(1 for _, _, is_message in kept if is_message),
        compactions=compactions,
        bad_lines=bad,
    )


# --------------------------------------------------------------------------- sessions.json


class SessionStoreError(RuntimeError):
    """sessions.json cannot be read or updated (the message says why)."""


def read_session_store(path: Path) -> dict[str, dict[str, Any]]:
    """OpenClaw's ``sessions.json``: ``{sessionKey: entry}``; missing file → empty."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SessionStoreError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not data.strip():
        return {}
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise SessionStoreError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise SessionStoreError(f"{path}: expected an object of sessions at the top level")
    return {k: v for k, v in doc.items() if isinstance(v, dict)}


# --------------------------------------------------------------------------- decisions

#: Decision states, in the order the rule checks them.
STATES = ("disabled", "read-only", "no-transcript", "flushed", "below-threshold", "due")


@dataclass(frozen=True)
class FlushDecision:
    """The flush state of one session, with every number that led to it."""

    key: str  # sessions.json key, or "file:<name>" for a transcript without an entry
    session_id: str
    transcript: str | None
    tokens: int
    threshold: int
    context_window: int
    reserve_tokens_floor: int
    soft_threshold_tokens: int
    compaction_count: int
    flushed_compaction_count: int | None
    flushed_at: int | None  # epoch ms
    state: str  # one of STATES
    reason: str
    needs_flush: bool
    in_store: bool
    total_tokens: int = 0
    messages: int = 0
    bad_lines: int = 0
    updated_at: float | None = None  # transcript mtime

    @property
    def ratio(self) -> float:
        """tokens / threshold (0 when there is no threshold)."""
        return self.tokens / self.threshold if self.threshold > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ratio"] = round(self.ratio, 4)
        return out


@dataclass
class FlushPolicy:
    """Flush decisions for every session of one agent."""

    settings: Settings
    flush: FlushSettings = field(init=False)

    def __post_init__(self) -> None:
        self.flush = load_flush_settings(self.settings)

    @property
    def directory(self) -> Path:
        return sessions_dir(self.settings.state_dir, self.settings.agent_id)

    @property
    def store_path(self) -> Path:
        return self.directory / STORE_FILE

    def workspace_read_only(self) -> str | None:
        """Why the workspace cannot take notes, or None when it can."""
        f = self.flush
        if f.sandbox_mode != "off" and f.workspace_access in _READ_ONLY_ACCESS:
            return f'sandboxed with workspaceAccess "{f.workspace_access}"'
        root = self.settings.workspace
        probe = root if root.exists() else root.parent
        if probe.exists() and not os.access(probe, os.W_OK):
            return f"{root} is not writable"
        return None

    def prompts(self, day: dt.date | None = None) -> dict[str, str]:
        """The system prompt and the user prompt of the flush turn, dated for ``day``."""
        stamp = (day or dt.date.today()).isoformat()
        return {
            "systemPrompt": self.flush.system_prompt.replace(DATE_TOKEN, stamp),
            "prompt": self.flush.prompt.replace(DATE_TOKEN, stamp),
        }

    def _sessions(self) -> Iterator[tuple[str, dict[str, Any], Path | None, bool]]:
        store = read_session_store(self.store_path)
        seen: set[Path] = set()
        for key, entry in store.items():
            transcript = self._transcript_for(entry)
            if transcript is not None:
                seen.add(transcript.resolve())
            yield key, entry, transcript, True
        if self.directory.is_dir():
            for path in sorted(self.directory.glob("*.jsonl")):
                if path.is_symlink() or path.resolve() in seen:
                    continue
                yield f"file:{path.name}", {"sessionId": path.stem}, path, False

    def _transcript_for(self, entry: dict[str, Any]) -> Path | None:
        named = entry.get("sessionFile")
        if isinstance(named, str) and named.strip():
            path = Path(named)
            return path if path.is_absolute() else self.directory / path
        session_id = entry.get("sessionId")
        if isinstance(session_id, str) and session_id and "/" not in session_id:
            return self.directory / f"{session_id}.jsonl"
        return None

    def decisions(self) -> list[FlushDecision]:
        """Every session, most recently active first."""
        out = [self._decide(k, e, t, s) for k, e, t, s in self._sessions()]
        out.sort(key=lambda d: (-(d.updated_at or 0.0), d.key))
        return out

    def decision(self, key: str) -> FlushDecision:
        for k, e, t, s in self._sessions():
            if k == key:
                return self._decide(k, e, t, s)
        raise KeyError(f"no session {key!r} in {self.store_path}")

    def _decide(
        self, key: str, entry: dict[str, Any], transcript: Path | None, in_store: bool
    ) -> FlushDecision:
        f = self.flush
        window = _positive_int(entry.get("contextTokens")) or DEFAULT_CONTEXT_WINDOW
        if f.context_tokens_cap is not None:
            window = min(window, f.context_tokens_cap)
        threshold = f.threshold(window)
        estimate: TranscriptEstimate | None = None
        mtime: float | None = None
        if transcript is not None:
            with contextlib.suppress(OSError):
                mtime = transcript.stat().st_mtime
                estimate = estimate_transcript(transcript)
        compactions = max(
            _positive_int(entry.get("compactionCount")) or 0,
            estimate.compactions if estimate else 0,
        )
        flushed_count = entry.get("memoryFlushCompactionCount")
        flushed_count = flushed_count if isinstance(flushed_count, int) else None
        flushed_at = entry.get("memoryFlushAt")
        flushed_at = flushed_at if isinstance(flushed_at, int) else None
        tokens = estimate.tokens if estimate else 0
        read_only = self.workspace_read_only()
        if not f.enabled:
            state, reason = "disabled", "compaction.memoryFlush.enabled is false"
        elif threshold <= 0:
            state, reason = (
                "disabled",
                (f"threshold {window} − {f.reserve_tokens_floor} − {f.soft_threshold_tokens} ≤ 0"),
            )
        elif read_only:
            state, reason = "read-only", f"skipped: {read_only}"
        elif estimate is None:
            state, reason = "no-transcript", "transcript missing or unreadable"
        elif flushed_count is not None and flushed_count == compactions:
            state, reason = "flushed", f"already flushed in compaction cycle {compactions}"
        elif tokens < threshold:
            state, reason = "below-threshold", f"{tokens} < {threshold} tokens"
        else:
            state, reason = "due", f"{tokens} ≥ {threshold} tokens; cycle {compactions} not flushed"
        return FlushDecision(
            key=key,
            session_id=str(entry.get("sessionId") or ""),
            transcript=str(transcript) if transcript else None,
            tokens=tokens,
            threshold=threshold,
            context_window=window,
            reserve_tokens_floor=f.reserve_tokens_floor,
            soft_threshold_tokens=f.soft_threshold_tokens,
            compaction_count=compactions,
            flushed_compaction_count=flushed_count,
            flushed_at=flushed_at,
            state=state,
            reason=reason,
            needs_flush=state == "due",
            in_store=in_store,
            total_tokens=estimate.total_tokens if estimate else 0,
            messages=estimate.messages if estimate else 0,
            bad_lines=estimate.bad_lines if estimate else 0,
            updated_at=mtime,
        )

    def mark_flushed(self, key: str, *, at: float | None = None) -> FlushDecision:
        """Record that the flush turn ran for ``key``'s current compaction cycle.

        Refuses (``ValueError``) unless the session is due: a second flush in
        the same cycle, a read-only workspace or a disabled flush must not be
        recorded as done. Only this entry's two flush fields change; every
        other key of ``sessions.json`` is written back as it was read.
        """
        decision = self.decision(key)
        if not decision.in_store:
            raise ValueError(f"{key}: the transcript has no entry in {self.store_path}")
        if decision.state != "due":
            raise ValueError(f"{key}: no flush due ({decision.state}: {decision.reason})")
        try:
            doc = json.loads(self.store_path.read_bytes())
        except (OSError, ValueError) as exc:
            raise SessionStoreError(f"{self.store_path}: cannot update ({exc})") from None
        entry = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(entry, dict):
            raise SessionStoreError(f"{self.store_path}: session {key!r} vanished")
        entry["memoryFlushAt"] = int((time.time() if at is None else at) * 1000)
        entry["memoryFlushCompactionCount"] = decision.compaction_count
        atomic_write_json(self.store_path, doc)
        return self.decision(key)


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return int(value)


def sessions_report(settings: Settings, day: dt.date | None = None) -> dict[str, Any]:
    """The ``memdeck sessions --json`` document."""
    policy = FlushPolicy(settings)
    f = policy.flush
    return {
        "agent": settings.agent_id,
        "sessionsDir": str(policy.directory),
        "flush": {
            "enabled": f.enabled,
            "reserveTokensFloor": f.reserve_tokens_floor,
            "softThresholdTokens": f.soft_threshold_tokens,
            "readOnly": policy.workspace_read_only(),
            **policy.prompts(day),
        },
        "sessions": [d.to_dict() for d in policy.decisions()],
        "warnings": list(f.warnings),
    }


__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "ConfigError",
    "FlushDecision",
    "FlushPolicy",
    "FlushSettings",
    "SessionStoreError",
    "TranscriptEstimate",
    "estimate_tokens",
    "estimate_transcript",
    "load_flush_settings",
    "sessions_report",
]
