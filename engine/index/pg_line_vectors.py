"""The PostgreSQL store's unit-vector matrices (``memdeck_line_vectors``).

Shared by every namespace of the database (a matrix belongs to a chunk text, and
two namespaces holding the same text share it), encoded as
``engine.index.line_codec`` encodes the SQLite store's.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.index import line_codec
from engine.index.line_codec import LineMatrix

#: this namespace's text chunks without line vectors in the space bound second
_MISSING = (
    "k.space = %s and k.hash not like 'media:%%' and not exists"
    " (select 1 from memdeck_line_vectors l where l.chunk_hash = k.hash and l.model = %s)"
)


class PgLineVectorTable:
    """The unit-vector operations (a part of ``PgStore``)."""

    if TYPE_CHECKING:  # provided by ``PgStore``; declared here for the type checker

        def _conn(self, *, snapshot: bool = False) -> AbstractContextManager[Any]: ...

        def _space(self, c: Any) -> str: ...

    def line_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
        """chunk hash → (lines × dims) matrix of its line vectors, for ``model``."""
        unique = list(dict.fromkeys(hashes))
        if not unique:
            return {}
        with self._conn() as c:
            rows = c.execute(
                "select chunk_hash, dims, lines, vectors from memdeck_line_vectors"
                " where model = %s and chunk_hash = any(%s)",
                (model, unique),
            ).fetchall()
        mats = line_codec.decode_matrices([(bytes(b), int(n), int(d)) for _, d, n, b in rows])
        # a damaged blob (None, or not finite) is left out: the chunk ranks without it
        return {
            str(h): mat
            for (h, _, _, _), mat in zip(rows, mats, strict=True)
            if mat is not None and np.isfinite(mat).all()
        }

    def orphan_line_units(self, model: str, paths: Collection[str] = ()) -> dict[int, np.ndarray]:
        """unit key → vector, from matrices no chunk of any namespace uses any more,
        and from those of this namespace's chunks of ``paths`` (files about to be
        indexed again: their unchanged units)."""
        with self._conn() as c:
            rows = c.execute(
                "select dims, lines, vectors from memdeck_line_vectors l where model = %s and"
                " (not exists (select 1 from memdeck_chunks k where k.hash = l.chunk_hash)"
                " or exists (select 1 from memdeck_chunks k where k.hash = l.chunk_hash"
                " and k.space = %s and k.path = any(%s)))",
                (model, self._space(c), list(paths)),
            ).fetchall()
        out: dict[int, np.ndarray] = {}
        for dims, lines, blob in rows:
            try:
                mat, keys = line_codec.decode(bytes(blob), int(lines), int(dims))
            except ValueError:  # a damaged blob: its units are embedded again
                continue
            if keys is not None and np.isfinite(mat).all():
                out.update(zip(keys.tolist(), mat, strict=True))
        return out

    def chunks_without_line_vectors(
        self, model: str, *, after: str = "", limit: int | None = None
    ) -> list[tuple[str, str]]:
        """(hash, text) of this namespace's text chunks whose line vectors are missing,
        in hash order: those past ``after``, at most ``limit``."""
        with self._conn() as c:
            rows = c.execute(
                f"select distinct on (k.hash) k.hash, k.text from memdeck_chunks k where {_MISSING}"
                " and k.hash > %s order by k.hash limit %s",
                (self._space(c), model, after, limit),
            ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def count_chunks_without_line_vectors(self, model: str) -> int:
        with self._conn() as c:
            row = c.execute(
                f"select count(distinct k.hash) from memdeck_chunks k where {_MISSING}",
                (self._space(c), model),
            ).fetchone()
        return int(row[0]) if row else 0

    def put_line_vectors(self, model: str, vectors: dict[str, LineMatrix]) -> None:
        if not vectors:
            return
        with self._conn() as c, c.cursor() as cur:
            cur.executemany(
                "insert into memdeck_line_vectors(chunk_hash, model, dims, lines, vectors)"
                " values (%s,%s,%s,%s,%s) on conflict (chunk_hash, model) do update set"
                " dims = excluded.dims, lines = excluded.lines, vectors = excluded.vectors",
                [
                    (h, model, int(m.shape[1]), int(m.shape[0]), line_codec.encode(m, list(k)))
                    for h, (m, k) in sorted(vectors.items(), key=lambda item: item[0])
                ],
            )

    def prune_line_vectors(self) -> int:
        """Drop line vectors no chunk of any namespace uses any more."""
        with self._conn() as c:
            cur = c.execute(
                "delete from memdeck_line_vectors l where not exists"
                " (select 1 from memdeck_chunks k where k.hash = l.chunk_hash)"
            )
            return int(cur.rowcount or 0)
