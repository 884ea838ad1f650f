"""What the agent is given every turn equals OpenClaw 2026.9.6's own bootstrap injection.

OpenClaw's functions (``buildBootstrapContextFiles``, ``buildBootstrapInjectionStats``,
``analyzeBootstrapBudget``, the limit and ``contextInjection`` resolvers, and
``resolveBootstrapContextForDiagnostics`` on real folders) run through
``node/bootstrap_budget.mjs``; memdeck's :mod:`engine.openclaw.bootstrap` and
:mod:`engine.memory.context` must give the same injected text, character for
character, and the same analysis on:

* 1,200 generated file sets: sizes on and around the per-file and total limits,
  CRLF and LF, trailing white space of every JavaScript kind, BOMs, astral
  characters (two UTF-16 units each) where the cuts fall, CJK, AGENTS.md policy
  lines (its digest), tiny limits (the compact marker), missing files, several
  files that together run into the total limit;
* 400 generated ``openclaw.json`` documents for the limits (``agents.defaults``,
  ``agents.entries`` and ``agents.list``, odd values and ids);
* 24 workspaces on disk, read by both (file order, [MISSING] lines, MEMORY.md
  and USER.md left out when absent).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from engine.memory.context import bootstrap_files, measure
from engine.openclaw.bootstrap import (
    BOOTSTRAP_FILE_NAMES,
    BootstrapFile,
    Injection,
    context_injection,
    from_utf16_units,
    inject,
    resolve_limits,
)

CASES = 1200
CONFIGS = 400
WORKSPACES = 24

WORDS = [
    "deploy",
    "staging",
    "token",
    "rotate",
    "backup",
    "nightly",
    "owner",
    "must",
    "never",
    "secret",
    "test",
    "commit",
    "push",
    "github",
    "pr",
    "scoped",
    "required",
    "credential",
    "security",
    "validation",
    "command",
    "note",
    "idea",
    "alpha",
    "beta",
]
ASTRAL = ["😀", "𠀀", "🔴", "𝒜", "🎉"]
CJK = ["禁止", "必須", "記憶", "日本語", "한국어"]
TRAILING = [
    "",
    " ",
    "\t",
    "\n",
    "\n\n",
    " \n",
    "\u00a0",
    "\u3000",
    "\ufeff",
    "\u2028",
    "\r\n",
    "\x0b",
]


def _line(rng: random.Random) -> str:
    kind = rng.random()
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, 12))]
    if rng.random() < 0.25:
        words.insert(rng.randint(0, len(words)), rng.choice(ASTRAL) * rng.randint(1, 3))
    if rng.random() < 0.15:
        words.insert(rng.randint(0, len(words)), rng.choice(CJK))
    text = " ".join(words)
    if kind < 0.15:
        return f"{'#' * rng.randint(1, 6)} {text}"
    if kind < 0.45:
        return f"{rng.choice('-*+')} {text}"
    if kind < 0.5:
        return f"{rng.randint(1, 30)}. {text}"
    if kind < 0.53:
        return rng.choice(["```", "~~~", "```python"])
    if kind < 0.56:
        return "x" * rng.randint(200, 400)  # over the digest's 240 per line
    if kind < 0.6:
        return "  " + text + "   "
    return text


def _content(rng: random.Random, size: int) -> str:
    newline = "\r\n" if rng.random() < 0.3 else "\n"
    lines: list[str] = []
    length = 0
    while length < size:
        line = _line(rng)
        lines.append(line)
        length += len(line) + len(newline)
    text = newline.join(lines)
    text = text[: max(0, size)]
    if rng.random() < 0.3 and text:  # an astral character right at a likely cut
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(ASTRAL) + text[at:]
    if rng.random() < 0.05:
        text = "\ufeff" + text
    return text + "".join(rng.choice(TRAILING) for _ in range(rng.randint(0, 3)))


def _limits(rng: random.Random) -> tuple[int, int]:
    roll = rng.random()
    if roll < 0.04:
        return 20_000, 60_000
    if roll < 0.12:
        return rng.choice([1, 2, 3, 5, 10, 16, 30, 50, 63, 64, 65, 80, 90]), rng.randint(1, 400)
    max_chars = rng.choice([100, 150, 200, 300, 500, 800, 1000, 1500, 2000, 4000, 4001])
    max_chars += rng.randint(-5, 5)
    total = rng.choice(
        [max_chars, max_chars * 2, max_chars * 3, max_chars * 6, 64, 100, 63, rng.randint(1, 5000)]
    )
    return max_chars, max(1, total + rng.randint(-3, 3))


def generated_cases(n: int, seed: int = 20269) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        max_chars, total = _limits(rng)
        files = []
        for name in BOOTSTRAP_FILE_NAMES:
            if rng.random() < 0.35:
                continue
            if rng.random() < 0.12:
                files.append({"name": name, "path": f"/ws/{name}", "content": None})
                continue
            limit = min(max_chars, 4000) if name == "USER.md" else max_chars
            pick = rng.random()
            if pick < 0.35:
                size = limit + rng.randint(-4, 4)
            elif pick < 0.45:
                size = rng.randint(0, 3)
            else:
                size = rng.randint(0, limit * 3)
            files.append({"name": name, "path": f"/ws/{name}", "content": _content(rng, size)})
        cases.append({"files": files, "maxChars": max_chars, "totalMaxChars": total})
    return cases


def _ours(case: dict[str, Any]) -> list[Injection]:
    files = [BootstrapFile(f["name"], f["path"], f["content"]) for f in case["files"]]
    return inject(files, max_chars=case["maxChars"], total_max_chars=case["totalMaxChars"])


def _analysis(injections: list[Injection]) -> list[dict[str, Any]]:
    return [
        {
            "name": i.name,
            "path": i.path,
            "missing": i.missing,
            "rawChars": i.raw_chars,
            "injectedChars": i.injected_chars,
            "truncated": i.truncated,
            "effectiveFileLimit": i.effective_limit,
            "causes": list(i.causes),
        }
        for i in injections
    ]


def _context(injections: list[Injection]) -> list[dict[str, str]]:
    return [
        {"path": i.path, "content": from_utf16_units(i.injected)}
        for i in injections
        if i.injected is not None
    ]


def _differences(label: str, ours: list[Injection], theirs: dict[str, Any]) -> list[str]:
    out = []
    if _context(ours) != theirs["context"]:
        out.append(f"{label}: injected text differs")
    if _analysis(ours) != theirs["files"]:
        out.append(f"{label}: analysis differs: ours {_analysis(ours)} theirs {theirs['files']}")
    return out


def _visible_matches(case: dict[str, Any], ours: list[Injection]) -> list[str]:
    """The ranges said visible are in the injected text, in order, verbatim."""
    from engine.openclaw.bootstrap import js_trim_end, utf16_units

    bad = []
    by_path = {f["path"]: f for f in case["files"]}
    for i in ours:
        if i.injected is None or i.missing:
            continue
        units = js_trim_end(utf16_units(by_path[i.path]["content"]))
        at = 0
        for a, b in i.visible:
            found = i.injected.find(units[a:b], at)
            if found < 0:
                bad.append(f"{i.path}: visible range {a}-{b} not in the injected text")
                break
            at = found + (b - a)
        if not i.truncated and i.raw_chars and i.visible != ((0, i.raw_chars),):
            bad.append(f"{i.path}: whole file injected but visible is {i.visible}")
    return bad


# -- configs ------------------------------------------------------------------------------
def _value(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            0,
            -5,
            1,
            2.7,
            150,
            20_000,
            4_000.9,
            "300",
            True,
            [],
            {},
            rng.randint(1, 100_000),
        ]
    )


def _agent_entry(rng: random.Random) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for key in ("bootstrapMaxChars", "bootstrapTotalMaxChars"):
        if rng.random() < 0.6:
            entry[key] = _value(rng)
    if rng.random() < 0.4:
        entry["contextInjection"] = rng.choice(["always", "never", "continuation-skip", "x", 3])
    return entry


def generated_configs(n: int, seed: int = 9_6) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    ids = ["main", "Main", " ops ", "ops", "OPS", "my agent", "a.b", "-x-", "writer", ""]
    out = []
    for _ in range(n):
        config: dict[str, Any] = {}
        agents: dict[str, Any] = {}
        if rng.random() < 0.7:
            defaults = _agent_entry(rng)
            if rng.random() < 0.3:
                defaults["contextInjection"] = rng.choice(["never", "always", "continuation-skip"])
            agents["defaults"] = defaults
        layout = rng.random()
        if layout < 0.4:
            agents["entries"] = {rng.choice(ids) or "main": _agent_entry(rng) for _ in range(3)}
        elif layout < 0.75:
            listed: list[Any] = []
            for _ in range(rng.randint(0, 3)):
                entry = _agent_entry(rng)
                if rng.random() < 0.9:
                    entry["id"] = rng.choice(ids)
                listed.append(entry)
            agents["list"] = listed
        if agents or rng.random() < 0.5:
            config["agents"] = agents
        out.append({"config": config, "agentId": rng.choice(["main", "ops", "OPS", "writer"])})
    return out


# -- workspaces on disk ----------------------------------------------------------------------
def make_workspaces(root: Path, n: int, seed: int = 2026) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for k in range(n):
        ws = root / f"ws{k}"
        ws.mkdir(parents=True)
        max_chars = rng.choice([300, 1000, 2000, 20_000])
        total = rng.choice([max_chars, max_chars * 2, 5_000, 60_000])
        for name in BOOTSTRAP_FILE_NAMES:
            if rng.random() < 0.3:
                continue
            size = rng.choice([max_chars - 2, max_chars + 3, rng.randint(0, max_chars * 2)])
            (ws / name).write_bytes(_content(rng, size).encode("utf-8"))
        if k == 0:  # the case the brief names: a 36,000-character MEMORY.md
            (ws / "MEMORY.md").write_text(_content(rng, 36_000), encoding="utf-8")
            max_chars, total = 20_000, 60_000
        config = {"agents": {"defaults": {"bootstrapMaxChars": max_chars}}}
        if rng.random() < 0.5:
            config = {
                "agents": {
                    "defaults": {"bootstrapTotalMaxChars": total},
                    "entries": {"main": {"bootstrapMaxChars": max_chars}},
                }
            }
        out.append({"workspaceDir": str(ws), "config": config, "agentId": "main"})
    return out


def test_bootstrap_injection_equals_openclaw(openclaw, tmp_path):
    cases = generated_cases(CASES)
    configs = generated_configs(CONFIGS)
    workspaces = make_workspaces(tmp_path / "spaces", WORKSPACES)
    theirs = openclaw.node_json(
        "bootstrap_budget.mjs",
        {
            "cases": cases,
            "configs": configs,
            "workspaces": workspaces,
            "stateDir": str(tmp_path / "state"),
        },
    )

    diffs: list[str] = []
    truncated = total_cut = astral_cut = 0
    for n, (case, expected) in enumerate(zip(cases, theirs["cases"], strict=True)):
        ours = _ours(case)
        diffs += _differences(f"case {n}", ours, expected)
        diffs += [f"case {n}: {d}" for d in _visible_matches(case, ours)]
        truncated += sum(i.truncated for i in ours)
        total_cut += sum("total-limit" in i.causes for i in ours)
        astral_cut += any(
            i.truncated and any(ord(c) > 0xFFFF for c in f["content"] or "")
            for i, f in zip(ours, case["files"], strict=True)
        )
    assert len(cases) >= 1000
    # the corpus really exercises the cuts
    assert truncated > 1000 and total_cut > 200 and astral_cut > 100, (
        truncated,
        total_cut,
        astral_cut,
    )

    for n, (cfg, expected) in enumerate(zip(configs, theirs["configs"], strict=True)):
        max_chars, total = resolve_limits(cfg["config"], cfg["agentId"])
        mode = context_injection(cfg["config"], cfg["agentId"])
        ours_cfg = {"maxChars": max_chars, "totalMaxChars": total, "contextInjection": mode}
        # OpenClaw hands a defaults value it does not know on as it is; its callers only
        # test for "never" and "continuation-skip", so any other value acts as "always"
        if expected["contextInjection"] not in ("never", "continuation-skip"):
            expected = {**expected, "contextInjection": "always"}
        if ours_cfg != expected:
            diffs.append(f"config {n} {cfg}: ours {ours_cfg} theirs {expected}")

    for n, (ws, expected) in enumerate(zip(workspaces, theirs["workspaces"], strict=True)):
        root = Path(ws["workspaceDir"])
        files = bootstrap_files(root, setup_pending=True)  # no state: setup not complete
        max_chars, total = resolve_limits(ws["config"], "main")
        ours = inject(files, max_chars=max_chars, total_max_chars=total)
        diffs += _differences(f"workspace {n}", ours, expected)
        report = measure(root, files, max_chars=max_chars, total_max_chars=total)
        assert [f.path for f in report.files] == [
            Path(f["path"]).relative_to(root).as_posix() for f in expected["files"]
        ]
    assert not diffs, f"{len(diffs)} differences:\n" + "\n".join(diffs[:10])
