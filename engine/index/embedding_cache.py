"""The embedding cache of the SQLite store: vectors by text hash, per provider space.

A chunk's vector is paid for once: the cache keeps it under the text's sha256
for its provider, model and endpoint, so an unchanged text (a moved file, a full
rebuild, an edit elsewhere in the file) is never sent again. A cached vector
that is also a live chunk's is stored once, in the chunk (an empty blob here
points at it). A rebuild seeds its new file from the old one
(:meth:`EmbeddingCacheTable.copy_cache_from`), unit-vector matrices included.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.index.db import Database, DatabaseError

#: an embedding_cache row's vector: its own blob, or (empty blob) its chunk's
CACHED_VECTOR = (
    "case when length(embedding) > 0 then embedding else (select c.embedding from chunks c"
    " where c.hash = embedding_cache.hash and c.embedding is not null limit 1) end"
)


def vector_blob(vec: np.ndarray | None) -> bytes | None:
    return None if vec is None else np.asarray(vec, dtype=np.float32).tobytes()


def sound_vector(vec: np.ndarray) -> bool:
    """Finite and not all zero (an embedding is never the zero vector)."""
    return bool(vec.size) and bool(np.isfinite(vec).all()) and bool(np.any(vec))


class EmbeddingCacheTable:
    """The ``embedding_cache`` table's operations (a part of ``Store``)."""

    db: Database

    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ",".join("?" * len(part))
            for h, blob in self.db.execute(
                f"select hash, {CACHED_VECTOR} from embedding_cache where provider=? and model=?"
                f" and provider_key=? and hash in ({marks})",
                [provider, model, provider_key, *part],
            ):
                if blob:  # a reference whose chunk is gone (cannot happen): embed again
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if sound_vector(vec):  # damaged bytes: embed that text again
                        out[h] = vec
        return out

    def cache_share_with_chunks(self) -> int:
        """Store each cached vector once: an entry whose vector is byte for byte a live
        chunk's ``chunks.embedding`` keeps an empty blob that points there (by hash).

        Run after a sync; also what turns an index written before it (every vector in
        the cache and in ``chunks``) into this layout. Deleting the chunk first hands
        the vector back to the entry (``_delete_chunks``), so a cached vector outlives
        its chunk as before. Returns the entries turned into references."""
        # Each entry is written anew (deleted, then inserted) rather than updated in
        # place: a row that shrinks in place leaves its page as full of nothing as it
        # was of vectors, while a deleted row's page is merged with its neighbours
        # and the pages left over are freed for other tables and the file system.
        with self.db.transaction():
            self.db.execute(
                "insert or replace into embedding_cache(provider, model, provider_key, hash,"
                " embedding, dims, updated_at)"
                " select provider, model, provider_key, hash, x'', dims, updated_at"
                " from embedding_cache where length(embedding) > 0"
                " and embedding = (select c.embedding from chunks c"
                " where c.hash = embedding_cache.hash and c.embedding is not null limit 1)"
            )
            return int(self.db.scalar("select changes()") or 0)

    def cache_put(
        self, provider: str, model: str, provider_key: str, items: dict[str, np.ndarray]
    ) -> None:
        now = time.time()
        with self.db.transaction():
            self.db.executemany(
                "insert or replace into embedding_cache(provider, model, provider_key, hash,"
                " embedding, dims, updated_at) values (?,?,?,?,?,?,?)",
                [
                    (provider, model, provider_key, h, vector_blob(v), int(v.shape[0]), now)
                    for h, v in items.items()
                ],
            )

    def cache_prune(self, max_entries: int) -> int:
        count = int(self.db.scalar("select count(*) from embedding_cache") or 0)
        excess = count - max_entries
        if excess <= 0:
            return 0
        self.db.execute(
            "delete from embedding_cache where rowid in (select rowid from embedding_cache"
            " order by updated_at asc limit ?)",
            (excess,),
        )
        return excess

    def copy_cache_from(self, other_path: Path, *, chunk_vectors: bool = True) -> int:
        """Seed this store's cache (and unit vectors) from another index file (used by
        a full reindex); returns the cache entries copied. ``chunk_vectors=False`` (a
        rebuild whose chunk vectors are pooled from unit vectors,
        ``engine.index.pooled_chunks``) leaves out the vectors of the old file's text
        chunks: nothing in the new index reads them."""
        if not Path(other_path).exists():
            return 0
        skip = (
            ""
            if chunk_vectors
            else " and hash not in (select hash from old.chunks where hash not like 'media:%')"
        )
        try:
            with self.db.attached(other_path, "old") as db:
                try:  # references resolved against the old file's chunks
                    db.execute(
                        "insert or ignore into embedding_cache select provider, model,"
                        " provider_key, hash, vector, dims, updated_at from (select"
                        " e.provider, e.model, e.provider_key, e.hash, case when"
                        " length(e.embedding) > 0 then e.embedding else (select c.embedding"
                        " from old.chunks c where c.hash = e.hash and c.embedding is not null"
                        " limit 1) end as vector, e.dims, e.updated_at"
                        f" from old.embedding_cache e) where vector is not null{skip}"
                    )
                except DatabaseError:  # damaged chunks (a salvage): the entries with a copy
                    db.execute(
                        "insert or ignore into embedding_cache select * from old.embedding_cache"
                        " where length(embedding) > 0"
                    )
                copied = int(db.scalar("select changes()") or 0)
                # unit vectors live only in their matrices: a rebuild keeps them too
                with contextlib.suppress(DatabaseError):
                    db.execute("insert or ignore into line_vectors select * from old.line_vectors")
        except DatabaseError:
            return 0
        return copied - self._drop_unsound_cache()

    def _drop_unsound_cache(self) -> int:
        """Delete cached vectors with damaged bytes (not finite, or all zero): what a
        rebuild salvages must not carry the damage into the new index."""
        bad = [
            (rowid,)
            for rowid, blob in self.db.execute(
                "select rowid, embedding from embedding_cache where length(embedding) > 0"
            )
            if not sound_vector(np.frombuffer(blob, dtype=np.float32))
        ]
        if bad:
            self.db.executemany("delete from embedding_cache where rowid = ?", bad)
        return len(bad)
