"""Memory flush before compaction: token estimates, thresholds, cycles, sessions.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config.loader import ConfigError
from engine.memory.flush import (
    DEFAULT_PROMPT,
    FlushPolicy,
    SessionStoreError,
    estimate_tokens,
    estimate_transcript,
    load_flush_settings,
    sessions_report,
)


def msg(entry_id: str, role: str, text: str) -> str:
    return json.dumps(
        {"type": "message", "id": entry_id, "message": {"role": role, "content": text}}
    )


def body(tokens: int, role: str = "user") -> str:
    """Text whose "role: text" costs exactly ``tokens`` tokens (4 chars each)."""
    return "x" * (tokens * 4 - len(role) - 2)


def write_config(state: Path, doc: dict) -> None:
    (state / "openclaw.json").write_text(json.dumps(doc), encoding="utf-8")


def sessions_dir(state: Path) -> Path:
    d = state / "agents" / "main" / "sessions"
    d.mkdir(parents=True, exist_ok=True)
    return d


CONFIG = {
    "agents": {
        "defaults": {
            "compaction": {"reserveTokensFloor": 1000, "memoryFlush": {"softThresholdTokens": 500}}
        }
    }
}


def test_estimate_tokens_latin_and_cjk():
    # 4 chars per token, rounded up; a CJK character costs 4 chars (one token).
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("user: 中文") == 4  # 6 + 2*4 = 14 chars -> ceil(14/4)


def test_estimate_transcript_counts_context_after_compaction(tmp_path):
    t = tmp_path / "s.jsonl"
    lines = [
        json.dumps({"type": "session", "id": "h"}),
        msg("a", "user", body(100)),
        msg("b", "assistant", body(100, "assistant")),
        "not json at all",
        msg("c", "user", body(100)),
        json.dumps({"type": "compaction", "id": "k", "summary": "y" * 80, "firstKeptEntryId": "c"}),
        json.dumps(
            {
                "type": "message",
                "id": "d",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "z" * 180},
                        {"type": "toolCall", "name": "memory_get", "arguments": {"p": 1}},
                    ],
                },
            }
        ),
    ]
    t.write_text("\n".join(lines) + "\n", encoding="utf-8")
    est = estimate_transcript(t)
    # d: "assistant: " (11) + "z"*180 + "\n" + "memory_get" (10) + "\n" + '{"p": 1}' (8)
    #    = 11 + 180 + 1 + 10 + 1 + 8 = 211 chars -> 53 tokens
    # in context after the compaction: summary 80/4 = 20, kept c = 100, then d = 53
    assert est.tokens == 20 + 100 + 53
    assert est.total_tokens == 100 + 100 + 100 + 53
    assert est.messages == 2 and est.compactions == 1 and est.bad_lines == 1


def test_flush_decisions_cycles_and_sessions_json(make_settings, state_dir):
    write_config(state_dir, CONFIG)
    d = sessions_dir(state_dir)
    (d / "small.jsonl").write_text(msg("a", "user", body(220)) + "\n")
    (d / "big.jsonl").write_text(msg("a", "user", body(400)) + "\n" + msg("b", "user", body(200)))
    store = {
        "agent:main:small": {"sessionId": "small", "contextTokens": 2000, "updatedAt": 1},
        "agent:main:big": {"sessionId": "big", "contextTokens": 2000, "channel": "telegram"},
    }
    (d / "sessions.json").write_text(json.dumps(store))
    policy = FlushPolicy(make_settings())
    # threshold = contextWindow − reserveTokensFloor − softThresholdTokens = 2000 − 1000 − 500
    by_key = {x.key: x for x in policy.decisions()}
    small, big = by_key["agent:main:small"], by_key["agent:main:big"]
    assert small.threshold == big.threshold == 500
    assert (small.tokens, small.state, small.needs_flush) == (220, "below-threshold", False)
    assert (big.tokens, big.state, big.needs_flush) == (600, "due", True)
    assert big.compaction_count == 0

    after = policy.mark_flushed("agent:main:big", at=1_700_000_000.0)
    assert after.state == "flushed" and not after.needs_flush
    saved = json.loads((d / "sessions.json").read_text())
    assert saved["agent:main:big"] == {
        "sessionId": "big",
        "contextTokens": 2000,
        "channel": "telegram",
        "memoryFlushAt": 1_700_000_000_000,
        "memoryFlushCompactionCount": 0,
    }
    assert saved["agent:main:small"] == store["agent:main:small"]
    with pytest.raises(ValueError, match="no flush due"):
        policy.mark_flushed("agent:main:big")  # one flush per compaction cycle

    # A compaction starts cycle 1; the kept context (summary 100 + b 200 + new 300) is
    # again over 500, so a flush is due again in the new cycle.
    with open(d / "big.jsonl", "a") as fh:
        fh.write(
            "\n" + json.dumps({"type": "compaction", "summary": "s" * 400, "firstKeptEntryId": "b"})
        )
        fh.write("\n" + msg("c", "user", body(300)) + "\n")
    again = policy.decision("agent:main:big")
    assert (again.tokens, again.compaction_count, again.state) == (600, 1, "due")
    assert policy.mark_flushed("agent:main:big").flushed_compaction_count == 1


def test_context_cap_read_only_and_disabled(make_settings, state_dir):
    d = sessions_dir(state_dir)
    (d / "one.jsonl").write_text(msg("a", "user", body(300)) + "\n")
    (d / "sessions.json").write_text(json.dumps({"k": {"sessionId": "one"}}))
    write_config(state_dir, {"agents": {"defaults": {"contextTokens": 24_000}}})
    # window 200000 capped to 24000: 24000 − 20000 − 4000 = 0 -> never flushes
    only = FlushPolicy(make_settings()).decision("k")
    assert only.threshold == 0 and only.state == "disabled"

    write_config(
        state_dir,
        {
            "agents": {
                "defaults": {
                    "contextTokens": 24_300,
                    "sandbox": {"mode": "all", "workspaceAccess": "ro"},
                }
            }
        },
    )
    policy = FlushPolicy(make_settings())
    ro = policy.decision("k")  # threshold 300, tokens 300: due, but the workspace is ro
    assert (ro.threshold, ro.tokens, ro.state) == (300, 300, "read-only")
    with pytest.raises(ValueError, match="read-only"):
        policy.mark_flushed("k")

    write_config(
        state_dir,
        {
            "agents": {
                "defaults": {
                    "contextTokens": 24_300,
                    "compaction": {"memoryFlush": {"enabled": False}},
                }
            }
        },
    )
    assert FlushPolicy(make_settings()).decision("k").state == "disabled"


def test_prompts_and_settings(make_settings, state_dir):
    import datetime as dt

    policy = FlushPolicy(make_settings())
    prompts = policy.prompts(dt.date(2026, 3, 15))
    assert prompts["systemPrompt"] == "Session nearing compaction. Store durable memories now."
    assert prompts["prompt"] == DEFAULT_PROMPT.replace("YYYY-MM-DD", "2026-03-15")
    assert "memory/2026-03-15.md" in prompts["prompt"]
    write_config(
        state_dir,
        {
            "agents": {
                "defaults": {
                    "compaction": {
                        "memoryFlush": {
                            "systemPrompt": "Flush now.",
                            "prompt": "Notes go to memory/YYYY-MM-DD.md",
                        }
                    }
                }
            }
        },
    )
    custom = FlushPolicy(make_settings()).prompts(dt.date(2026, 1, 2))
    assert custom == {"systemPrompt": "Flush now.", "prompt": "Notes go to memory/2026-01-02.md"}
    f = load_flush_settings(make_settings())
    assert (f.enabled, f.reserve_tokens_floor, f.soft_threshold_tokens) == (True, 20000, 4000)


def test_bad_config_and_bad_store_are_clear_errors(make_settings, state_dir):
    write_config(
        state_dir,
        {
            "agents": {
                "defaults": {
                    "compaction": {
                        "memoryFlush": {"softThresholdTokens": "lots"},
                        "reserveTokensFlor": 1,
                    }
                }
            }
        },
    )
    with pytest.raises(ConfigError) as err:
        load_flush_settings(make_settings())
    assert "agents.defaults.compaction.memoryFlush.softThresholdTokens" in str(err.value)
    assert "expected a number" in str(err.value)
    write_config(state_dir, {"agents": {"defaults": {"compaction": {"reserveTokensFlor": 1}}}})
    warned = load_flush_settings(make_settings()).warnings
    assert any("reserveTokensFlor" in w and "reserveTokensFloor" in w for w in warned)

    d = sessions_dir(state_dir)
    (d / "sessions.json").write_text("{broken")
    with pytest.raises(SessionStoreError, match="not valid JSON"):
        FlushPolicy(make_settings()).decisions()
    assert (d / "sessions.json").read_text() == "{broken"  # nothing lost


def test_transcript_without_store_entry(make_settings, state_dir):
    d = sessions_dir(state_dir)
    (d / "stray.jsonl").write_text(msg("a", "user", body(10)) + "\n")
    report = sessions_report(make_settings())
    (row,) = report["sessions"]
    assert row["key"] == "file:stray.jsonl" and row["in_store"] is False
    assert row["tokens"] == 10 and row["state"] == "below-threshold"
    assert report["flush"]["softThresholdTokens"] == 4000
    with pytest.raises(ValueError, match="no entry"):
        FlushPolicy(make_settings()).mark_flushed("file:stray.jsonl")
