"""FTS5's bm25 for a handful of chosen rows, without ranking every match.

A hybrid search needs the keyword score of each *vector* candidate too, and
FTS5 can only give it by ranking every row its query matches (``ORDER BY
rank`` scores them all; ``rowid IN (...)`` restarts the query, idf included,
for each id: ~20 ms a row at 100k chunks). At 100k chunks the common words of
a query match half the rows, so reading a long ranking to find two dozen
candidates in it was most of a hybrid search.

``Bm25Rows`` computes the same number FTS5 would, from FTS5's own parts: its
tokenizer (through apsw), its per-row token counts (``*_docsize``), its
row and token totals (the ``averages`` record) and the number of rows holding
each phrase (a ``count(*)`` of the phrase, which walks one doclist without
scoring anything). The arithmetic is ``fts5Bm25Function``'s, operation for
operation in the same order, so the doubles are the same bits
(``tests/engine/test_fts_bm25.py`` compares every candidate of every LoCoMo
query with FTS5's own ``bm25()``).

The ``unicode61`` and ``porter`` (``porter unicode61``) tokenizers under apsw are
supported; ``Store.fts_ranks_of`` returns None otherwise (trigram, another
binding) and the caller reads FTS5's ranking as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: fts5_aux.c's constants
K1 = 1.2
B = 0.75
#: fts5_aux.c replaces an idf <= 0 with this
IDF_FLOOR = 1e-6

Tokenize = Callable[[str, bool], list[str]]


def read_varint(blob: bytes, pos: int = 0) -> tuple[int, int]:
    """SQLite's big-endian varint (FTS5 records use it): (value, next position)."""
    value = 0
    for i in range(8):
        byte = blob[pos + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos + i + 1
    return (value << 8) | blob[pos + 8], pos + 9


@dataclass(frozen=True)
class Phrase:
    """One quoted term of a MATCH expression, as FTS5 tokenizes it."""

    tokens: tuple[str, ...]
    rows_with: int  # how many rows contain it (FTS5's nHit)


def phrase_count(tokens: Sequence[str], phrase: Sequence[str]) -> int:
    """Instances of ``phrase`` (consecutive tokens) in ``tokens``, overlaps included."""
    n = len(phrase)
    if n == 1:
        return tokens.count(phrase[0])
    first = phrase[0]
    return sum(
        1
        for i, tok in enumerate(tokens)
        if tok == first and tuple(tokens[i : i + n]) == tuple(phrase)
    )


def bm25_rank(
    phrases: Sequence[Phrase],
    doc_tokens: Sequence[str],
    doc_size: int,
    rows: int,
    total_tokens: int,
) -> tuple[float, list[int]]:
    """FTS5's ``bm25()`` value (negative; smaller is better) and each phrase's frequency.

    Written as ``fts5Bm25Function`` computes it: idf = ln((N − n + 0.5)/(n + 0.5))
    floored to 1e-6, avgdl = total tokens / N, and the per-phrase terms summed in
    query order.
    """
    avgdl = float(total_tokens) / float(rows)
    freqs = [phrase_count(doc_tokens, p.tokens) for p in phrases]
    d = float(doc_size)
    score = 0.0
    for phrase, f in zip(phrases, freqs, strict=True):
        idf = math.log((rows - phrase.rows_with + 0.5) / (phrase.rows_with + 0.5))
        if idf <= 0.0:
            idf = IDF_FLOOR
        freq = float(f)
        score += idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * d / avgdl)))
    return -1.0 * score, freqs
