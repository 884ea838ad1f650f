"""Per-line vectors (``engine.index.line_vectors``) and the calibrated fusion reading them.

Real SQLite index, real sync and search; the embedder is the hand-computable
ConceptEmbedder so every cosine below is worked on paper.
"""

from __future__ import annotations

import math

import numpy as np

from engine.index import chunk_vector_codec, line_codec
from engine.index.line_vectors import line_units, unit_spans
from engine.search import explain
from tests.engine.concept_embedder import ConceptEmbedder
from tests.engine_fixtures import FIXED_TODAY, write

NOTE = (
    "# 2026-03-14\n"
    "\n"
    "Booked the train to Porto.\n"
    "Miso the cat takes a tablet.\n"
    "Postgres migration rehearsal.\n"
)


def test_line_units_keep_lines_with_a_word_and_their_offsets() -> None:
    # a heading is no unit: keyword search finds its words
    assert line_units("# Title\n\n---\n- a b\n  \nlast") == [
        (3, "- a b"),
        (5, "last"),
    ]
    assert line_units("") == []


WRAPPED = (
    "# Wing in a slipstream\n"
    "\n"
    "an experimental study of a wing in a propeller slipstream was\n"
    "made in order to determine the spanwise distribution of the lift\n"
    "increase due to slipstream at different angles of attack .\n"
    "\n"
    "- [D1:3] Caroline: I went to a support group yesterday and it was so powerful.\n"
    "- [D1:4] Melanie: That is wonderful, tell me more about it, I would love to hear\n"
    "Booked the train to Porto.\n"
    "Miso the cat takes a tablet.\n"
    "buy milk\n"
    "call the vet\n"
)


def test_wrapped_prose_is_one_unit_and_lines_stay_lines() -> None:
    units = unit_spans(WRAPPED)
    # the hard-wrapped paragraph joined by spaces (lines 2-4), then every list
    # item, the sentence-per-line notes and the short lines alone; no heading
    assert units == [
        (
            2,
            4,
            "an experimental study of a wing in a propeller slipstream was made in order"
            " to determine the spanwise distribution of the lift increase due to slipstream"
            " at different angles of attack .",
        ),
        (6, 6, "- [D1:3] Caroline: I went to a support group yesterday and it was so powerful."),
        (7, 7, "- [D1:4] Melanie: That is wonderful, tell me more about it, I would love to hear"),
        (8, 8, "Booked the train to Porto."),
        (9, 9, "Miso the cat takes a tablet."),
        (10, 10, "buy milk"),
        (11, 11, "call the vet"),
    ]
    assert line_units(WRAPPED)[0] == (2, units[0][2])


def _unit(*axes: float) -> np.ndarray:
    """A concept vector (cat, medicine, train, database, coffee, other), normalised."""
    v = np.zeros(6, dtype=np.float32)
    v[: len(axes)] = axes
    return v / np.linalg.norm(v)


def _stored(v: np.ndarray) -> np.ndarray:
    """A unit vector as the index keeps it (5-bit codes and a scale, engine.index.line_codec)."""
    return line_codec.decode(line_codec.encode(v[None, :], [0]), 1, v.shape[0])[0][0]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return round(float(a @ b), 4)


def _pooled(*weighted: tuple[int, np.ndarray]) -> np.ndarray:
    """A chunk's vector as the index makes it (``engine.index.pooled_chunks``): its
    units' stored vectors, each weighted by its length in characters, normalised, and
    kept in 8 bits (``engine.index.chunk_vector_codec``)."""
    v = sum(w * _stored(u) for w, u in weighted)
    v = (v / np.linalg.norm(v)).astype(np.float32)
    back = chunk_vector_codec.decode(chunk_vector_codec.encode(v, compact=True), v.shape[0])
    assert back is not None
    return back


#: NOTE's chunk vector: its three lines (26, 28 and 29 characters) pooled
NOTE_CHUNK = _pooled((26, _unit(0, 0, 1)), (28, _unit(2, 1)), (29, _unit(0, 0, 0, 1)))


def _line_rows(engine) -> int:
    return int(engine.store.db.scalar("select count(*) from line_vectors") or 0)


def test_best_line_cosine_is_the_calibrated_vector_side(make_engine, workspace_dir) -> None:
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = ConceptEmbedder()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    assert _line_rows(eng) == 1  # one matrix per chunk
    opts = eng.default_options().with_(min_score=0.0)
    out = eng.search("kitten medication", opts.with_(feedback_weight=0.0), today=FIXED_TODAY)
    top = out.results[0]
    assert out.fusion == "calibrated"
    # query (cat, medicine)/√2; its line 4 "Miso the cat takes a tablet." (cat 2,
    # medicine 1)/√5; the chunk's vector pools its three orthogonal lines, weighted by
    # their lengths: 26 train + 28 line 4 + 29 database, so its cosine with the query is
    # 28·(3/√10)/√(26² + 28² + 29²) = 84/√23010 = 0.5538 before the rows are stored
    # in 5 bits (line 4 is read back as (15, 8)/17) and the pooled vector in 8: 0.5586
    assert round(84 / math.sqrt(23010), 4) == 0.5538
    assert top.vector_score == _cos(_unit(1, 1), NOTE_CHUNK) == 0.5586
    assert top.best_line == 4
    # 3/√10 = 0.9487 in float32; stored as codes (15, 8), read back as (15, 8)/17:
    # 23/(17√2) = 0.9567
    assert round(23 / (17 * math.sqrt(2)), 4) == 0.9567
    query, line4 = _unit(1, 1), _stored(_unit(2, 1))
    assert top.vector_input == _cos(query, line4) == top.vector_component == 0.9567
    assert top.score == round(0.7 * top.vector_component + 0.3 * top.text_component, 4)
    # with the feedback (the default) the query moves toward that chunk, f = the
    # chunk's vector: cos(q, f) as above, cos(f, line 4), cos(f, f) = 1
    moved = eng.search("kitten medication", opts, today=FIXED_TODAY).results[0]
    assert moved.feedback_from == ("memory/2026-03-14.md", 1, 5)
    assert moved.feedback_query_cosine == top.vector_score
    norm = round(math.sqrt(1 + 0.3**2 + 2 * 0.3 * top.vector_score), 4)
    assert moved.feedback_norm == norm
    assert moved.best_line == 4 and moved.feedback_line_cosine == _cos(NOTE_CHUNK, line4)
    assert moved.feedback_chunk_cosine == 1.0
    line = (top.line_cosine + 0.3 * moved.feedback_line_cosine) / norm
    chunk = (top.vector_score + 0.3 * 1.0) / norm
    assert moved.vector_input == round(max(line, chunk), 4) == moved.vector_component
    assert moved.vector_input < top.vector_input  # the chunk's other topics pull it away
    # the other fusions keep the chunk's cosine
    geo = eng.search("kitten medication", eng.default_options().with_(fusion="weighted"))
    assert geo.results[0].vector_component == top.vector_score


def test_unchanged_lines_come_from_the_embedding_cache(make_engine, workspace_dir) -> None:
    path = write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = ConceptEmbedder()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    before = embedder.texts_embedded
    path.write_text(NOTE.replace("rehearsal", "rehearsal went fine"), encoding="utf-8")
    eng.sync()
    # of the edited chunk only the edited line is embedded: the chunk's vector is
    # pooled from its units (engine.index.pooled_chunks), the others kept from before
    assert embedder.texts_embedded - before == 1
    assert _line_rows(eng) == 1  # the old chunk's matrix was pruned
    path.unlink()
    eng.sync()
    assert _line_rows(eng) == 0


def test_line_vectors_default_to_the_local_provider_only(make_engine, workspace_dir) -> None:
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    eng = make_engine(provider=ConceptEmbedder())  # a stand-in for a paid API
    eng.sync()
    assert _line_rows(eng) == 0
    opts = eng.default_options().with_(min_score=0.0)
    top = eng.search("kitten medication", opts.with_(feedback_weight=0.0)).results[0]
    assert top.best_line is None and top.vector_input == top.vector_score
    # the feedback moves the query toward the chunk's own vector: only the chunk's cosine
    moved = eng.search("kitten medication", opts).results[0]
    assert moved.best_line is None and moved.feedback_line_cosine is None
    assert moved.vector_input == round((top.vector_score + 0.3) / moved.feedback_norm, 4)


PROSE = (
    "# 2026-03-15\n"
    "\n"
    "The vet says Miso the cat should get\n"
    "his tablet every morning with food and\n"
    "the dose goes up after the blood test\n"
    "next month.\n"
    "\n"
    "- Booked the train to Porto.\n"
    "- Postgres migration rehearsal.\n"
)


def test_a_wrapped_paragraph_is_one_vector_and_the_chunk_counts_too(
    make_engine, workspace_dir
) -> None:
    write(workspace_dir, "memory/2026-03-15.md", PROSE)
    eng = make_engine(provider=ConceptEmbedder(), **{"store.line_vectors": True})
    eng.sync()
    # the units before the feedback (the query is not moved toward the chunk)
    opts = eng.default_options().with_(min_score=0.0, feedback_weight=0.0)
    out = eng.search("kitten medication", opts, today=FIXED_TODAY)
    top = out.results[0]
    # the paragraph (file lines 3-6) is one unit: (cat 2, medicine 2)/√8, cosine 1
    # with the query (cat, medicine)/√2; the chunk's vector pools it (125 characters)
    # with the two list items (28 and 31, train and database): 125/√(125² + 28² + 31²)
    assert (top.best_line, top.best_line_end) == (3, 6)
    # 1.0: the row's largest number is its scale × 15, so 1/√2 is kept exactly
    assert top.line_cosine == _cos(_unit(1, 1), _stored(_unit(2, 2))) == 1.0
    paragraph = unit_spans(PROSE)[0].text
    assert (len(paragraph), len("- Booked the train to Porto.")) == (125, 28)
    chunk = _pooled((125, _unit(1, 1)), (28, _unit(0, 0, 1)), (31, _unit(0, 0, 0, 1)))
    assert top.vector_score == _cos(_unit(1, 1), chunk)
    assert abs(top.vector_score - 125 / math.sqrt(17370)) < 0.002  # 0.9484 before 8 bits
    assert top.vector_input == top.vector_component == 1.0
    (line,) = [
        ln for ln in explain.all_lines(top, out.options) if ln.expression.startswith("max(0")
    ]
    assert str(line) == f"max(0, 1.0000, {top.vector_score:.4f}) = 1.0000"
    assert explain.best_unit(top.best_line, top.best_line_end) == "paragraph L3–6"
    # a query about the train: its list item (cosine 1) beats the chunk's 28/√17370
    train = eng.search("rail", opts, today=FIXED_TODAY)
    hit = train.results[0]
    assert (hit.best_line, hit.best_line_end, hit.line_cosine) == (8, 8, 1.0)
    assert hit.vector_input == 1.0 and hit.vector_score == _cos(_unit(0, 0, 1), chunk)
    assert abs(hit.vector_score - 28 / math.sqrt(17370)) < 0.002  # 0.2125 before 8 bits


def test_a_full_rebuild_keeps_the_unit_vectors(make_engine, workspace_dir) -> None:
    """Unit vectors are stored once, in their matrices (not in the embedding cache):
    a forced rebuild salvages the matrices and embeds no unit again."""
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = ConceptEmbedder()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    lines_cached = eng.store.db.scalar(
        "select count(*) from embedding_cache where hash not in (select hash from chunks)"
    )
    assert lines_cached == 0  # no unit vector in the cache
    before = embedder.texts_embedded
    done = eng.sync(force=True)
    assert done.full and embedder.texts_embedded == before  # nothing embedded again
    assert _line_rows(eng) == 1


def test_a_large_sync_reads_the_chunks_missing_units_a_page_at_a_time(
    make_engine, workspace_dir, monkeypatch
) -> None:
    """The chunks without unit vectors are read in pages, the next after the last
    one's vectors are stored, so a pass over 100k chunks never holds every chunk's
    text (it held ~300 MB); every chunk still gets its units. (A sync that pools its
    chunks' vectors gives them their units as it goes; this pass is for providers
    that give units in the chunk's own call and for chunks they could not.)"""
    from engine.index import line_vector_table, line_vectors

    for day in range(1, 8):
        write(workspace_dir, f"memory/2026-03-{day:02d}.md", NOTE.replace("Porto", f"Porto {day}"))
    monkeypatch.setattr(line_vectors, "MISSING_PAGE", 3)
    monkeypatch.setattr(line_vectors, "CHUNK_BATCH", 2)
    pages: list[tuple[str, int, int]] = []
    read = line_vector_table.LineVectorTable.chunks_without_line_vectors

    def counted(self, model, *, after="", limit=None):
        got = read(self, model, after=after, limit=limit)
        pages.append((after, limit, len(got)))
        return got

    monkeypatch.setattr(line_vector_table.LineVectorTable, "chunks_without_line_vectors", counted)
    embedder = ConceptEmbedder()
    eng = make_engine(provider=embedder, **{"store.line_vectors": False})
    eng.sync()
    assert _line_rows(eng) == 0 and pages == []
    embedded = line_vectors.embed_missing_lines(eng.store, embedder, use_cache=True)
    assert [(limit, n) for _, limit, n in pages] == [(3, 3), (3, 3), (3, 1)]
    assert pages[0][0] == "" and pages[1][0] < pages[2][0]  # each page past the last
    assert _line_rows(eng) == 7
    # per batch (2 chunks, pages of 3: batches of 2, 1, 2, 1, 1) its distinct lines:
    # a Porto line each, and the two lines every note shares once per batch
    assert embedded == 4 + 3 + 4 + 3 + 3
