"""One unrelated added file moves another query's scores by at most a stated bound.

The bound is ``tests.bench.names.STABLE_MAX`` (docs/ranking.md, "Stable scores"),
measured by ``make bench-quality`` with the real model on the six generated names
workspaces. Here the same check runs on one of them with the hash embedder (the
vector side does not depend on the other chunks; the keyword side's word weights
and the feedback's first pass do), and the benchmark's worst case is worked by hand.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.core import Engine
from engine.search import scoring
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import names, names_data
from tests.bench.common import bench_settings
from tests.bench.synthetic import HashEmbedder


def _scores(root: Path, ws: names_data.NamesWorkspace) -> list[dict[tuple[str, int], float]]:
    for rel, text in ws.files.items():
        (root / "ws" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "ws" / rel).write_text(text, encoding="utf-8")
    settings = bench_settings(root / "ws", root / "state")
    ms = settings.memory_search
    ms = dataclasses.replace(ms, store=dataclasses.replace(ms.store, line_vectors=True))
    engine = Engine(dataclasses.replace(settings, memory_search=ms), provider=HashEmbedder())
    try:
        engine.sync()
        options = engine.default_options().with_(min_score=0.0)
        out = []
        for q in ws.queries:
            outcome = rank(
                retrieve(engine.store, engine.provider, q.text, options), options, ws.today
            )
            out.append({(c.path, c.start_line): c.score for c in outcome.candidates})
        return out
    finally:
        engine.close()


def test_one_unrelated_note_moves_no_score_beyond_the_bound(tmp_path: Path) -> None:
    ws = next(w for w in names_data.workspaces() if w.kind == "generated")
    plus = dataclasses.replace(ws, files={**ws.files, names.ADDED: names_data.unrelated_note()})
    before, after = _scores(tmp_path / "before", ws), _scores(tmp_path / "after", plus)
    changes = [
        abs(x - b[key])
        for b, a in zip(before, after, strict=True)
        for key, x in a.items()
        if key[0] != names.ADDED and key in b
    ]
    assert len(changes) > 500, len(changes)
    assert max(changes) <= names.STABLE_MAX, max(changes)
    assert any(c > 0 for c in changes)  # the note did change the word weights


def test_what_an_added_note_can_move_is_the_word_weights_share() -> None:
    """The score's corpus-dependent parts: each word's weight (FTS5's idf) enters only
    as its share of the query's weight, and a word's strength uses a fixed reference
    length (not the average chunk's), so an added note moves the text side through
    the shares alone. The worst case of the benchmark, by hand: "Nikolai" in 22 of 68
    chunks beside "Petrov" in 3, the note adding 21 chunks; T's matched term is
    share × strength ÷ κ, and the score moves by 0.3 × that change."""
    w = scoring.word_weight
    share = [w(22, n) / (w(22, n) + w(3, n)) for n in (68, 89)]
    assert [round(x, 4) for x in share] == [0.1986, 0.2551]
    strength = scoring.tf_strength(2, 29)  # "Nikolai" twice in 29 words: 1.8300
    assert round(strength, 4) == 1.83
    move = 0.3 * (share[1] - share[0]) * strength / scoring.CALIBRATED_TEXT_SCALE
    assert 0.035 < move < names.STABLE_MAX  # measured 0.0388 (0.4476 → 0.4864)
    # a weight never falls below the printable floor, where FTS5 puts 1e-6
    assert w(6, 10) == scoring.WORD_WEIGHT_FLOOR == 0.01
