"""An ``embed n/N`` progress event is a promise: those n vectors are committed to
the cache already, so a process killed right after the line resumes with them as
cache hits instead of paying for them again."""

from __future__ import annotations

from pathlib import Path

from engine.embeddings.base import EmbedProgress
from engine.events import SyncProgress
from engine.index.db import Database
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import write


class ReportingEmbedder(ConceptEmbedder):
    """Reports each text as done while the call runs, as the real providers do."""

    def embed_documents(self, texts, progress=None):
        out = super().embed_documents(texts)
        for i in range(len(texts)):
            if progress is not None:
                progress(EmbedProgress(i + 1, len(texts), 1, 0))
        return out


def test_reported_chunks_are_committed(make_engine, workspace_dir: Path) -> None:
    write(workspace_dir, "MEMORY.md", "# Memory\n\n- coffee\n")
    engine = make_engine(provider=ReportingEmbedder())
    engine.sync()
    for i in range(80):  # 80 new chunks: three embedding slices of up to 32
        write(workspace_dir, f"memory/n{i}.md", f"# Note {i}\n\n- espresso beans number {i}\n")
    index = engine.index_path
    promised: list[tuple[int, int]] = []

    def on_event(event: object) -> None:
        if isinstance(event, SyncProgress) and event.phase == "embed":
            reader = Database(index)  # another connection: sees committed rows only
            try:
                cached = int(reader.scalar("select count(*) from embedding_cache") or 0)
            finally:
                reader.close()
            promised.append((event.chunks_embedded, cached))

    before = engine.store.counts()["cache_entries"]
    engine.bus.subscribe(on_event)
    done = engine.sync()
    assert done.chunks_embedded == 80 and promised
    assert max(n for n, _ in promised) == 80
    for reported, cached in promised:
        assert cached - before >= reported, promised
