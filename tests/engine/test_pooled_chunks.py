"""Chunk vectors pooled from unit vectors (``engine.index.pooled_chunks``).

Real SQLite index, real sync and search; the embedder is the hand-computable
ConceptEmbedder, wrapped to record every text it is asked to embed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.embeddings.base import ProgressCallback
from engine.events import SyncProgress
from engine.index import chunk_vector_codec
from engine.index.indexer import index_fingerprint
from engine.index.pooled_chunks import CHUNK_POOLING, pooled_vector, pools_chunks
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import write

NOTE = (
    "# 2026-03-14\n"
    "\n"
    "Booked the train to Porto.\n"
    "Miso the cat takes a tablet.\n"
    "Booked the train to Porto.\n"
)


class Recording(ConceptEmbedder):
    """The ConceptEmbedder, keeping the texts of every ``embed_documents`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        self.asked += list(texts)
        return super().embed_documents(texts, progress)


def _chunk_vector(engine) -> np.ndarray:
    blob = engine.store.db.scalar("select embedding from chunks order by id limit 1")
    vec = chunk_vector_codec.decode(blob, 6)
    assert vec is not None
    return vec


def _compact(vec: np.ndarray) -> np.ndarray:
    """A pooled vector as SQLite keeps it (8-bit codes and a scale)."""
    back = chunk_vector_codec.decode(chunk_vector_codec.encode(vec, compact=True), vec.shape[0])
    assert back is not None
    return back


def test_each_distinct_unit_is_embedded_once_and_no_chunk_text(make_engine, workspace_dir):
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = Recording()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    # the repeated line once; never the chunk's whole text, never the heading
    assert embedder.asked == ["Booked the train to Porto.", "Miso the cat takes a tablet."]
    units = eng.store.line_vectors(
        [str(eng.store.db.scalar("select hash from chunks"))], _space(eng)
    )
    (matrix,) = units.values()
    spans_len = [26, 28, 26]
    expected = _compact(pooled_vector(matrix, _spans(spans_len)))
    assert np.array_equal(_chunk_vector(eng), expected)
    # stored in 8 bits: dims codes and a float32 scale
    assert len(eng.store.db.scalar("select embedding from chunks")) == 6 + 4
    # train twice (52 characters) and the cat line once (28): train leads
    train, cat = expected[2], expected[0]
    assert train > cat > 0


def _spans(lengths: list[int]):
    from engine.embeddings.base import UnitSpan

    return [UnitSpan(i, i, "x" * n) for i, n in enumerate(lengths)]


def _space(engine) -> str:
    from engine.index.line_vectors import space_key

    return space_key(engine.provider)


def test_the_cache_holds_no_pooled_vector_and_a_rebuild_embeds_nothing(make_engine, workspace_dir):
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = Recording()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    # a pooled vector is not the model's vector of the chunk's text: never cached as one
    assert eng.store.db.scalar("select count(*) from embedding_cache") == 0
    before, asked = _chunk_vector(eng).copy(), len(embedder.asked)
    done = eng.sync(force=True)
    assert done.full and len(embedder.asked) == asked  # the units came from the old file
    assert (done.chunks_embedded, done.cache_hits) == (0, 1)  # and the report says so
    assert np.array_equal(_chunk_vector(eng), before)  # byte for byte the same vector


def test_a_chunk_without_units_is_embedded_whole(make_engine, workspace_dir):
    write(workspace_dir, "memory/2026-03-14.md", "# Porto\n")
    embedder = Recording()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    assert embedder.asked == ["# Porto"]
    assert _chunk_vector(eng)[2] == 1.0  # the train axis: the heading's own vector
    assert eng.status().units_missing == 0


def test_the_fingerprint_names_the_pooling_only_where_it_applies(make_settings):
    on = make_settings(**{"store.line_vectors": True}).memory_search
    off = make_settings(**{"store.line_vectors": False}).memory_search
    provider = ConceptEmbedder()
    assert pools_chunks(provider, True) and not pools_chunks(provider, False)
    assert not pools_chunks(None, True)
    assert index_fingerprint(on, provider)["chunk_vectors"] == CHUNK_POOLING
    assert "chunk_vectors" not in index_fingerprint(off, provider)
    assert "chunk_vectors" not in index_fingerprint(on, None)
    # a reader that does not load the model to learn its size names it all the same
    unloaded = index_fingerprint(on, provider, dims_known=False)
    assert unloaded["chunk_vectors"] == CHUNK_POOLING and unloaded["dims"] is None
    assert unloaded["model"] == "concept-v1"


def test_turning_unit_vectors_on_rebuilds_with_pooled_vectors(make_engine, workspace_dir):
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    eng = make_engine(provider=Recording(), **{"store.line_vectors": False})
    eng.sync()
    model_vector = _chunk_vector(eng).copy()
    assert eng.store.db.scalar("select count(*) from embedding_cache") == 1
    eng.close()
    embedder = Recording()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    done = eng.sync()
    assert done.full  # another fingerprint: a full rebuild
    assert embedder.asked == ["Booked the train to Porto.", "Miso the cat takes a tablet."]
    assert not np.array_equal(_chunk_vector(eng), model_vector)
    # the old index's chunk vector is not carried into the new one's cache: nothing reads it
    assert eng.store.db.scalar("select count(*) from embedding_cache") == 0


def test_progress_counts_chunks_not_units(make_engine, workspace_dir):
    for day in range(1, 4):
        write(workspace_dir, f"memory/2026-03-{day:02d}.md", NOTE.replace("Porto", f"Porto {day}"))
    eng = make_engine(provider=Recording(), **{"store.line_vectors": True})
    seen: list[SyncProgress] = []
    eng.bus.subscribe(lambda e: seen.append(e) if isinstance(e, SyncProgress) else None)
    eng.sync()
    embeds = [e for e in seen if e.phase == "embed"]
    assert embeds and embeds[-1].chunks_embedded == embeds[-1].chunks_total == 3
    assert all(e.chunks_embedded <= e.chunks_total for e in embeds)


def test_the_openclaw_profile_configured_has_the_models_vectors_cached(
    make_settings, workspace_dir, engines
):
    """The profile ranks with the model's vectors of its chunks' texts, as OpenClaw
    does; a pooled index has none, so the writer caches them for every reader."""
    import dataclasses

    from engine.core import Engine

    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    settings = dataclasses.replace(
        make_settings(**{"store.line_vectors": True}), profile="openclaw"
    )
    embedder = Recording()
    writer = Engine(settings, provider=embedder)
    engines.append(writer)
    done = writer.sync()
    assert done.chunks_embedded == 1 + 1  # memdeck's chunk (pooled) and the profile's
    units, profile = embedder.asked[:2], embedder.asked[2:]
    assert units == ["Booked the train to Porto.", "Miso the cat takes a tablet."]
    (chunk_text,) = profile  # the profile's one chunk, embedded whole
    assert "Booked the train to Porto.\nMiso the cat takes a tablet." in chunk_text
    (cached,) = list(writer.store.db.execute("select embedding from embedding_cache"))
    model = embedder.embed_documents([chunk_text])[0]
    assert np.array_equal(np.frombuffer(cached[0], dtype=np.float32), model)
    assert not np.array_equal(_chunk_vector(writer), model)  # memdeck's own is pooled
    # a reader (the CLI's search) embeds the query only
    reader_embedder = Recording()
    reader = Engine(settings, provider=reader_embedder, read_only=True)
    engines.append(reader)
    out = reader.openclaw_searcher().outcome("kitten medication", min_score=0.0)
    assert reader_embedder.asked == [] and reader_embedder.calls == 1
    assert out.results and out.results[0].path == "memory/2026-03-14.md"
    # a second sync embeds nothing again
    asked = len(embedder.asked)
    writer.sync()
    assert len(embedder.asked) == asked


def test_the_default_profile_caches_no_model_vector(make_engine, workspace_dir):
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = Recording()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    assert eng.settings.profile == "memdeck"
    assert len(embedder.asked) == 2  # the units only
    assert eng.store.db.scalar("select count(*) from embedding_cache") == 0


def test_a_damaged_unit_matrix_is_embedded_again(make_engine, workspace_dir):
    """A unit matrix whose bytes fit no layout gives no unit back: an edit of its
    file embeds the chunk's units again, and a checked index rebuilds, never a crash."""
    path = write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = Recording()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    eng.store.db.execute("update line_vectors set vectors = x'deadbeef'")
    path.write_text(NOTE + "Postgres migration rehearsal.\n", encoding="utf-8")
    done = eng.sync()
    assert done.errors == ()
    # the old matrix could give nothing back: every unit of the edited chunk embedded
    assert embedder.asked[2:] == [
        "Booked the train to Porto.",
        "Miso the cat takes a tablet.",
        "Postgres migration rehearsal.",
    ]
    eng.store.db.execute("update line_vectors set vectors = x'deadbeef'")
    checked = eng.sync(check="thorough")
    assert checked.full and checked.errors == ()
    assert eng.store.check(level="thorough") == ()
    assert eng.search("kitten").results[0].path == "memory/2026-03-14.md"


def test_a_rebuild_writes_older_unit_matrices_in_the_current_layout(make_engine, workspace_dir):
    """An index from before the 5-bit layout keeps its 8-bit matrices until a rebuild
    (the one its new fingerprint asks for) writes them again, without the model."""
    from engine.index import line_codec

    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = Recording()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    ((h, model, lines, dims, blob),) = list(
        eng.store.db.execute("select chunk_hash, model, lines, dims, vectors from line_vectors")
    )
    mat, keys = line_codec.decode(blob, lines, dims)
    scale = (np.abs(mat).max(axis=1) / 127).astype(np.float32)
    codes = np.rint(mat / scale[:, None]).astype(np.int8)
    eight = keys.tobytes() + scale.tobytes() + codes.tobytes()  # the layout before 5 bits
    eng.store.db.execute(
        "update line_vectors set vectors = ? where chunk_hash = ? and model = ?", (eight, h, model)
    )
    assert not line_codec.is_current(eight, lines, dims)
    asked = len(embedder.asked)
    eng.sync(force=True)
    (now,) = [b for (b,) in eng.store.db.execute("select vectors from line_vectors")]
    assert line_codec.is_current(now, lines, dims) and len(now) < len(eight)
    assert len(embedder.asked) == asked
    back, _ = line_codec.decode(now, lines, dims)
    assert np.abs(back - mat).max() < 0.1  # the same units, in 5 bits
