"""Batch embedding APIs (``remote.batch``) for openai, gemini and voyage against a
loopback server: upload, create, poll, collect, concurrency, failures, timeout,
and ``wait=false`` jobs picked up by the next sync (even by a new engine)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config.settings import BatchSettings
from engine.core import Engine
from engine.embeddings.batch import BatchRunner, JobRegistry, text_key
from engine.embeddings.batch_wire import OpenAIStyleBatch
from engine.embeddings.http_retry import HttpTransport, Redactor, RetryPolicy
from engine.events import SyncProgress
from tests.engine_fixtures import write
from tests.provider_servers import FAST_ENV as FAST
from tests.provider_servers import TEST_KEY as KEY
from tests.provider_servers import ProviderServer, write_notes

BATCH_PATHS_OPENAI = ["POST /v1/files", "POST /v1/batches"]


@pytest.fixture
def notes(workspace_dir: Path) -> Path:
    extra = {"memory/2026-03-02.md": "# 2026-03-02\n\nOat milk for the office.\n"}
    return write_notes(workspace_dir, extra)


@pytest.fixture
def build(make_settings, engines) -> Callable[..., Engine]:
    def make(provider: str, base_url: str, **ms: Any) -> Engine:
        batch = {"enabled": True, "poll_interval_ms": 5, **ms.pop("batch", {})}
        settings = make_settings(
            **{
                "provider": provider,
                "remote.base_url": base_url,
                "remote.api_key": KEY,
                "remote.batch": BatchSettings(**batch),
                **ms,
            }
        )
        eng = Engine(settings, env=FAST)
        engines.append(eng)
        return eng

    return make


@pytest.fixture
def openai_wire(server: ProviderServer) -> Iterator[OpenAIStyleBatch]:
    """OpenAI's batch wire on its own transport, for tests that drive BatchRunner directly."""
    transport = HttpTransport(
        headers={"Authorization": f"Bearer {KEY}"},
        policy=RetryPolicy(base_delay=0.001),
        redactor=Redactor([KEY]),
        label="openai",
    )
    yield OpenAIStyleBatch(transport, server.url + "/v1", "text-embedding-3-small")
    transport.close()


def doc_requests(server: ProviderServer) -> list[Any]:
    """Direct embedding requests other than the one-text dimension probe."""
    return [
        r
        for r in server.embed_requests()
        if r.path.endswith(("/embeddings", ":batchEmbedContents"))
        and "memdeck dimension probe" not in r.body.decode()
    ]


def jsonl(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in raw.decode().splitlines() if x.strip()]


def test_openai_batch_lifecycle(build, server, notes) -> None:
    server.batch_polls_to_finish = 3
    eng = build("openai", server.url + "/v1")
    progress: list[SyncProgress] = []
    eng.bus.subscribe(lambda e: progress.append(e) if isinstance(e, SyncProgress) else None)
    done = eng.sync()
    assert done.chunks_embedded == 3 and not done.errors
    assert doc_requests(server) == []  # everything went through the batch job
    paths = [p for p in server.paths() if "embeddings" not in p]
    job = next(iter(server.jobs.values()))
    assert paths[:2] == BATCH_PATHS_OPENAI
    assert paths[2:5] == [f"GET /v1/batches/{job.id}"] * 3
    assert paths[5] == f"GET /v1/files/{job.output}/content"
    upload = next(r for r in server.requests if r.path == "/v1/files")
    assert upload.headers["authorization"] == f"Bearer {KEY}"
    lines = job.lines
    assert {ln["url"] for ln in lines} == {"/v1/embeddings"}
    assert {ln["method"] for ln in lines} == {"POST"}
    assert {ln["body"]["model"] for ln in lines} == {"text-embedding-3-small"}
    assert {ln["custom_id"] for ln in lines} == {text_key(ln["body"]["input"]) for ln in lines}
    create = next(r for r in server.requests if r.path == "/v1/batches").json
    assert create["completion_window"] == "24h" and create["endpoint"] == "/v1/embeddings"
    embeds = [p for p in progress if p.phase == "embed"]
    assert embeds[-1].chunks_embedded == 3 and embeds[-1].requests >= 5
    st = eng.status().provider_detail["batch"]
    assert (st["jobs_submitted"], st["jobs_collected"], st["jobs_running"]) == (1, 1, 0)
    outcome = eng.search("oat milk", eng.default_options().with_(min_score=0))
    assert outcome.results[0].path == "memory/2026-03-02.md"


def test_gemini_batch_uses_upload_async_batch_and_download(build, server, notes) -> None:
    eng = build(
        "gemini",
        server.url + "/v1beta",
        model="gemini-embedding-2-preview",
        output_dimensionality=768,
    )
    done = eng.sync()
    assert done.chunks_embedded == 3 and not done.errors
    assert doc_requests(server) == []
    upload = next(r for r in server.requests if r.path == "/upload/v1beta/files")
    assert upload.query == {"uploadType": ["multipart"]}
    assert upload.headers["x-goog-api-key"] == KEY
    assert upload.headers["content-type"].startswith("multipart/related; boundary=")
    create = next(r for r in server.requests if r.path.endswith(":asyncBatchEmbedContent"))
    assert create.path == "/v1beta/models/gemini-embedding-2-preview:asyncBatchEmbedContent"
    job = next(iter(server.jobs.values()))
    assert create.json["batch"]["inputConfig"]["fileName"].startswith("files/")
    line = job.lines[0]
    assert line["request"]["taskType"] == "RETRIEVAL_DOCUMENT"
    assert line["request"]["outputDimensionality"] == 768
    assert f"GET /download/v1beta/{job.output}:download" in server.paths()
    assert eng.store.dims == 768


def test_voyage_batch_passes_model_and_input_type_once(build, server, notes) -> None:
    eng = build("voyage", server.url + "/v1")
    assert eng.sync().chunks_embedded == 3
    create = next(r for r in server.requests if r.path == "/v1/batches").json
    assert create["request_params"] == {"model": "voyage-4-large", "input_type": "document"}
    assert create["completion_window"] == "12h"
    job = next(iter(server.jobs.values()))
    assert all(set(ln) == {"custom_id", "body"} for ln in job.lines)
    assert all(isinstance(ln["body"]["input"], list) for ln in job.lines)


def test_one_failed_job_is_resubmitted(build, server, notes) -> None:
    server.batch_fail_jobs = 1
    eng = build("openai", server.url + "/v1")
    done = eng.sync()
    assert done.chunks_embedded == 3
    assert [j.state for j in server.jobs.values()] == ["failed", "done"]
    assert doc_requests(server) == []
    batch = eng.status().provider_detail["batch"]
    assert batch["failures"] == 1 and batch["active"]


def test_two_failures_switch_to_direct_requests(build, server, notes) -> None:
    server.batch_fail_jobs = 2
    eng = build("openai", server.url + "/v1")
    done = eng.sync()
    assert done.chunks_embedded == 3 and not done.errors
    assert [j.state for j in server.jobs.values()] == ["failed", "failed"]
    assert sum(len(r.json["input"]) for r in doc_requests(server)) == 3
    batch = eng.status().provider_detail["batch"]
    assert not batch["active"] and "after 2 failed jobs" in batch["disabled_reason"]
    assert "simulated batch failure" in batch["disabled_reason"]
    # later texts go straight to direct requests for the rest of the run
    write(notes, "memory/2026-03-03.md", "# 2026-03-03\n\nNew plant on the balcony.\n")
    assert eng.sync().chunks_embedded == 1
    assert len(server.jobs) == 2


def test_batch_timeout_cancels_and_counts_as_failure(build, server, notes) -> None:
    server.batch_polls_to_finish = 10**6  # never finishes
    eng = build("openai", server.url + "/v1", batch={"timeout_minutes": 0.004})  # 0.24 s
    done = eng.sync()
    assert done.chunks_embedded == 3
    cancels = [p for p in server.paths() if p.endswith("/cancel")]
    assert len(cancels) == 2 and all(j.state == "cancelled" for j in server.jobs.values())
    reason = eng.status().provider_detail["batch"]["disabled_reason"]
    assert "still running after 0.004 min" in reason


def test_wait_false_leaves_jobs_running_and_next_sync_collects(
    build, server, notes, state_dir
) -> None:
    server.batch_polls_to_finish = 2
    first = build("openai", server.url + "/v1", batch={"wait": False})
    done = first.sync()
    assert done.chunks_embedded == 0 and not done.errors
    st = first.status()
    assert st.chunks == 3 and st.embedded_chunks == 0
    assert st.provider_detail["batch"]["jobs_running"] == 1
    registry = list(state_dir.rglob("*.batch-jobs.json"))
    assert len(registry) == 1
    saved = json.loads(registry[0].read_text())
    ((scope, jobs),) = saved.items()
    assert scope.startswith("openai|text-embedding-3-small|") and len(jobs[0]["keys"]) == 3
    # keyword search works meanwhile
    kw = first.search("oat milk", first.default_options().with_(min_score=0))
    assert kw.results[0].path == "memory/2026-03-02.md"
    first.close()

    # a new engine (as after a restart) picks the job up instead of resubmitting
    second = build("openai", server.url + "/v1", batch={"wait": False})
    pending = second.sync()  # job still running after its first poll
    assert pending.chunks_embedded == 0 and len(server.jobs) == 1
    collected = second.sync()
    assert collected.chunks_embedded == 3 and len(server.jobs) == 1
    assert second.status().embedded_chunks == 3
    assert not registry[0].exists()
    # no direct request: the search while the job ran had no vector to compare with,
    # so it did not embed its query (it answered keyword-only)
    assert [r.json["input"] for r in doc_requests(server)] == []
    assert second.sync().chunks_embedded == 0
    hybrid = second.search("oat milk", second.default_options().with_(min_score=0))
    assert hybrid.mode == "hybrid" and hybrid.retrieval.vector_hits
    assert [r.json["input"] for r in doc_requests(server)] == [["oat milk"]]  # the query only


def test_concurrency_limits_jobs_in_flight(openai_wire, server, tmp_path) -> None:
    openai_wire.max_items = 2
    server.batch_polls_to_finish = 2
    settings = BatchSettings(enabled=True, concurrency=2, poll_interval_ms=1)
    registry = JobRegistry(tmp_path / "jobs.json")
    runner = BatchRunner(openai_wire, settings, registry, "openai|m|k")
    texts = [f"text number {i}" for i in range(7)]
    outcome = runner.run(texts)
    assert sorted(outcome.vectors) == list(range(7)) and not outcome.pending
    assert len(server.jobs) == 4 and server.max_jobs_running == 2
    assert not (tmp_path / "jobs.json").exists()


def test_damaged_registry_is_ignored(tmp_path) -> None:
    path = tmp_path / "jobs.json"
    path.write_text("{not json", encoding="utf-8")
    reg = JobRegistry(path)
    assert reg.jobs("s") == []
    reg.add("s", "job-1", ["k1"], 1.0)
    assert json.loads(path.read_text())["s"][0]["id"] == "job-1"
    reg.remove("s", "job-1")
    assert not path.exists()


def test_stale_jobs_for_texts_nobody_wants_are_forgotten(openai_wire, tmp_path) -> None:
    registry = JobRegistry(tmp_path / "jobs.json")
    registry.add("s", "batch_old", ["gone-key"], submitted_at=0.0)  # 1970: long stale
    registry.add("s", "batch_new", ["other-key"], submitted_at=1e12)  # not stale
    settings = BatchSettings(enabled=True, poll_interval_ms=1)
    runner = BatchRunner(openai_wire, settings, registry, "s", clock=lambda: 1e12 + 10)
    assert sorted(runner.run(["fresh text"]).vectors) == [0]
    assert [j["id"] for j in registry.jobs("s")] == ["batch_new"]


def test_a_large_sync_is_one_job_not_one_per_flush(build, server, workspace_dir) -> None:
    for f in range(3):
        lines = "".join(f"line {f}-{n} of a long file, one chunk each line\n" for n in range(100))
        write(workspace_dir, f"memory/big-{f}.md", lines)
    eng = build("openai", server.url + "/v1", **{"chunking.tokens": 20, "chunking.overlap": 0})
    done = eng.sync()
    assert done.chunks_embedded == 300  # more than one ordinary flush (128 chunks)
    assert len(server.jobs) == 1 and len(next(iter(server.jobs.values())).lines) == 300
