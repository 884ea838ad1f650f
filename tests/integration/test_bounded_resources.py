"""Bounded resources: huge files, a huge config, absurd numbers, NaN vectors.

Most large files are sparse (a few KiB on disk, gigabytes by size), so those
tests cost nothing while the code under test sees the full size. Holes can
hide a whole read, though (reading a hole is cheap), so one test writes a dense
multi-GB file, every byte on disk, and counts the bytes the CLI process read
(``rchar`` of ``/proc/self/io``). Peak memory is measured for the real CLI
process with ``getrusage`` in a small wrapper process (or its own ``VmHWM``), so
nothing else the test process did is counted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config.loader import load_settings
from engine.workspace.paging import read_page
from engine.workspace.safe_open import open_beneath
from engine.workspace.streaming import read_page_streaming
from tests.cli_process import REPO, cli_env, run_cli
from tests.provider_servers import FAST_ENV, TEST_KEY, ProviderServer, Reply

#: peak RSS a CLI command may reach (its imports alone take ~50 MB); a command that
#: read a multi-GB file whole would be far above it
RSS_BUDGET_KB = 200 * 1024
#: the same for the in-process wrapper of the dense-file test (the CLI, its imports and
#: the model stack in one process peak at ~205 MB; reading the 2.2 GB file whole would not fit)
INDEX_WITH_MODEL_RSS_BUDGET_KB = 400 * 1024

_RSS_WRAPPER = """
import resource, subprocess, sys, json
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"rc": p.returncode, "out": p.stdout, "err": p.stderr,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def run_measured(*args: str, env: dict[str, str]) -> dict:
    """Run ``memdeck ARGS`` as a child of a fresh wrapper; its peak RSS in KiB."""
    proc = subprocess.run(
        [sys.executable, "-c", _RSS_WRAPPER, sys.executable, "-m", "engine.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


#: the CLI run in-process, then its own peak RSS and bytes read (all read syscalls)
_IO_WRAPPER = """
import contextlib, io, json, sys
from engine.cli.main import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
with open("/proc/self/io") as fh:
    counters = dict(line.split(": ") for line in fh.read().splitlines())
# VmHWM is this process image's own peak: getrusage's ru_maxrss would keep the peak of
# the pytest worker this process was forked from (Linux carries it across exec)
with open("/proc/self/status") as fh:
    status = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
print(json.dumps({"rc": rc, "out": out.getvalue(), "err": err.getvalue(),
                  "rchar": int(counters["rchar"]),
                  "maxrss_kb": int(status["VmHWM"].split()[0])}))
"""


def run_counted(*args: str, env: dict[str, str]) -> dict:
    """``memdeck ARGS`` in a fresh process; its exit code, output, peak RSS (KiB) and
    the bytes it read through read syscalls (imports included: a few dozen MB)."""
    proc = subprocess.run(
        [sys.executable, "-c", _IO_WRAPPER, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


#: a dense file over the 10 MiB limit, multi-GB (the issue's 2 GB case, every byte written)
DENSE_BYTES = 2_200_000_000
DENSE_LINE = b"a line of the dense note, every byte of it on disk\n"


def dense_markdown(path: Path, size: int) -> int:
    """``size`` bytes of real lines, written block by block (no holes); the line count."""
    block = DENSE_LINE * (2**20 // len(DENSE_LINE))
    with open(path, "wb") as fh:
        left = size
        while left >= len(block):
            fh.write(block)
            left -= len(block)
        fh.write(DENSE_LINE[:left] if left < len(DENSE_LINE) else block[:left])
    lines = size // len(DENSE_LINE)
    return lines + (1 if size % len(DENSE_LINE) else 0)


def sparse_markdown(path: Path, size: int, lines: int = 1000) -> None:
    """Real text lines at the start (past the binary sniff), then a hole up to ``size``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(b"".join(b"line %d of the big note\n" % i for i in range(lines)))
        fh.truncate(size)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    (d / "memory").mkdir(parents=True)
    (d / "MEMORY.md").write_text("# Memory\n\nDana prefers flat white coffee.\n")
    return d


def test_get_of_two_lines_from_a_3gb_file_reads_only_those(ws: Path, state_dir: Path) -> None:
    sparse_markdown(ws / "memory" / "big.md", 3 * 2**30)
    env = cli_env(state_dir)
    r = run_measured("get", "memory/big.md", "--lines", "2", "--workspace", str(ws), env=env)
    assert r["rc"] == 0, r["err"]
    assert r["out"] == "line 0 of the big note\nline 1 of the big note\n"
    assert r["maxrss_kb"] < RSS_BUDGET_KB, r["maxrss_kb"]
    later = run_measured(
        "get", "memory/big.md", "--from", "900", "--lines", "1", "-w", str(ws), env=env
    )
    assert later["out"] == "line 899 of the big note\n"
    assert later["maxrss_kb"] < RSS_BUDGET_KB


def test_index_refuses_a_2gb_file_from_its_size_without_reading_it(
    ws: Path, state_dir: Path
) -> None:
    sparse_markdown(ws / "memory" / "huge.md", 2 * 2**30)
    env = cli_env(state_dir)
    first = run_measured("index", "--workspace", str(ws), env=env)
    assert first["rc"] == 0, first["err"]
    assert "memory/huge.md: 2147.5 MB is over the 10 MiB indexing limit" in first["out"]
    assert first["maxrss_kb"] < RSS_BUDGET_KB, first["maxrss_kb"]
    again = run_measured("index", "--workspace", str(ws), env=env)
    assert again["maxrss_kb"] < RSS_BUDGET_KB
    status = json.loads(run_cli("status", "--json", "-w", str(ws), env=env).stdout)
    assert "over the 10 MiB indexing limit" in status["file_errors"]["memory/huge.md"]
    hit = run_cli("search", "flat white", "-w", str(ws), "--json", env=env)
    assert json.loads(hit.stdout)["results"][0]["path"] == "MEMORY.md"


def test_streaming_pages_equal_read_page_of_the_whole_text(tmp_path: Path) -> None:
    """The streaming reader makes exactly the page ``read_page`` makes of the text,
    across small blocks (so lines straddle block edges), BOMs, multi-byte text,
    invalid UTF-8, final newlines, long lines and character offsets."""
    texts = [
        "",
        "a",
        "a\n",
        "a\nb",
        "\n\n",
        "\ufeffbom\nx\n",
        "é\nü\n" * 5,
        "x" * 50 + "\nshort\n" + "y" * 7,
        "one\n" + "z" * 31 + "\n\ntwo",
    ]
    raw = [t.encode() for t in texts] + [b"bad \xff byte\nok\n"]
    for i, data in enumerate(raw):
        path = tmp_path / f"{i}.md"
        path.write_bytes(data)
        text = data.decode("utf-8-sig", errors="replace")
        for start in range(1, 7):
            for count in (1, 2, 5):
                for from_char in (None, 3, 40):
                    want = read_page(text, start, count, from_char=from_char, max_chars=10)
                    with open_beneath(tmp_path, path.name) as fh:
                        got = read_page_streaming(
                            fh, start, count, from_char=from_char, max_chars=10, block_size=3
                        )
                    assert got == want, (data, start, count, from_char)


def test_a_5mb_single_line_is_paged_from_a_bounded_read(tmp_path: Path) -> None:
    (tmp_path / "long.md").write_text("x" * 5_000_000 + "\nnext\n")
    with open_beneath(tmp_path, "long.md") as fh:
        page = read_page_streaming(fh, 1, 10, from_char=4_990_000)
    assert page.text == "x" * 10_000 + "\nnext" and page.next_from is None and not page.truncated
    with open_beneath(tmp_path, "long.md") as fh:
        page = read_page_streaming(fh, 1, 10)
    assert len(page.text) == 12_000 and page.next_char == 12_000
    assert page.cut_line_chars == 5_000_000 and page.total_lines == 2


def test_a_10mb_config_is_refused_with_a_clear_error(ws: Path, state_dir: Path) -> None:
    cfg = state_dir / "openclaw.json"
    cfg.write_text(json.dumps({"agents": {"defaults": {}}, "padding": "x" * 10_000_000}))
    r = run_cli("status", "--config", str(cfg), "-w", str(ws), env=cli_env(state_dir))
    assert r.returncode == 1
    assert "is 10.0 MB; config files are read up to 1024 KiB" in r.stderr
    assert str(cfg) in r.stderr


def test_absurd_chunk_size_warns_and_is_clamped(state_dir: Path, ws: Path) -> None:
    cfg = state_dir / "openclaw.json"
    cfg.write_text("{agents: {defaults: {memorySearch: {chunking: {tokens: 1e308}}}}}")
    settings = load_settings(config_path=cfg, workspace=ws, env={"HOME": str(state_dir)})
    assert settings.memory_search.chunking.tokens == 65_536
    assert any(
        "chunking.tokens" in w and "out of range (1–65536); using 65536" in w
        for w in settings.warnings
    ), settings.warnings
    r = run_cli("status", "--config", str(cfg), "-w", str(ws), env=cli_env(state_dir))
    assert "out of range (1–65536); using 65536" in r.stdout + r.stderr


def test_nan_vectors_are_reported_not_stored(ws: Path, state_dir: Path) -> None:
    """A server answering NaN vectors: index refuses the provider and says why
    (exit 0, keyword index built), and search answers keyword-only with that reason."""
    with ProviderServer(api_key=TEST_KEY) as server:
        n = server.dims

        def nan_reply(_i: int, rec) -> Reply:
            items = rec.json["input"]
            data = [{"index": k, "embedding": [float("nan")] * n} for k in range(len(items))]
            return Reply(200, {"data": data})  # json.dumps writes the NaN literal

        server.faults = nan_reply
        cfg = state_dir / "openclaw.json"
        cfg.write_text(
            json.dumps(
                {
                    "agents": {
                        "defaults": {
                            "memorySearch": {
                                "provider": "openai",
                                "remote": {"baseUrl": server.url + "/v1", "apiKey": TEST_KEY},
                            }
                        }
                    }
                }
            )
        )
        env = cli_env(state_dir, FAST_ENV)
        r = run_cli("index", "--config", str(cfg), "-w", str(ws), "--json", env=env)
        out = json.loads(r.stdout)
        # The probe already refuses the answer: no provider, the reason said, nothing stored.
        assert out["provider"] == "none" and out["chunks_embedded"] == 0, out
        assert out["provider_error"] == "openai: an embedding holds NaN or infinite numbers"
        s = run_cli("search", "flat white", "--config", str(cfg), "-w", str(ws), "--json", env=env)
        answer = json.loads(s.stdout)
        assert answer["results"] and answer["results"][0]["path"] == "MEMORY.md"
        reason = (
            "the last index could not use the embedding provider "
            "(openai: an embedding holds NaN or infinite numbers)"
        )
        assert answer["mode"] == "fts" and answer["reason"] == reason, answer
        assert answer["fallback"] == {"from": "hybrid", "to": "fts", "reason": reason}


@pytest.mark.slow
def test_a_dense_multi_gb_file_is_refused_unread_and_paged_in_one_pass(
    ws: Path, state_dir: Path
) -> None:
    """A 2.2 GB file with every byte on disk: ``index`` records it as over the limit
    from its ``fstat`` size and reads none of it; ``get`` of 2 lines reads it once
    (to count its lines) in bounded memory, never twice, never whole."""
    if shutil.disk_usage(ws).free < 3 * DENSE_BYTES:
        pytest.skip("needs 6.6 GB free for a dense 2.2 GB file")
    big = ws / "memory" / "dense.md"
    try:
        total_lines = dense_markdown(big, DENSE_BYTES)
        assert os.stat(big).st_blocks * 512 >= DENSE_BYTES  # really dense: no holes
        env = cli_env(state_dir)
        index = run_counted("index", "--workspace", str(ws), env=env)
        assert index["rc"] == 0, index["err"]
        assert "memory/dense.md: 2200.0 MB is over the 10 MiB indexing limit" in index["out"]
        assert index["rchar"] < 200 * 2**20, index["rchar"]  # imports only, not the file
        # `index` here loads the local embedding model (~200 MB peak with its buffers,
        # 205 MB seen on a CI rehearsal): the budget is that, not the 2.2 GB file
        assert index["maxrss_kb"] < INDEX_WITH_MODEL_RSS_BUDGET_KB, index["maxrss_kb"]
        get = run_counted(
            "get", "memory/dense.md", "--lines", "2", "--json", "-w", str(ws), env=env
        )
        assert get["rc"] == 0, get["err"]
        answer = json.loads(get["out"])
        assert answer["text"].startswith((DENSE_LINE * 2).decode())
        assert answer["text"].endswith("[More of this file follows: continue with from=3.]")
        assert answer["nextFrom"] == 3 and total_lines > 3
        # it read to the end to count the lines (the continuation needs the total),
        # once: every byte of the file and then only the imports
        assert DENSE_BYTES <= get["rchar"] < DENSE_BYTES + 200 * 2**20, get["rchar"]
        assert get["maxrss_kb"] < INDEX_WITH_MODEL_RSS_BUDGET_KB, get["maxrss_kb"]
    finally:
        big.unlink(missing_ok=True)  # 2.2 GB must not outlive the test
