"""The first search of a new workspace does not wait for its vectors.

The provider blocks in ``embed_documents`` until the test releases it, standing
in for an hour of local-model embedding. The first search must answer from the
keyword side at once, say why, and start the first index; once the provider is
released and the index is built, searches are hybrid.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from engine.core import Engine
from engine.embeddings.base import ProgressCallback
from tests.engine.concept_embedder import ConceptEmbedder


class HeldEmbedder(ConceptEmbedder):
    """Embeds documents only after ``release`` is set (queries answer at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        self.entered.set()
        assert self.release.wait(60), "the test never released the embedder"
        return super().embed_documents(texts, progress)


def test_first_search_answers_keyword_only_while_vectors_are_built(
    make_engine: Callable[..., Engine], workspace_dir: Path
) -> None:
    (workspace_dir / "MEMORY.md").write_text("# Memory\n\nDana prefers flat white coffee.\n")
    (workspace_dir / "memory" / "atlas.md").write_text("Atlas rollback plan drafted.\n")
    provider = HeldEmbedder()
    engine = make_engine(provider)
    out = engine.search("atlas rollback")
    assert out.mode == "fts"
    assert out.retrieval.vector_error is not None
    assert out.retrieval.vector_error.startswith("vectors are still being built")
    assert out.results and out.results[0].path == "memory/atlas.md"
    assert provider.entered.wait(30)  # the first index really started, in the background
    assert engine.store.get_meta("fingerprint") is None  # ... and is not done
    again = engine.search("flat white coffee")  # still answering meanwhile
    assert again.mode == "fts" and again.results[0].path == "MEMORY.md"
    provider.release.set()
    first = engine._first_sync
    assert first is not None
    first.join(30)
    assert not first.is_alive()
    done = engine.search("coffee")
    assert done.mode == "hybrid" and done.retrieval.vector_error is None
    assert done.retrieval.vector_hits


class SlowEmbedder(ConceptEmbedder):
    """Each call of ``embed_documents`` takes ``delay`` seconds (a remote request, a
    slice of the local model), reporting progress after it as the providers do."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.calls = 0

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        out = []
        for text in texts:
            threading.Event().wait(self.delay)
            self.calls += 1
            out.append(super().embed_documents([text]))
            if progress is not None:
                from engine.embeddings.base import EmbedProgress

                progress(EmbedProgress(len(out), len(texts), self.calls, 0))
        return np.vstack(out)


def test_stopping_the_sync_service_stops_the_first_index_a_search_started(
    make_engine: Callable[..., Engine], workspace_dir: Path
) -> None:
    """``memdeck mcp`` stops its sync service when the client leaves. The first index
    a search started holds the writer's lock the service's scheduler waits for: the
    stop asks it to end as well, between two calls of the provider, instead of
    waiting up to 10 s for it (an SDK client kills a server that takes 2 s)."""
    from engine.index.sync_service import SyncService

    for i in range(60):
        (workspace_dir / "memory" / f"note-{i}.md").write_text(f"Note {i} about the atlas.\n")
    provider = SlowEmbedder(0.1)  # 60 chunks: 6 s of embedding
    engine = make_engine(provider)
    assert engine.search("atlas").mode == "fts"  # the first index starts behind it
    service = SyncService(engine)
    service.start()
    deadline = time.monotonic() + 30
    while provider.calls < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    t0 = time.monotonic()
    assert service.stop(timeout=10.0)
    took = time.monotonic() - t0
    first = engine._first_sync
    assert first is not None
    first.join(5)
    assert not first.is_alive() and took < 2.0, took
    assert provider.calls < 30  # it did not run to its end
    assert engine.store.get_meta("fingerprint") is None  # nothing half-built was kept
