"""``memory.qmd.scope``: which sessions may receive QMD search results.

The schema is OpenClaw's ``session.sendPolicy``: a default action and ordered
rules ``{action, match: {channel?, chatType?, keyPrefix?, rawKeyPrefix?}}``; the
first rule whose every given field matches decides. The point is privacy — the
long-term memory of a direct chat should not surface in a group — so the
default is "deny, except direct chats".

Session keys look like ``agent:<id>:<rest>``. ``keyPrefix`` matches ``<rest>``
(the normalised key), ``rawKeyPrefix`` the whole key; both lower-cased. The
chat type comes from a ``group``/``channel``/``direct``/``dm`` segment of the
key, and a key without one (``agent:main:main``) is the agent's direct chat.
A search without any session key — memdeck's own CLI and TUI, i.e. the owner
at the keyboard — counts as a direct chat.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.qmd.config import ScopeRule, ScopeSettings

_TYPE_SEGMENTS = {"group": "group", "channel": "channel", "direct": "direct", "dm": "direct"}


@dataclass(frozen=True)
class SessionScope:
    raw_key: str  # lower-cased, "" without a session
    key: str  # without the "agent:<id>:" prefix
    channel: str | None
    chat_type: str


@dataclass(frozen=True)
class ScopeDecision:
    allowed: bool
    reason: str


def parse_session_key(session_key: str | None) -> SessionScope:
    raw = (session_key or "").strip().lower()
    if not raw:
        return SessionScope("", "", None, "direct")
    parts = raw.split(":")
    rest = parts[2:] if len(parts) >= 3 and parts[0] == "agent" else parts
    key = ":".join(rest)
    chat_type = "direct"
    for segment in rest:
        if segment in _TYPE_SEGMENTS:
            chat_type = _TYPE_SEGMENTS[segment]
            break
    channel = rest[0] if rest and rest[0] not in ("main", *_TYPE_SEGMENTS) else None
    return SessionScope(raw, key, channel, chat_type)


def _matches(rule: ScopeRule, s: SessionScope) -> bool:
    if rule.channel is not None and rule.channel != s.channel:
        return False
    if rule.chat_type is not None and rule.chat_type != s.chat_type:
        return False
    if rule.key_prefix is not None and not s.key.startswith(rule.key_prefix):
        return False
    return rule.raw_key_prefix is None or s.raw_key.startswith(rule.raw_key_prefix)


def check_scope(scope: ScopeSettings, session_key: str | None) -> ScopeDecision:
    """Allow or deny one search, with a reason naming the session's channel and chat type."""
    s = parse_session_key(session_key)
    who = (
        f"session {s.raw_key!r} (channel {s.channel or '-'}, chatType {s.chat_type})"
        if s.raw_key
        else "no session key (direct)"
    )
    for i, rule in enumerate(scope.rules):
        if _matches(rule, s):
            return ScopeDecision(rule.action == "allow", f"{who}: rule {i} says {rule.action}")
    return ScopeDecision(
        scope.default == "allow", f"{who}: no rule matched; default {scope.default}"
    )
