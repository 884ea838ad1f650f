"""The headless CLI as a user runs it: real processes, real files, exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_process import cli_env, run_cli
from tests.engine_fixtures import write


@pytest.fixture
def cli(state_dir: Path, workspace_dir: Path):
    env = cli_env(state_dir)

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, env=env, stdin=stdin)

    write(workspace_dir, "MEMORY.md", "# Memory\n\nDana prefers flat white coffee.\n")
    write(workspace_dir, "memory/2026-03-01.md", "# 2026-03-01\n\nAtlas rollback plan drafted.\n")
    return run


def test_index_status_search_get_roundtrip(cli, workspace_dir: Path) -> None:
    ws = str(workspace_dir)
    r = cli("index", "-w", ws, "--json")
    assert r.returncode == 0, r.stderr
    idx = json.loads(r.stdout)
    assert idx["full"] is True and idx["files"] == 2
    # the two files' bytes and the chunks embedded, over the sync's seconds
    size = sum(p.stat().st_size for p in workspace_dir.rglob("*.md"))
    seconds = idx["duration_s"]
    assert idx["kb_per_s"] > 0
    assert idx["kb_per_s"] == pytest.approx(size / 1024 / seconds, rel=0.05, abs=0.1)
    per_s = idx["chunks_embedded"] / seconds
    assert idx["chunks_per_s"] == pytest.approx(per_s, rel=0.05, abs=0.01)

    st = json.loads(cli("status", "-w", ws, "--json").stdout)
    for key in (
        "binding",
        "sqlite_version",
        "vector",
        "sqlite_vec_version",
        "provider",
        "model",
        "dims",
        "files",
        "chunks",
        "cache_entries",
        "dirty",
        "fingerprint",
    ):
        assert key in st
    assert st["binding"].startswith("apsw") and st["vector"] == "sqlite-vec"
    assert st["dirty"] is False and st["files"] == 2

    r = cli("search", "-w", ws, "rollback", "--json", "--explain", "--min-score", "0")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    top = res["results"][0]
    assert top["path"] == "memory/2026-03-01.md" and top["startLine"] == 1
    assert top["citation"] == "memory/2026-03-01.md#L1-L3"
    assert top["snippet"].endswith("Source: memory/2026-03-01.md#L1-L3")
    assert "bm25_rank" in top["breakdown"] and "formula" in top["breakdown"]
    assert set(res) >= {"provider", "model", "fallback", "citations", "mode", "backend", "explain"}

    r = cli("get", "-w", ws, "memory/2026-03-01.md", "--from", "3", "--lines", "1", "--json")
    assert json.loads(r.stdout) == {
        "text": "Atlas rollback plan drafted.",
        "path": "memory/2026-03-01.md",
        "from": 3,
        "lines": 1,
    }  # line 3 is the last: a final newline is no phantom fourth line


def test_get_refuses_paths_outside_memory(cli, workspace_dir: Path) -> None:
    for bad in ("../etc/passwd", "/etc/hostname", "README.md"):
        r = cli("get", "-w", str(workspace_dir), bad)
        assert r.returncode == 1
        assert "memdeck:" in r.stderr


def test_batch_search_reads_jsonl_and_reports_bad_lines(cli, workspace_dir: Path) -> None:
    assert cli("index", "-w", str(workspace_dir)).returncode == 0  # search never builds one
    lines = "\n".join(
        [
            json.dumps({"id": "q1", "query": "coffee"}),
            "{not json",
            json.dumps({"id": 7, "query": "atlas rollback"}),
        ]
    )
    r = cli(
        "search",
        "-w",
        str(workspace_dir),
        "--batch",
        "-",
        "--json",
        "--min-score",
        "0",
        stdin=lines,
    )
    assert r.returncode == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o.get("id") for o in out] == ["q1", None, 7]
    assert out[0]["results"][0]["path"] == "MEMORY.md"
    assert "bad input line" in out[1]["error"]
    assert out[2]["results"][0]["path"] == "memory/2026-03-01.md"


def test_malformed_config_is_a_usage_error_with_location(
    cli, state_dir: Path, workspace_dir: Path
) -> None:
    (state_dir / "openclaw.json").write_text("{\n  agents: {\n    defaults: { oops }\n}\n")
    r = cli("status", "-w", str(workspace_dir))
    assert r.returncode == 1
    assert "openclaw.json" in r.stderr and "line 3" in r.stderr


def test_usage_errors_exit_1(cli, workspace_dir: Path) -> None:
    assert cli("search", "-w", str(workspace_dir)).returncode == 1
    assert cli("index", "--bogus-flag").returncode == 1


def test_disabled_memory_search_reports_instead_of_failing(
    cli, state_dir: Path, workspace_dir: Path
):
    (state_dir / "openclaw.json").write_text(
        "{agents: {defaults: {memorySearch: {enabled: false}}}}"
    )
    r = cli("search", "-w", str(workspace_dir), "coffee", "--json")
    res = json.loads(r.stdout)
    assert res["disabled"] is True and res["results"] == [] and "disabled" in res["error"]


def test_openclaw_profile_searches_are_recorded_in_the_recall_log(cli, workspace_dir: Path) -> None:
    """`memdeck search --profile openclaw` leaves its row in the recall log like any
    search (client `cli`, OpenClaw's hits with OpenClaw's line numbers), whether the
    option comes before or after the query; so does a search with no hit."""
    from engine.index.store import Store
    from engine.memory.recall import load_searches

    ws = str(workspace_dir)
    assert cli("index", "-w", ws).returncode == 0
    answers = []
    for argv in (
        ("search", "--profile", "openclaw", "rollback", "-w", ws, "--json"),
        ("--profile", "openclaw", "search", "coffee", "--json", "-w", ws),
        ("search", "zebra-unicorn", "-w", ws, "--profile", "openclaw", "--json"),
    ):
        r = cli(*argv)
        assert r.returncode == 0, r.stderr
        answers.append(json.loads(r.stdout))
    assert answers[0]["results"] and answers[1]["results"] and not answers[2]["results"]
    index = json.loads(cli("status", "-w", ws, "--json").stdout)["index"]
    store = Store(Path(index), snapshot=True)
    try:
        rows = load_searches(store)[::-1]  # oldest first
    finally:
        store.close()
    assert [(s.client, s.query) for s in rows] == [
        ("cli", "rollback"),
        ("cli", "coffee"),
        ("cli", "zebra-unicorn"),
    ]
    for row, answer in zip(rows, answers, strict=True):
        # told apart from memdeck's own ranking in the Agent activity view
        assert row.mode == f"openclaw:{answer['mode']}" and row.backend == "openclaw"
        assert row.mode_name == answer["mode"]
        assert [(h.path, h.start_line, h.end_line) for h in row.results] == [
            (r["path"], r["startLine"], r["endLine"]) for r in answer["results"]
        ]


def test_model_without_a_command_names_the_command_not_an_attribute(cli) -> None:
    for argv in (("model",), ("model", "--json"), ("--json", "model")):
        r = cli(*argv)
        assert r.returncode == 1
        assert "model_command" not in r.stderr
        assert "`memdeck model` needs a command: `memdeck model import [DIR]`" in r.stderr


def test_text_status_has_a_fingerprint_line(cli, workspace_dir: Path) -> None:
    import hashlib

    ws = str(workspace_dir)

    def fingerprint_line() -> str:
        lines = cli("status", "-w", ws).stdout.splitlines()
        (line,) = [x for x in lines if x.startswith("fingerprint ")]
        return line

    fp = json.loads(cli("status", "-w", ws, "--json").stdout)["fingerprint"]
    canonical = json.dumps(fp, sort_keys=True, default=str, ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
    assert fingerprint_line() == f"fingerprint {digest}  (no index built yet)"
    assert cli("index", "-w", ws).returncode == 0
    assert fingerprint_line() == f"fingerprint {digest}  (the index was built with it)"


@pytest.mark.parametrize(
    ("provider", "lines", "line"),
    [
        (
            "openai",
            None,
            "units       a vector per line too (each unit an input of its chunk's request)",
        ),
        (
            "gemini",
            None,
            "units       off (off by default with gemini; store.vector.lines: true turns them on)",
        ),
        # units embedded on their own, as with the local model: chunk vectors pooled
        (
            "gemini",
            True,
            "units       a vector per line too (store.vector.lines: true); chunk vectors"
            " pooled from them",
        ),
    ],
)
def test_status_says_whether_chunks_get_unit_vectors(
    cli, state_dir: Path, workspace_dir: Path, provider: str, lines: bool | None, line: str
) -> None:
    # status reads the config and the index; it sends nothing to the (absent) endpoint
    config: dict[str, object] = {
        "provider": provider,
        "remote": {"apiKey": "k", "baseUrl": "http://127.0.0.1:9/v1"},
    }
    if lines is not None:
        config["store"] = {"vector": {"lines": lines}}
    (state_dir / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"memorySearch": config}}})
    )
    r = cli("status", "-w", str(workspace_dir))
    assert r.returncode == 0, r.stderr
    assert line in r.stdout.splitlines()
    st = json.loads(cli("status", "-w", str(workspace_dir), "--json").stdout)
    on = provider == "openai" or bool(lines)
    assert st["unit_vectors"] is on
    assert st["units_missing"] == (0 if on else None)
    assert st["chunk_vectors_pooled"] is bool(lines)


def test_status_without_a_provider_has_no_unit_vectors(cli, workspace_dir: Path) -> None:
    ws = str(workspace_dir)
    assert cli("index", "-w", ws).returncode == 0
    assert "units       off (no embedding provider)" in cli("status", "-w", ws).stdout.splitlines()
