"""Unit vectors pooled from the chunk's own forward pass ("late chunking").

The calibrated ranking scores a chunk by its best unit (a line, or a paragraph of
wrapped prose: ``engine.index.line_vectors``). Embedding each unit's text on its
own runs the model a second time over (nearly) every token of the chunk. A mean
pooled sentence model's chunk vector is the mean of its last layer's token rows,
so one run that keeps the token rows gives both: the chunk's vector (the mean of
all rows, [CLS] and [SEP] included, as the pooled embedding is) and each unit's
(the mean of the rows of its own tokens, normalised). A unit's tokens then saw the
whole chunk, which is what a line of a chat log means in its conversation.

The mapping from a unit to its tokens needs the chunk's tokenization to be its
lines' tokenizations end to end between [CLS] and [SEP]. For a WordPiece model
(all-MiniLM-L6-v2) it is: lines are separated by whitespace, which only ever
splits words. :func:`line_token_starts` checks it for every chunk instead of
trusting it, and a chunk where it fails, or that is longer than the model's
context, has its units embedded on their own as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.embeddings.base import UnitSpans, normalize_rows

#: text → token ids; ``special`` adds [CLS] … [SEP] (what the model is fed)
Tokenize = Callable[[str, bool], list[int]]


def line_token_starts(tokenize: Tokenize, text: str, full: Sequence[int]) -> list[int] | None:
    """Where each line of ``text`` starts in ``full`` (the chunk's ids with [CLS]
    first), plus one past its last line's tokens; None when ``full`` is not [CLS],
    the lines' ids end to end, [SEP]."""
    starts = [1]
    ids: list[int] = []
    for line in text.split("\n"):
        ids += tokenize(line, False)
        starts.append(1 + len(ids))
    if len(full) != len(ids) + 2 or list(full[1:-1]) != ids:
        return None
    return starts


def pool_units(rows: np.ndarray, starts: Sequence[int], spans: UnitSpans) -> np.ndarray | None:
    """The normalised mean of each unit's token rows (``rows``: the chunk's token
    outputs, [CLS] first); None when a unit has no token."""
    out = np.empty((len(spans), rows.shape[1]), dtype=np.float32)
    for i, span in enumerate(spans):
        lo, hi = starts[span.first], starts[span.last + 1]
        if hi <= lo:
            return None
        out[i] = rows[lo:hi].mean(axis=0)
    return normalize_rows(out)
