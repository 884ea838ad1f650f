"""The first search of a new workspace does not wait for its vectors (issue 18).

The provider blocks in ``embed_documents`` until the test releases it, standing
in for an hour of local-model embedding. The first search must answer from the
keyword side at once, say why, and start the first index; once the provider is
released and the index is built, searches are hybrid.
"""

from __future__ import annotations

import threading
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
