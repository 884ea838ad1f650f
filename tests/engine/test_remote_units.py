"""Unit vectors through a remote API: each unit's text rides as an input of its own
in its chunk's request (``request_batches.pack_units``), so the requests are the
chunk-only requests; on by default where the API gains from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.core import Engine
from engine.embeddings.request_batches import (
    MAX_REQUEST_BYTES,
    RequestLimits,
    estimate_bytes,
    pack_units,
    split_by_bytes,
)
from engine.index import line_codec
from engine.index.line_vectors import space_key, unit_spans
from tests.engine_fixtures import write
from tests.provider_servers import FAST_ENV as FAST
from tests.provider_servers import TEST_KEY as KEY
from tests.provider_servers import ProviderServer, text_vector


def _day(n: int) -> str:
    """A daily log of ``n`` short turns: several chunks, a unit per turn."""
    turns = [
        f"- 10:{i % 60:02d} Turn {i}: talked about topic{i} and item{i * 7 % 13}." for i in range(n)
    ]
    return "# 2026-03-02\n\n" + "\n".join(turns) + "\n"


def test_packing_keeps_the_chunk_only_requests_and_the_limits() -> None:
    chunks = [f"chunk {i} " + "w" * 1500 for i in range(20)]
    units = [[f"unit {i}.{k} " + "u" * 120 for k in range(12)] for i in range(20)]
    groups = [[c, *us] for c, us in zip(chunks, units, strict=True)]
    limits = RequestLimits(max_inputs=128, max_bytes=16_000)
    requests = pack_units(groups, limits)
    assert len(requests) == len(split_by_bytes(chunks, MAX_REQUEST_BYTES, 128)) == 4
    flat = [slot for request in requests for slot in request]
    assert flat == [(g, k) for g in range(20) for k in range(13)]  # every input once, in order
    for request in requests:
        assert len(request) <= limits.max_inputs
        assert sum(estimate_bytes(groups[g][k]) for g, k in request) <= limits.max_bytes
        assert sum(estimate_bytes(groups[g][0]) for g, k in request if k == 0) <= MAX_REQUEST_BYTES


def test_a_group_too_large_for_one_request_is_split_in_order() -> None:
    group = ["c" * 100, *(f"u{k}" for k in range(10))]
    requests = pack_units([group, ["d"]], RequestLimits(max_inputs=4, max_bytes=10_000))
    assert requests == [
        [(0, 0), (0, 1), (0, 2), (0, 3)],
        [(0, 4), (0, 5), (0, 6), (0, 7)],
        [(0, 8), (0, 9), (0, 10), (1, 0)],
    ]


@pytest.fixture
def build(make_settings, engines) -> Callable[..., Engine]:
    def make(provider: str, base_url: str, *, lines: bool | None = None, **ms: Any) -> Engine:
        settings = make_settings(
            provider=provider, **{"remote.base_url": base_url, "store.line_vectors": lines}, **ms
        )
        eng = Engine(settings, env={**FAST, "OPENAI_API_KEY": KEY, "GEMINI_API_KEY": KEY})
        engines.append(eng)
        return eng

    return make


def _document_requests(server: ProviderServer) -> list[list[str]]:
    probe = ["memdeck dimension probe"]
    return [
        r.json["input"] for r in server.embed_requests() if r.json and r.json.get("input") != probe
    ]


def test_units_ride_in_the_chunks_requests(build, workspace_dir: Path) -> None:
    write(workspace_dir, "memory/2026-03-02.md", _day(400))
    with ProviderServer() as chunk_server:
        alone = build("openai", chunk_server.url + "/v1", lines=False)
        assert not alone.sync().errors
        chunk_only = _document_requests(chunk_server)
    with ProviderServer() as server:
        eng = build("openai", server.url + "/v1")  # the default: unit vectors on
        done = eng.sync()
        assert not done.errors
        packed = _document_requests(server)
    chunk_texts = [text for request in chunk_only for text in request]
    assert len(chunk_only) == 4  # several requests to compare
    assert len(packed) == len(chunk_only)
    # every chunk once, each followed by its own units, in order
    sent = [text for request in packed for text in request]
    want = [x for chunk in chunk_texts for x in (chunk, *(u.text for u in unit_spans(chunk)))]
    assert sent == want
    # the stored unit vectors are the units' own vectors, as if embedded alone
    assert eng.provider is not None
    rows = list(eng.store.db.execute("select hash, text from chunks"))
    mats = eng.store.line_vectors([h for h, _ in rows], space_key(eng.provider))
    assert len(mats) == len(rows) == len(chunk_texts)
    for h, text in rows:
        own = np.asarray([text_vector(u.text, 16) for u in unit_spans(text)], dtype=np.float32)
        own /= np.linalg.norm(own, axis=1, keepdims=True)
        stored = line_codec.decode(line_codec.encode(own, [0] * len(own)), len(own), 16)[0]
        assert np.allclose(mats[h], stored, atol=1e-6)
    # a search reads them: the best unit is named
    line = "- 10:17 Turn 77: talked about topic77 and item6."
    top = eng.search(line, eng.default_options().with_(min_score=0)).results[0]
    assert top.best_line is not None
    lines = (workspace_dir / "memory/2026-03-02.md").read_text(encoding="utf-8").split("\n")
    assert lines[top.best_line - 1] == line


def test_an_edit_sends_the_changed_chunk_and_its_new_units_only(build, workspace_dir: Path) -> None:
    path = write(workspace_dir, "memory/2026-03-02.md", _day(120))
    with ProviderServer() as server:
        eng = build("openai", server.url + "/v1")
        eng.sync()
        before = len(server.embed_requests())
        with path.open("a", encoding="utf-8") as fh:
            fh.write("- 11:00 Booked the ferry to Hydra.\n")
        assert not eng.sync().errors
        new = [r.json["input"] for r in server.embed_requests()[before:]]
        # the changed chunk, then the one unit it did not have: its other lines'
        # vectors come from the chunk's old matrix
        assert new == [[new[0][0], "- 11:00 Booked the ferry to Hydra."]]
        assert new[0][0].endswith("- 11:00 Booked the ferry to Hydra.")
        assert eng.provider is not None
        (h,) = [
            h
            for h, text in eng.store.db.execute("select hash, text from chunks")
            if text == new[0][0]
        ]
        units = unit_spans(new[0][0])
        mat = eng.store.line_vectors([h], space_key(eng.provider))[h]
        own = np.asarray([text_vector(u.text, 16) for u in units], dtype=np.float32)
        own /= np.linalg.norm(own, axis=1, keepdims=True)
        stored = line_codec.decode(line_codec.encode(own, [0] * len(own)), len(own), 16)[0]
        assert np.allclose(mat, stored, atol=1e-6)  # reused rows and the new one, in order
        # without the embedding cache nothing is reused: every unit is sent again
        eng.close()
    with ProviderServer() as server:
        eng = build("openai", server.url + "/v1", **{"cache.enabled": False})
        eng.sync()
        before = len(server.embed_requests())
        with path.open("a", encoding="utf-8") as fh:
            fh.write("- 11:05 And the bus back.\n")
        eng.sync()
        sent = [t for r in server.embed_requests()[before:] for t in r.json["input"]]
        chunks = [t for (t,) in eng.store.db.execute("select text from chunks order by start_line")]
        assert sent == [x for c in chunks for x in (c, *(u.text for u in unit_spans(c)))]


def test_gemini_and_an_explicit_false_stay_chunk_only(build, workspace_dir: Path) -> None:
    write(workspace_dir, "memory/2026-03-02.md", _day(30))
    with ProviderServer() as server:
        gemini = build("gemini", server.url + "/v1beta")
        assert not gemini.sync().errors
        openai = build("openai", server.url + "/v1", lines=False)
        assert not openai.sync().errors
        for eng in (gemini, openai):
            assert eng.store.db.scalar("select count(*) from line_vectors") == 0
