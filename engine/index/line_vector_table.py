"""The SQLite store's unit-vector matrices (``line_vectors``), one per chunk text.

Written by ``engine.index.line_vectors`` after a sync, read by the search for its
candidates only; stored as ``engine.index.line_codec`` encodes them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from engine.index import line_codec
from engine.index.db import Database
from engine.index.line_codec import LineMatrix

#: a text chunk (not a media file's) without line vectors in the space bound to ``?``
_MISSING = (
    "c.hash not like 'media:%' and not exists (select 1 from line_vectors l"
    " where l.chunk_hash = c.hash and l.model = ?)"
)


class LineVectorTable:
    """The ``line_vectors`` table's operations (a part of ``Store``)."""

    db: Database

    def line_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
        """chunk hash → (lines × dims) matrix of its line vectors, for ``model``."""
        out: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = list(
                self.db.execute(
                    "select chunk_hash, dims, lines, vectors from line_vectors"
                    f" where model = ? and chunk_hash in ({marks})",
                    [model, *part],
                )
            )
            mats = line_codec.decode_matrices([(b, int(n), int(d)) for _, d, n, b in rows])
            for (h, _, _, _), mat in zip(rows, mats, strict=True):
                # a blob of the wrong size (None) is embedded again; damaged bytes
                # (not finite): the chunk ranks without them
                if mat is not None and np.isfinite(mat).all():
                    out[h] = mat
        return out

    def chunks_without_line_vectors(
        self, model: str, *, after: str = "", limit: int | None = None
    ) -> list[tuple[str, str]]:
        """(hash, text) of the text chunks whose line vectors are not stored yet, in
        hash order: those past ``after``, at most ``limit``."""
        return [
            (str(r[0]), str(r[1]))
            for r in self.db.execute(
                f"select distinct c.hash, c.text from chunks c where {_MISSING}"
                " and c.hash > ? order by c.hash limit ?",
                (model, after, -1 if limit is None else int(limit)),
            )
        ]

    def count_chunks_without_line_vectors(self, model: str) -> int:
        """How many distinct text chunks have no line vectors stored yet."""
        sql = f"select count(distinct c.hash) from chunks c where {_MISSING}"
        return int(self.db.scalar(sql, (model,)) or 0)

    def put_line_vectors(self, model: str, vectors: dict[str, LineMatrix]) -> None:
        """Store each chunk's unit vectors (8-bit codes, ``engine.index.line_codec``)."""
        with self.db.transaction():
            for h, (mat, keys) in vectors.items():
                self.db.execute(
                    "insert or replace into line_vectors(chunk_hash, model, dims, lines, vectors)"
                    " values (?,?,?,?,?)",
                    (
                        h,
                        model,
                        int(mat.shape[1]),
                        int(mat.shape[0]),
                        line_codec.encode(mat, list(keys)),
                    ),
                )

    def orphan_line_units(self, model: str, paths: Collection[str] = ()) -> dict[int, np.ndarray]:
        """unit key → vector, from the matrices of chunks no longer in the index (the
        old versions of chunks just edited, before ``prune_line_vectors``) and of the
        chunks of ``paths`` (files about to be indexed again: their unchanged units)."""
        sql = (
            "select dims, lines, vectors from line_vectors where model = ?"
            " and (chunk_hash not in (select hash from chunks)"
        )
        params: list[object] = [model]
        if paths:
            marks = ",".join("?" * len(paths))
            sql += f" or chunk_hash in (select hash from chunks where path in ({marks}))"
            params += list(paths)
        out: dict[int, np.ndarray] = {}
        for dims, lines, blob in self.db.execute(sql + ")", params):
            try:
                mat, keys = line_codec.decode(blob, int(lines), int(dims))
            except ValueError:  # a damaged blob: its units are embedded again
                continue
            if keys is not None and np.isfinite(mat).all():
                out.update(zip(keys.tolist(), mat, strict=True))
        return out

    def recode_line_vectors(self) -> int:
        """Write the matrices kept in an older layout (8-bit codes, float16) in the
        current one (``line_codec``), so a rebuilt index is the size of a new one;
        returns how many. A matrix without unit keys (float32, the oldest) or whose
        bytes fit no layout is left as it is."""
        stale = [
            (rowid, int(lines), int(dims), blob)
            for rowid, lines, dims, blob in self.db.execute(
                "select rowid, lines, dims, vectors from line_vectors"
            )
            if not line_codec.is_current(blob, int(lines), int(dims))
        ]
        done = 0
        with self.db.transaction():
            for rowid, lines, dims, blob in stale:
                try:
                    mat, keys = line_codec.decode(blob, lines, dims)
                except ValueError:
                    continue
                if keys is None or not np.isfinite(mat).all():
                    continue
                new = line_codec.encode(mat, [int(k) for k in keys])
                self.db.execute("update line_vectors set vectors = ? where rowid = ?", (new, rowid))
                done += 1
        return done

    def prune_line_vectors(self) -> int:
        """Drop line vectors of chunks no longer in the index (any model)."""
        before = self.db.scalar("select count(*) from line_vectors") or 0
        self.db.execute(
            "delete from line_vectors where chunk_hash not in (select hash from chunks)"
        )
        return int(before) - int(self.db.scalar("select count(*) from line_vectors") or 0)
