"""Real-shaped OpenClaw session transcripts (JSONL) for the flattening parity test.

Each transcript is what an OpenClaw 2026.9 agent writes: a ``session`` header,
model and thinking-level changes, user messages (channel timestamp stamps,
injected ``⟦openclaw:ctx⟧`` context blocks, delivery hints, active-memory
blocks), assistant messages with thinking, text and tool calls, tool results —
and the turns OpenClaw leaves out of its index: heartbeats, ``NO_REPLY`` in its
shapes, ``HEARTBEAT_OK``, ``[cron:…]`` prompts, ``System: […]`` envelopes, exec
completions, inter-session and recalled-memory turns, runtime-context blocks,
a dreaming-narrative run. Messages vary in length (past the 800-unit wrap, with
and without spaces, emoji and CJK at the cut), scripts and line endings; some
lines are malformed or half-written.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

MARK = "\u27e6openclaw:ctx\u27e7"
HINT = "Delivery: to send a message, use the `message` tool."
HEARTBEAT_PROMPT = (
    "Follow the heartbeat monitor scratch context when provided. Recurring tasks are "
    "automations; create or change their schedules with the automations tool, not heartbeat "
    "scratch. Do not infer or repeat old tasks from prior chats. If nothing needs attention, "
    "reply NO_REPLY."
)
TASK_PROMPT = (
    "Run the following periodic tasks (only those due based on their intervals):\n"
    "- check the inbox\n\nAfter completing all due tasks, reply HEARTBEAT_OK."
)
RUNTIME = (
    "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nOpenClaw runtime event.\nThis context is "
    "runtime-generated, not user-authored. Keep internal details private.\nsubagent finished "
    "ok\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
)
WORDS = [
    "deploy",
    "atlas",
    "rollback",
    "plan",
    "dana",
    "coffee",
    "berlin",
    "invoice",
    "meeting",
    "thursday",
    "budget",
    "review",
    "server",
    "migration",
    "database",
    "kafka",
    "lisbon",
    "trip",
    "passport",
    "flight",
    "hotel",
    "garden",
    "tomatoes",
    "guitar",
    "lesson",
    "dentist",
    "appointment",
    "birthday",
    "cake",
    "tea",
    "oolong",
    "chapter",
    "draft",
]
SCRIPTS = [
    "Café crème brûlée à Zürich",
    "数据库迁移方案已经完成",
    "東京オフィスの会議は金曜日です",
    "서울 사무실에서 회의를 했다",
    "Привет, как дела?",
    "naïve résumé — “quoted” text",
    "e\u0301te\u0301 combining marks",
    "emoji 🚀🎉 and 👩‍💻 family 👨‍👩‍👧",
    "tab\tseparated\tvalues",
]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _long(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:  # long prose, cut at spaces
        return _sentence(rng, rng.randint(150, 420))
    if kind == 1:  # one long word: no space to cut at
        return "x" * rng.randint(801, 2500)
    if kind == 2:  # emoji at the cut
        return "a" * 799 + "🚀" * rng.randint(1, 5) + " tail " + _sentence(rng, 40)
    if kind == 3:  # CJK without spaces
        return "数据库迁移" * rng.randint(170, 400)
    return "\n\n".join(_sentence(rng, 60) for _ in range(8))  # paragraphs


def _stamp(rng: random.Random) -> str:
    day, hour, minute = rng.randint(10, 28), rng.randint(0, 23), rng.randint(0, 59)
    return f"[Mon 2026-11-{day} {hour:02d}:{minute:02d} UTC] "


def _user_text(rng: random.Random) -> str:
    body = rng.choice(
        [
            _sentence(rng, rng.randint(1, 30)),
            rng.choice(SCRIPTS),
            _long(rng),
            f"line one\nline two\r\n  line three {_sentence(rng, 3)}",
        ]
    )
    shape = rng.randrange(8)
    if shape == 0:
        return _stamp(rng) + body
    if shape == 1:
        meta = json.dumps({"chat": "telegram", "sender": {"name": "Dana"}}, indent=2)
        return f"Conversation info {MARK}\n```json\n{meta}\n```\n\n{_stamp(rng)}{body}"
    if shape == 2:
        return f"Sender: {MARK}\nname: Dana\nid: 42\n\n{body}"
    if shape == 3:
        return f"{HINT}\n{body}"
    if shape == 4:
        return f"{body}\n\nContext: {MARK}\nreply_to: 17\nthread: general"
    if shape == 5:
        return (
            f"Context:\n<active_memory_plugin>\nDana likes flat white\n</active_memory_plugin>\n\n"
            f"{body}"
        )
    if shape == 6:
        return f"{RUNTIME}\n\n{body}"
    return body


def _assistant_text(rng: random.Random) -> str:
    return rng.choice(
        [
            _sentence(rng, rng.randint(1, 40)),
            rng.choice(SCRIPTS),
            _long(rng),
            f"Sure.\n\n- {_sentence(rng, 4)}\n- {_sentence(rng, 5)}",
            f"{RUNTIME}\nDone: {_sentence(rng, 6)}",
        ]
    )


# what OpenClaw leaves out (or nearly: some are kept on purpose, to test the edges)
SILENT_USER = [
    "System: [2026-11-23 09:00:00 UTC] Exec finished (code 0)",
    "System (untrusted): [2026-11-23 09:00] node paired",
    "[cron:daily-digest 0 9 * * *] Summarise yesterday's notes",
    "[cron:x] ",
    HEARTBEAT_PROMPT,
    "[OpenClaw heartbeat poll]",
    "[OpenClaw cron wake]",
    TASK_PROMPT,
    "exec completed (build-7, code 0) :: all tests passed",
    "Exec finished: make test",
    "NO_REPLY",
]
SILENT_ASSISTANT = [
    "NO_REPLY",
    "no_reply",
    "NO_REPLY.",
    "  NO_REPLY  NO_REPLY ",
    '"NO_REPLY"',
    '{"action": "NO_REPLY"}',
    "<think>nothing new</think> NO_REPLY",
    "<thinking>checked inbox</thinking>\nI'll stay quiet. NO_REPLY",
    "<think>still thinking NO_REPLY",
    "HEARTBEAT_OK",
    "exec failed (job_1, signal SIGTERM)",
]
KEPT_EDGES = [
    "NO_REPLY but actually here is the answer: 42",
    "HEARTBEAT_OK, and the deploy finished",
    "[cron is my favourite word]",
    "System: no brackets here",
    "Please NO_REPLY to this",
    "[Tue 2026-11-24 10:00] stamp without a zone",
    "the heartbeat poll found nothing",
]


def _msg(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": None, "message": {"role": role, "content": content, **extra}}


def _content(rng: random.Random, text: str, role: str) -> Any:
    shape = rng.randrange(5)
    if shape == 0:
        return text
    if shape == 1 and role == "assistant":
        return [
            {"type": "thinking", "thinking": _sentence(rng, 8)},
            {"type": "text", "text": text},
            {"type": "toolCall", "id": "t1", "name": "memory_search", "arguments": {"query": "x"}},
        ]
    if shape == 2:
        half = len(text) // 2
        return [{"type": "text", "text": text[:half]}, {"type": "text", "text": text[half:]}]
    if shape == 3:
        return [
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "text", "text": text},
        ]
    return [{"type": "text", "text": text}]


def transcript(rng: random.Random, turns: int) -> list[Any]:
    """One transcript's records (dicts, or raw strings for broken lines)."""
    records: list[Any] = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-11-23T09:00:00.000Z"},
        {"type": "model_change", "provider": "anthropic", "modelId": "claude"},
        {"type": "thinking_level_change", "thinkingLevel": "low"},
    ]
    for _ in range(turns):
        kind = rng.randrange(16)
        if kind == 0:  # heartbeat turn with provenance: the user message and its replies
            records.append(
                _msg(
                    "user",
                    "check",
                    provenance={"kind": "internal_system", "sourceTool": "heartbeat"},
                )
            )
            records.append(_msg("assistant", _assistant_text(rng)))
            records.append(_msg("assistant", "HEARTBEAT_OK"))
        elif kind == 1:  # recalled memory turn
            tool = rng.choice(["memory_search", "memory_get"])
            records.append(
                _msg(
                    "user",
                    _user_text(rng),
                    provenance={"kind": "internal_system", "sourceTool": tool},
                )
            )
            records.append(_msg("assistant", _assistant_text(rng)))
        elif kind == 2:  # a message routed from another session: only the user side goes
            records.append(
                _msg(
                    "user",
                    _user_text(rng),
                    provenance={"kind": "inter_session", "sourceSessionKey": "agent:main:x"},
                )
            )
            records.append(_msg("assistant", _assistant_text(rng)))
        elif kind == 3:
            records.append(_msg("user", _content(rng, rng.choice(SILENT_USER), "user")))
            records.append(
                _msg("assistant", _content(rng, rng.choice(SILENT_ASSISTANT), "assistant"))
            )
        elif kind == 4:
            records.append(_msg(rng.choice(["user", "assistant"]), rng.choice(KEPT_EDGES)))
        elif kind == 5:
            records.append(
                {
                    "type": "message",
                    "message": {
                        "role": "toolResult",
                        "toolCallId": "t1",
                        "content": [{"type": "text", "text": _sentence(rng, 10)}],
                    },
                }
            )
        elif kind == 6:
            records.append(
                rng.choice(
                    [
                        '{"type": "message", "message": {"role": "user", "conte',
                        "not json",
                        "",
                        "   ",
                        "[1, 2]",
                        "null",
                        '{"type": "message"}',
                        '{"type": "message", "message": {"role": "user"}}',
                        '{"type": "message", "message": {"role": "system", "content": "x"}}',
                        '{"type": "message", "message": {"role": "user", "content": []}}',
                        '{"type": "message", "message": {"role": "user", "content": 7}}',
                    ]
                )
            )
        elif kind == 7:
            records.append(
                {"type": "custom", "customType": "openclaw:note", "data": {"runId": "r-1"}}
            )
            records.append(
                _msg(
                    "user",
                    _content(rng, _user_text(rng), "user"),
                    provenance={"kind": "external_user"},
                )
            )
        else:
            records.append(_msg("user", _content(rng, _user_text(rng), "user")))
            records.append(_msg("assistant", _content(rng, _assistant_text(rng), "assistant")))
    return records


def dreaming_transcript(rng: random.Random) -> list[Any]:
    """Conversation, then a record showing a dreaming-narrative run wrote it."""
    records = transcript(rng, 6)
    records.insert(
        5,
        {
            "type": "custom",
            "customType": "openclaw:bootstrap-context:full",
            "data": {"runId": "dreaming-narrative-42"},
        },
    )
    return records


def _encode(records: list[Any], rng: random.Random) -> bytes:
    lines = [
        r if isinstance(r, str) else json.dumps(r, ensure_ascii=rng.random() < 0.3) for r in records
    ]
    sep = "\r\n" if rng.random() < 0.1 else "\n"
    text = sep.join(lines)
    if rng.random() < 0.7:
        text += sep
    return text.encode("utf-8")


Writer = Callable[[Path, bytes], None]


def write_corpus(sessions_dir: Path, count: int, seed: int = 2026) -> list[Path]:
    """*count* transcripts (plus a dreaming-narrative one) in *sessions_dir*."""
    rng = random.Random(seed)
    sessions_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(count):
        turns = rng.choice([0, 1, 3, 8, 20, 60])
        path = sessions_dir / f"{i:04d}-{rng.getrandbits(32):08x}.jsonl"
        path.write_bytes(_encode(transcript(rng, turns), rng))
        out.append(path)
    path = sessions_dir / "dreaming.jsonl"
    path.write_bytes(_encode(dreaming_transcript(rng), rng))
    out.append(path)
    return out
