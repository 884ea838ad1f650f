"""Per-line vectors (``engine.index.line_vectors``) and the calibrated fusion reading them.

Real SQLite index, real sync and search; the embedder is the hand-computable
ConceptEmbedder so every cosine below is worked on paper.
"""

from __future__ import annotations

import math

from engine.index.line_vectors import line_units
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
    assert line_units("# Title\n\n---\n- a b\n  \nlast") == [
        (0, "# Title"),
        (3, "- a b"),
        (5, "last"),
    ]
    assert line_units("") == []


def _line_rows(engine) -> int:
    return int(engine.store.db.scalar("select count(*) from line_vectors") or 0)


def test_best_line_cosine_is_the_calibrated_vector_side(make_engine, workspace_dir) -> None:
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    embedder = ConceptEmbedder()
    eng = make_engine(provider=embedder, **{"store.line_vectors": True})
    eng.sync()
    assert _line_rows(eng) == 1  # one matrix per chunk
    out = eng.search(
        "kitten medication", eng.default_options().with_(min_score=0.0), today=FIXED_TODAY
    )
    top = out.results[0]
    assert out.fusion == "calibrated"
    # query (cat, medicine)/√2; the chunk (cat 2, medicine 1, train 2, database 2)/√13;
    # its line 4 "Miso the cat takes a tablet." (cat 2, medicine 1)/√5
    assert top.vector_score == round(3 / math.sqrt(26), 4)
    assert top.best_line == 4
    assert top.vector_input == round(3 / math.sqrt(10), 4) == top.vector_component
    assert top.score == round(0.7 * top.vector_component + 0.3 * top.text_component, 4)
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
    # the edited chunk is embedded again, and of its lines only the edited one
    assert embedder.texts_embedded - before == 2
    assert _line_rows(eng) == 1  # the old chunk's matrix was pruned
    path.unlink()
    eng.sync()
    assert _line_rows(eng) == 0


def test_line_vectors_default_to_the_local_provider_only(make_engine, workspace_dir) -> None:
    write(workspace_dir, "memory/2026-03-14.md", NOTE)
    eng = make_engine(provider=ConceptEmbedder())  # a stand-in for a paid API
    eng.sync()
    assert _line_rows(eng) == 0
    top = eng.search("kitten medication", eng.default_options().with_(min_score=0.0)).results[0]
    assert top.best_line is None and top.vector_input == top.vector_score
