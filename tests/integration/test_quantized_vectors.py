"""The quantized vector scan against exact search on real MiniLM vectors.

The vectors are the real all-MiniLM-L6-v2's, of LoCoMo conversations' lines (as
``tests.bench.locomo`` writes them into a workspace), in a real ``Store``; the
queries are the conversations' questions. ``QUANTIZE_FROM`` is lowered so that
these 419 rows (conversation 0) take the path a 100k-chunk index takes; 6 hits are
asked, so the first pass keeps the share of the rows it keeps for 24 hits out of
~1,650 (each real line costs ~20 ms of CPU to embed, so the rows are kept few).

The model runs on one thread, the indexer's own ``embed_documents``: llama.cpp's
threads spin-wait for each other at every step of the graph, so beside another busy
process (the other pytest-xdist workers) a second thread made the embedding 3 to 60
times slower, not faster. The fixture took 100-120 s of CPU; on one thread and one
conversation, about 10 s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from engine.embeddings.local import LocalProvider
from engine.index import vector_matrix
from engine.index.store import NewChunk, Store
from tests.bench import locomo

DATA = Path(
    os.environ.get(
        "MEMDECK_BENCH_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "bench"
    )
)
if not (DATA / "locomo" / "locomo10.json").is_file():
    # a worktree beside the main checkout (…/wt/<name>) shares its data
    DATA = Path(__file__).resolve().parents[4] / "shared" / "bench"
CONVERSATIONS = (0,)
QUESTIONS_PER_CONVERSATION = 80
K = 6


@pytest.fixture(scope="module")
def minilm_lines(
    tmp_path_factory: pytest.TempPathFactory, minilm_gguf: Path
) -> tuple[Store, np.ndarray]:
    source = DATA / "locomo" / "locomo10.json"
    if not source.is_file():
        pytest.skip(f"LoCoMo data absent at {source} (set MEMDECK_BENCH_DATA)")
    samples = json.loads(source.read_text())
    provider = LocalProvider(minilm_gguf, n_threads=1)
    store = Store(tmp_path_factory.mktemp("quantized") / "index.sqlite")
    store.set_dims(provider.dims)
    questions: list[str] = []
    for ci in CONVERSATIONS:
        conv = locomo.build_conversation(ci, samples[ci])
        for rel, text in conv.files.items():
            lines = [line for line in text.splitlines() if line.startswith("- [")]
            if not lines:
                continue
            vectors = provider.embed_documents(lines)
            chunks = [
                NewChunk(i + 1, i + 1, f"{ci}/{rel}/{i}", line, vectors[i])
                for i, line in enumerate(lines)
            ]
            store.replace_file(
                path=f"{ci}/{rel}", source="memory", file_hash=f"{ci}/{rel}", mtime=1.0,
                size=len(text), model=provider.model, chunks=chunks,
            )  # fmt: skip
        questions += [q.text for q in conv.questions[:QUESTIONS_PER_CONVERSATION]]
    queries = np.stack([provider.embed_query(q) for q in questions])
    provider.close()
    yield store, queries
    store.close()


def _exact(store: Store, q: np.ndarray, k: int) -> list[tuple[int, float]]:
    rows = store.db.execute("select id, embedding from chunks where embedding is not null")
    scored = [(int(r[0]), float(np.dot(np.frombuffer(r[1], dtype=np.float32), q))) for r in rows]
    scored.sort(key=lambda hit: (-hit[1], hit[0]))
    return scored[:k]


def test_quantized_scan_returns_the_exact_top_k(
    minilm_lines: tuple[Store, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, queries = minilm_lines
    monkeypatch.setattr(vector_matrix, "QUANTIZE_FROM", 300)
    store._matrix_cache = None
    matrix = store.vector_matrix(["memory"])
    assert matrix.quantized and matrix.n > 300
    for q in queries:
        # same chunks, same order, and the exact float32 cosines
        assert store.vector_search(q, K, ["memory"], path="numpy") == _exact(store, q, K)
    store._matrix_cache = None


def test_a_first_pass_of_one_row_in_25_keeps_the_top_k(
    minilm_lines: tuple[Store, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass cut to 1/25 of the rows, the fraction a 100k index uses,
    without the floor of 40 rows per hit: 17 rows for 6 hits here, against
    4,000 rows (167 per hit) at 100k, so this is the harsher test."""
    store, queries = minilm_lines
    monkeypatch.setattr(vector_matrix, "QUANTIZE_FROM", 300)
    monkeypatch.setattr(vector_matrix, "SHORTLIST_PER_HIT", 0)
    store._matrix_cache = None
    matrix = store.vector_matrix(["memory"])
    assert vector_matrix.shortlist_size(matrix.n, K) == -(-matrix.n // 25)
    recalls = []
    for q in queries:
        got = {cid for cid, _ in store.vector_search(q, K, ["memory"], path="numpy")}
        recalls.append(len(got & {cid for cid, _ in _exact(store, q, K)}) / K)
    assert float(np.mean(recalls)) >= 0.99  # measured: 1.0 (all 6 for each of 80 questions)
    store._matrix_cache = None
