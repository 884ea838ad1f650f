"""Every citation memdeck prints can be read back, and line counts are `wc -l`'s.

Real processes on the demo workspace, as a user runs them: `memdeck search --json`
for several queries (one `--batch -` process answers them all: each line is the
document `search --json` prints for its query, so six processes were five too
many), then `memdeck get PATH --from S --lines N` for each cited range. In memdeck's
profile a chunk that reaches the end of a file cites the file's last line; the
`openclaw` profile keeps OpenClaw 2026.9.6's numbering, where that chunk ends one
line further (the empty string after the final newline), and its ranges still read
back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.demo import create_demo_workspace
from tests.cli_process import cli_env, run_cli

pytestmark = pytest.mark.subprocess

QUERIES = ["Miso tablet", "dentist", "coffee", "Atlas rollback", "Lighthouse BM25", "Ravi"]


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    workspace = tmp_path / "demo"
    create_demo_workspace(workspace)
    env = cli_env(tmp_path / "state")
    r = run_cli("index", "--workspace", str(workspace), env=env)
    assert r.returncode == 0, r.stderr
    return workspace, env


def _wc_l(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def _cited(workspace: Path, env: dict[str, str], *profile: str) -> dict[tuple[str, int, int], str]:
    """(path, first, last) of every citation → the snippet it cites (its excerpt)."""
    cited = {}
    batch = "".join(json.dumps({"id": i, "query": q}) + "\n" for i, q in enumerate(QUERIES))
    r = run_cli(
        "search", "--batch", "-", "--json", "--min-score", "0", *profile,
        "-w", str(workspace), env=env, stdin=batch,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    answers = [json.loads(line) for line in r.stdout.splitlines()]
    assert [a["id"] for a in answers] == list(range(len(QUERIES))), r.stdout[:2000]
    for answer in answers:
        assert "error" not in answer, answer
        for hit in answer["results"]:
            start, end = hit["startLine"], hit["endLine"]
            ref = hit["citation"].removeprefix(hit["path"] + "#L")
            first, _, last = ref.partition("-L")
            first_line, last_line = int(first), int(last or first)
            if profile:  # OpenClaw's citation is the chunk's lines
                assert (first_line, last_line) == (start, end), hit["citation"]
            else:  # memdeck's is the snippet's lines, within the chunk's
                assert start <= first_line <= last_line <= end, (hit["citation"], start, end)
            excerpt = hit["snippet"].removesuffix(f"\n\nSource: {hit['citation']}")
            cited[(hit["path"], first_line, last_line)] = excerpt
    return cited


def test_memdeck_citations_end_at_the_last_line_and_read_back(demo) -> None:
    workspace, env = demo
    cited = _cited(workspace, env)
    assert len(cited) >= 5
    at_end = 0
    for (path, start, end), excerpt in sorted(cited.items()):
        lines = _wc_l(workspace / path)
        assert 1 <= start <= end <= lines, (path, start, end, lines)
        at_end += end == lines
        r = run_cli(
            "get", path, "--from", str(start), "--lines", str(end - start + 1),
            "-w", str(workspace), env=env,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        wanted = (workspace / path).read_text(encoding="utf-8").split("\n")[start - 1 : end]
        assert r.stdout == "\n".join(wanted) + "\n"
        # the snippet is those lines (its last one cut when the budget ends in it)
        assert "\n".join(wanted).startswith(excerpt) and excerpt.count("\n") == end - start
    assert at_end >= 3  # chunks that reach the end of their file cite its last line


def test_openclaw_citations_keep_openclaws_numbering_and_read_back(demo) -> None:
    workspace, env = demo
    cited = _cited(workspace, env, "--profile", "openclaw")
    assert len(cited) >= 5
    past = 0
    for path, start, end in sorted(cited):
        lines = _wc_l(workspace / path)
        assert 1 <= start <= lines and end <= lines + 1, (path, start, end, lines)
        past += end == lines + 1
        r = run_cli(
            "get", path, "--from", str(start), "--lines", str(end - start + 1), "--json",
            "--profile", "openclaw", "-w", str(workspace), env=env,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        page = json.loads(r.stdout)
        assert page["status"] == "ok" and page["from"] == start
        assert page["lines"] == min(end, lines) - start + 1
    assert past >= 3  # OpenClaw's own chunks end one past a final newline


def test_get_reads_the_last_line_and_names_the_count_past_it(demo) -> None:
    workspace, env = demo
    daily = sorted((workspace / "memory").glob("????-??-??.md"))[0]
    rel = f"memory/{daily.name}"
    lines = _wc_l(daily)
    r = run_cli("get", rel, "--from", str(lines), "-w", str(workspace), env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == daily.read_text(encoding="utf-8").split("\n")[lines - 1] + "\n"
    r = run_cli("get", "--from", str(lines + 1), rel, "-w", str(workspace), env=env)
    assert r.returncode == 1
    assert f"--from {lines + 1} is past the end of {rel} ({lines} lines)" in r.stderr
