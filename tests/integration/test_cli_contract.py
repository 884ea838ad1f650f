"""The command line keeps its contract, checked as a user meets it.

Every documented command runs as a real process twice, in two fresh but
identical homes: once with the global options before the command word and
once after it. The two runs must print the same thing (paths and timings
normalised). The table of commands is checked against ``memdeck --help`` and
docs/cli.md, so a new command cannot skip this test.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import REPO, cli_env, run_cli

NOTES = {
    "MEMORY.md": "# Memory\n\nDana prefers flat white coffee.\n\n## Atlas\nRollback owner: Dana.\n",
    "memory/2026-03-01.md": "# 2026-03-01\n\nAtlas rollback plan drafted.\nCoffee with Ravi.\n",
}
#: a config whose effect shows in the output: maxResults 1 and an agent-specific index
CONFIG = """{
  // JSON5, as a user writes it
  agents: { defaults: { memorySearch: { query: { maxResults: 1, minScore: 0 } } } },
}"""


@dataclass(frozen=True)
class Command:
    """One documented command line; ``words`` excludes the global options."""

    words: tuple[str, ...]
    stdin: str | None = None
    json: bool = True  # add --json to the global options


BATCH = "\n".join(json.dumps({"id": i, "query": q}) for i, q in enumerate(["coffee", "atlas"]))
#: an MCP client's first message; at end of input the server answers it and stops (its
#: stderr banner names the workspace and the agent's index, so the globals show)
MCP_INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "contract-test", "version": "1"},
        },
    }
)
COMMANDS = [
    Command(("status",)),
    Command(("status",), json=False),
    Command(("index",)),
    Command(("index", "--force")),
    Command(("index", "--progress")),
    Command(("search", "coffee")),
    Command(("search", "coffee"), json=False),
    Command(("search", "rollback", "--explain", "--max-results", "2", "--min-score", "0")),
    Command(("search", "atlas", "--mode", "fts", "--fusion", "rrf", "--no-mmr", "--decay")),
    Command(("search", "atlas", "--mode", "hybrid", "--fusion", "weighted", "--mmr")),
    Command(("search", "coffee", "--backend", "builtin", "--session-key", "agent:main:main")),
    Command(("search", "--batch", "-"), stdin=BATCH),
    Command(("get", "memory/2026-03-01.md", "--from", "3", "--lines", "1")),
    Command(("get", "MEMORY.md")),
    Command(("get", "MEMORY.md", "--from", "3", "--from-char", "4"), json=False),
    Command(("sessions",)),
    Command(("promote",)),
    Command(("promote", "--apply")),
    Command(("dream", "--phase", "light")),
    Command(("dream", "--due")),
    Command(("demo", "{root}/demo", "--no-tui")),
    Command(("tui",)),  # no terminal here: the same refusal in both positions
    Command(("watch",)),  # run until its first sync, then Ctrl-C
    Command(("model", "import", "--out", "{root}/m.gguf", "--no-register")),
    Command(("context",)),
    Command(("context",), json=False),
    Command(("curate",)),
    Command(("curate", "--days", "7"), json=False),
    Command(("mcp",), stdin=MCP_INIT + "\n", json=False),
    Command(("mcp", "--http", "0.0.0.0:0"), json=False),  # beyond loopback: token required
]
VOLATILE = re.compile(
    r"(duration|seconds|timings_ms|^at$|build|last_sync|version|size_bytes|cosine|_per_s$)"
)


def _globals(root: Path) -> list[str]:
    return ["-w", str(root / "ws"), "--config", str(root / "openclaw.json"), "--agent", "ops"]


def _home(root: Path) -> dict[str, str]:
    for rel, text in NOTES.items():
        path = root / "ws" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "state").mkdir(parents=True, exist_ok=True)
    (root / "openclaw.json").write_text(CONFIG, encoding="utf-8")
    return cli_env(root / "state")


def _normalise(data: Any, root: Path) -> Any:
    if isinstance(data, dict):
        return {k: _normalise(v, root) for k, v in data.items() if not VOLATILE.search(str(k))}
    if isinstance(data, list):
        return [_normalise(v, root) for v in data]
    if isinstance(data, str):
        text = data.replace(str(root), "<ROOT>")
        text = re.sub(r"\.[0-9a-f]{10}\.memdeck", ".<ws-hash>.memdeck", text)  # index per workspace
        return re.sub(r"\d+\.\d+ ?(s|ms)\b", "<T>", text)
    return data


def _outputs(text: str, root: Path) -> Any:
    """Parsed JSON (one document or one per line), else normalised text."""
    try:
        return _normalise(json.loads(text), root)
    except ValueError:
        pass
    try:
        return [_normalise(json.loads(line), root) for line in text.splitlines() if line]
    except ValueError:
        return _normalise(text, root)


def _run(cmd: Command, root: Path, env: dict[str, str], *, before: bool):
    words = [w.replace("{root}", str(root)) for w in cmd.words]
    opts = _globals(root) + (["--json"] if cmd.json else [])
    argv = [*opts, *words] if before else [*words, *opts]
    if cmd.words == ("watch",):
        return _run_watch(argv, env, root)
    r = run_cli(*argv, env=env, stdin=cmd.stdin)
    return r.returncode, _outputs(r.stdout, root), _normalise(r.stderr, root)


def _run_watch(argv: list[str], env: dict[str, str], root: Path):
    """``memdeck watch`` until its first finished sync, then SIGINT as Ctrl-C does."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli.main", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert proc.stdout is not None
    done = None
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] in ("SyncDone", "SyncFailed"):
            done = event
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, _normalise(done, root), _normalise(err, root)


@pytest.fixture(scope="module")
def both_positions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple]]:
    """Each command's (exit code, stdout, stderr) with the globals before and after,
    each position in its own fresh home, the commands run in table order."""
    runs: dict[str, list[tuple]] = {"before": [], "after": []}
    for position in runs:
        # Same-length folder names: `context` prints OpenClaw's [MISSING] line,
        # whose length counts the absolute path of the missing file.
        root = tmp_path_factory.mktemp(position.ljust(6, "_"))
        env = _home(root)
        for cmd in COMMANDS:
            runs[position].append(_run(cmd, root, env, before=position == "before"))
    return runs


IDS = [" ".join(c.words) + ("" if c.json else " (text)") for c in COMMANDS]


@pytest.mark.parametrize("i", range(len(COMMANDS)), ids=IDS)
def test_global_options_mean_the_same_before_and_after_the_command(both_positions, i) -> None:
    before, after = both_positions["before"][i], both_positions["after"][i]
    assert before == after, _differences(before, after)


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d
            for k in sorted(set(a) | set(b))
            for d in _differences(a.get(k), b.get(k), f"{where}.{k}")
        ]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{where}[{i}]")
        ]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_the_options_given_are_the_ones_used(both_positions) -> None:
    """Not merely equal: both positions honour -w, --config, --agent and --json."""
    for position in ("before", "after"):
        code, status, _ = both_positions[position][IDS.index("status")]
        assert code == 0
        assert status["workspace"] == "<ROOT>/ws"
        assert status["config"] == "<ROOT>/openclaw.json"
        assert status["agent"] == "ops" and Path(status["index"]).name.startswith("ops.")
        code, found, _ = both_positions[position][IDS.index("search coffee")]
        assert code == 0 and len(found["results"]) == 1


def test_table_covers_every_documented_command(tmp_path: Path) -> None:
    r = run_cli("--help", env=cli_env(tmp_path))
    listed = re.search(r"\{([a-z,]+)\}", r.stdout)
    assert listed is not None, r.stdout
    in_help = set(listed.group(1).split(","))
    guide = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    usage = guide.split("## Commands", 1)[1].split("```")[1]  # the usage block
    in_guide = set(re.findall(r"^memdeck ([a-z]+)", usage, flags=re.M))
    assert {"status", "search", "dream"} <= in_guide
    tested = {c.words[0] for c in COMMANDS}
    assert in_help <= tested and in_guide <= tested, (in_help | in_guide) - tested


# -- mistyped commands and no terminal ------------------------------------------
def test_mistyped_command_is_a_usage_error_with_a_suggestion(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    for entry in ("engine.cli.main", "tui.launcher"):
        r = subprocess.run(
            [sys.executable, "-m", entry, "staus"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert r.returncode == 1, (entry, r.stderr)
        assert "unknown command 'staus'" in r.stderr and "did you mean status?" in r.stderr
        assert r.stdout == ""
    r = run_cli("--json", "qwertyuiop", env=env)
    assert r.returncode == 1 and "commands: status, index" in r.stderr
    assert not list(tmp_path.rglob("*.sqlite")), "a typo must not create an index"


def test_the_app_never_starts_without_a_terminal(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = cli_env(tmp_path / "state")
    for argv in ([str(ws)], ["tui", str(ws)], ["-w", str(ws)], ["demo", str(tmp_path / "d")]):
        r = subprocess.run(
            [sys.executable, "-m", "tui.launcher", *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=60,
        )
        assert r.returncode == 1, (argv, r.stderr)
        assert "needs a terminal" in r.stderr and "stdin and stdout are not one" in r.stderr
        assert r.stdout == "", "no escape codes on a pipe"
    assert not (tmp_path / "d").exists(), "demo refuses before creating anything"


# -- a workspace that does not exist -------------------------------------------
MISSING_WS_COMMANDS = [
    ("status",),
    ("index",),
    ("search", "x"),
    ("get", "MEMORY.md"),
    ("sessions",),
    ("promote",),
    ("dream",),
    ("watch",),
    ("context",),
    ("curate",),
]


@pytest.mark.parametrize("words", MISSING_WS_COMMANDS, ids=[w[0] for w in MISSING_WS_COMMANDS])
def test_a_missing_workspace_is_exit_1_naming_the_path(tmp_path: Path, words) -> None:
    missing = tmp_path / "nowhere"
    env = cli_env(tmp_path / "state")
    for argv in (["-w", str(missing), *words], [*words, "--workspace", str(missing)]):
        r = run_cli(*argv, env=env)
        assert r.returncode == 1, (argv, r.stderr)
        assert f"workspace {missing} does not exist" in r.stderr
    assert not missing.exists()
    assert not list(tmp_path.rglob("*.sqlite")), "nothing is indexed for a missing workspace"


def test_the_config_warning_that_explains_a_missing_workspace_comes_first(
    tmp_path: Path,
) -> None:
    """The workspace's path names an unset variable: the warning that says so is
    printed (once) before the error that the default folder does not exist."""
    config = tmp_path / "openclaw.json"
    config.write_text('{agents: {defaults: {workspace: "${MEMDECK_TEST_UNSET}/ws"}}}')
    env = cli_env(tmp_path / "state")
    env.pop("MEMDECK_TEST_UNSET", None)
    for argv in (["status", "--config", str(config)], ["--config", str(config), "search", "x"]):
        r = run_cli(*argv, env=env)
        assert r.returncode == 1, r.stderr
        warning = (
            f"memdeck: warning: {config}: agents.defaults.workspace: environment variable"
            " $MEMDECK_TEST_UNSET is not set; value ignored"
        )
        lines = r.stderr.splitlines()
        assert lines.count(warning) == 1, lines
        assert "does not exist" in lines[-1] and lines.index(warning) < len(lines) - 1


def test_workspace_problem_kinds(tmp_path: Path) -> None:
    from engine.workspace.presence import create_workspace, workspace_problem

    assert workspace_problem(tmp_path) is None
    missing = workspace_problem(tmp_path / "a" / "b")
    assert missing is not None and missing.kind == "missing" and missing.creatable
    assert missing.message == f"workspace {tmp_path / 'a' / 'b'} does not exist"
    (tmp_path / "file").write_text("x")
    not_dir = workspace_problem(tmp_path / "file")
    assert not_dir is not None and not_dir.kind == "not_a_folder" and not not_dir.creatable
    made = create_workspace(tmp_path / "a" / "b")
    assert (made / "memory").is_dir() and workspace_problem(made) is None
    shutil.rmtree(tmp_path / "a")


# -- numbers out of range --------------------------------------------------------
OUT_OF_RANGE = [
    (
        ("search", "coffee", "--max-results", "0"),
        "argument --max-results: must be a whole number from 1 to 50 (got 0)",
    ),
    (
        ("search", "coffee", "--max-results", "two"),
        "argument --max-results: must be a whole number from 1 to 50 (got 'two')",
    ),
    (
        ("search", "coffee", "--max-results", "51"),
        "argument --max-results: must be a whole number from 1 to 50 (got 51)",
    ),
    (  # past a 64-bit integer: a usage error, not an OverflowError from SQLite
        ("search", "coffee", "--max-results=9223372036854775808"),
        "argument --max-results: must be a whole number from 1 to 50 (got 9223372036854775808)",
    ),
    (
        ("search", "coffee", "--min-score", "5"),
        "argument --min-score: must be a number from 0 to 1 (got 5)",
    ),
    (
        ("search", "coffee", "--min-score", "-0.1"),
        "argument --min-score: must be a number from 0 to 1 (got -0.1)",
    ),
    (
        ("search", "coffee", "--min-score", "nan"),
        "argument --min-score: must be a number from 0 to 1 (got nan)",
    ),
    (
        ("get", "MEMORY.md", "--from", "0"),
        "argument --from: must be a whole number of at least 1 (got 0)",
    ),
    (
        ("get", "MEMORY.md", "--lines", "0"),
        "argument --lines: must be a whole number of at least 1 (got 0)",
    ),
    (("get", "MEMORY.md", "--from", "999"), "--from 999 is past the end of MEMORY.md (6 lines)"),
    (
        ("get", "MEMORY.md", "--from", "2", "--from-char", "50"),
        "--from-char 50 is past the end of line 2 of MEMORY.md (0 characters)",
    ),
    (
        ("get", "MEMORY.md", "--from-char", "-1"),
        "argument --from-char: must be a whole number of at least 0 (got -1)",
    ),
]


@pytest.mark.parametrize(
    ("words", "message"), OUT_OF_RANGE, ids=[" ".join(w) for w, _ in OUT_OF_RANGE]
)
def test_numbers_out_of_range_are_errors(tmp_path: Path, words, message) -> None:
    env = _home(tmp_path)
    r = run_cli(*words, "-w", str(tmp_path / "ws"), env=env)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr
    assert r.stdout == ""


def test_get_pages_from_the_shell(tmp_path: Path) -> None:
    env = _home(tmp_path)
    ws = tmp_path / "ws"
    long = "w" * 30_000
    (ws / "memory" / "long.md").write_text(f"# Long\n{long}\nlast line\n", encoding="utf-8")
    r = run_cli("get", "memory/long.md", "--lines", "1", "-w", str(ws), env=env)
    assert (r.returncode, r.stdout) == (0, "# Long\n")
    assert "memdeck: memory/long.md continues: --from 2 (3 lines in all)" in r.stderr
    r = run_cli("get", "memory/long.md", "--from", "2", "-w", str(ws), env=env)
    assert r.returncode == 0 and r.stdout == "w" * 12_000 + "\n"
    assert "line 2 is cut at character 12000 of 30000" in r.stderr
    assert "--from 2 --from-char 12000, or skip to --from 3" in r.stderr
    r = run_cli(
        "get",
        "memory/long.md",
        "--from",
        "2",
        "--from-char",
        "24000",
        "--json",
        "-w",
        str(ws),
        env=env,
    )
    assert json.loads(r.stdout) == {
        "text": "w" * 6_000 + "\nlast line",
        "path": "memory/long.md",
        "from": 2,
        "fromChar": 24_000,
        "lines": 2,
    }
    (ws / "memory" / "empty.md").write_text("", encoding="utf-8")
    r = run_cli("get", "memory/empty.md", "-w", str(ws), env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


# -- a closed pipe ----------------------------------------------------------------
def test_search_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``memdeck search --batch … | head -1``: the reader leaves after one line; the
    command then dies of SIGPIPE like ``cat`` would, with nothing on stderr."""
    env = _home(tmp_path)
    ws = str(tmp_path / "ws")
    assert run_cli("index", "-w", ws, env=env).returncode == 0
    queries = "".join(json.dumps({"id": i, "query": "coffee atlas"}) + "\n" for i in range(3000))
    shell = subprocess.run(
        [
            "bash",
            "-c",
            '"$0" -m engine.cli.main search --batch - --json -w "$1" | head -n 1; '
            'echo "status=${PIPESTATUS[0]}" >&2',
            sys.executable,
            ws,
        ],
        input=queries,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert json.loads(shell.stdout)["id"] == 0
    assert shell.stderr.strip() == "status=141", shell.stderr  # no traceback, no message


# -- other spellings of the same command line ----------------------------------------
def _ws_globals(root: Path, *, equals: bool, abbreviated: bool = False) -> list[str]:
    names = ("--work", "--conf", "--ag") if abbreviated else ("--workspace", "--config", "--agent")
    values = (str(root / "ws"), str(root / "openclaw.json"), "ops")
    if equals:
        return [f"{n}={v}" for n, v in zip(names, values, strict=True)]
    return [w for pair in zip(names, values, strict=True) for w in pair]


SPELLINGS = {
    "--opt value before": lambda root, words: [*_ws_globals(root, equals=False), *words],
    "--opt=value before": lambda root, words: [*_ws_globals(root, equals=True), *words],
    "--opt=value after": lambda root, words: [*words, *_ws_globals(root, equals=True)],
    # argparse accepts a unique prefix of a long option; before the command word the
    # router took `--work WS` for a path to open (exit 1, "invalid choice")
    "abbreviated before": lambda root, words: [
        *_ws_globals(root, equals=False, abbreviated=True),
        *words,
    ],
    "abbreviated after": lambda root, words: [
        *words,
        *_ws_globals(root, equals=False, abbreviated=True),
    ],
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_every_spelling_of_the_global_options_means_the_same(tmp_path: Path, spelling) -> None:
    env = _home(tmp_path)
    argv = SPELLINGS[spelling](tmp_path, ["status", "--json"])
    r = run_cli(*argv, env=env)
    assert r.returncode == 0, (argv, r.stderr)
    status = _normalise(json.loads(r.stdout), tmp_path)
    assert status["workspace"] == "<ROOT>/ws" and status["agent"] == "ops"
    assert status["config"] == "<ROOT>/openclaw.json"


def test_search_refuses_an_empty_query_however_it_is_spelled(tmp_path: Path) -> None:
    """`memdeck search ""` said "needs a QUERY" (one was given) and `memdeck search "  "`
    searched for nothing and printed "0 results" with exit 0."""
    env = _home(tmp_path)
    ws = str(tmp_path / "ws")
    assert run_cli("index", "-w", ws, env=env).returncode == 0
    for query in ("", "   ", "\t"):
        r = run_cli("search", query, "-w", ws, env=env)
        assert r.returncode == 1, (query, r.stdout)
        assert "the query is empty" in r.stderr and r.stdout == ""
    lines = [
        {"id": 1, "query": ""},
        {"id": 2, "query": "  "},
        {"id": 3},
        [4],
        {"id": 5, "query": "coffee"},
    ]
    stdin = "".join(json.dumps(x) + "\n" for x in lines)
    config = str(tmp_path / "openclaw.json")  # minScore 0: coffee is found
    r = run_cli(
        "search", "--batch", "-", "--json", "-w", ws, "--config", config, env=env, stdin=stdin
    )
    assert r.returncode == 0, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["id"] for o in out] == [1, 2, 3, None, 5]  # the id given is kept
    assert all("must be a non-empty string" in o["error"] for o in out[:3])
    assert "expected an object" in out[3]["error"]
    assert out[4]["results"]


def test_search_batch_input_problems_are_usage_errors(tmp_path: Path) -> None:
    """A missing --batch file ended in "FileNotFoundError: …" with exit 2; a QUERY given
    with --batch was silently ignored."""
    env = _home(tmp_path)
    ws = str(tmp_path / "ws")
    assert run_cli("index", "-w", ws, env=env).returncode == 0
    missing = tmp_path / "queries.jsonl"
    r = run_cli("search", "--batch", str(missing), "--json", "-w", ws, env=env)
    assert r.returncode == 1 and f"--batch {missing} does not exist" in r.stderr
    assert "Error" not in r.stderr
    r = run_cli("search", f"--batch={tmp_path}", "--json", "-w", ws, env=env)
    assert r.returncode == 1 and f"--batch {tmp_path} is a folder" in r.stderr
    missing.write_text(json.dumps({"id": 1, "query": "coffee"}) + "\n", encoding="utf-8")
    r = run_cli("search", "atlas", "--batch", str(missing), "--json", "-w", ws, env=env)
    assert r.returncode == 1 and "a QUERY or --batch FILE, not both" in r.stderr
    assert r.stdout == ""


def test_one_result_is_not_results(tmp_path: Path) -> None:
    env = _home(tmp_path)  # the config's maxResults is 1
    argv = ["-w", str(tmp_path / "ws"), "--config", str(tmp_path / "openclaw.json")]
    assert run_cli("index", *argv, env=env).returncode == 0
    r = run_cli("search", "coffee", *argv, env=env)
    assert r.returncode == 0 and r.stdout.startswith("1 result · mode "), r.stdout


def test_every_option_of_every_command_says_what_it_does() -> None:
    """`memdeck search --help` listed --max-results, --min-score, --mode, --fusion,
    --mmr, --decay with no word of help (and get, model import, demo, tui likewise)."""
    import argparse

    from engine.cli.main import build_parser

    def parsers(p: argparse.ArgumentParser, name: str):
        yield name, p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    yield from parsers(sub, f"{name} {sub_name}")

    silent = [
        f"{name}: {'/'.join(a.option_strings) or a.dest}"
        for name, p in parsers(build_parser(), "memdeck")
        for a in p._actions
        if not isinstance(a, argparse._SubParsersAction) and not a.help
    ]
    assert silent == []


def test_search_text_shows_the_line_the_ranking_took(tmp_path: Path) -> None:
    """The text output shows 300 characters of each snippet. A long chunk's snippet is
    built around the line that matched (its anchor) and starts up to 700 characters
    before it: the preview starts at the line before the anchor then, marked "…"."""
    env = cli_env(tmp_path / "state")
    ws = tmp_path / "ws"
    filler = [
        f"- Preference {i}: something about the editor and the terminal theme." for i in range(8)
    ]
    text = "\n".join(["# Notes", *filler, "## Household", "- Glass recycling goes out on Fridays."])
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(text + "\n", encoding="utf-8")
    assert run_cli("index", "-w", str(ws), env=env).returncode == 0
    for argv in (
        ["search", "glass recycling", "-w", str(ws)],
        ["-w", str(ws), "search", "glass recycling"],
    ):
        r = run_cli(*argv, env=env)
        assert r.returncode == 0, r.stderr
        shown = r.stdout.split("score ", 1)[1].splitlines()[1:]
        assert shown[0].strip() == "…", r.stdout
        assert shown[1].strip() == "## Household"
        assert shown[2].strip() == "- Glass recycling goes out on Fridays."
    # a snippet whose anchor is within the first 300 characters starts where it starts
    r = run_cli("search", "preference editor", "-w", str(ws), env=env)
    assert r.stdout.split("score ", 1)[1].splitlines()[1].strip() == "# Notes", r.stdout
