"""The index store's interface: what the indexer, the search and the engine may ask of it.

Two stores implement it: :class:`engine.index.store.Store` (one SQLite file with
FTS5 and sqlite-vec, the default) and :class:`engine.index.pg_store.PgStore`
(one namespace of a shared PostgreSQL database with pgvector). Code above the
index layer types its store as :class:`IndexStore` and never speaks SQL: every
statement lives in the store modules of ``engine.index``.

How the engine opens, locks and rebuilds each store is the other half of the
contract: :class:`engine.index.backends.StoreBackend`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import numpy as np

    from engine.index.db import VecStatus
    from engine.index.keyword_index import KeywordIndex, RowTerms
    from engine.index.line_codec import LineMatrix
    from engine.index.recall_log import RecallLog
    from engine.index.store import ChunkRow, FileRecord, NewChunk
    from engine.index.vector_matrix import ReadVectors


@dataclass(frozen=True)
class StoreInfo:
    """What ``memdeck status`` says about the store."""

    #: the index file, or the PostgreSQL DSN (password masked) and namespace
    location: str
    #: the driver: "apsw 3.46…", "psycopg 3.2…"
    binding: str
    #: "SQLite 3.46.0", "PostgreSQL 18.3"
    version: str
    #: the SQLite library's version (None on PostgreSQL)
    sqlite_version: str | None
    #: the keyword side
    fts: Literal["fts5", "tsvector", "unavailable"]
    #: the vector side
    vector: Literal["sqlite-vec", "numpy", "pgvector"]


class IndexStore(Protocol):
    """The operations both stores offer (see the module docstring)."""

    backend: Literal["sqlite", "postgres"]
    #: opened read-only (a snapshot of a file that cannot be written now)
    snapshot: bool
    fts_available: bool
    fts_tokenizer: str
    vec: VecStatus
    #: who searched what (the recall log), kept beside the index
    recall: RecallLog
    #: build the sqlite-vec table at the end of a sync even below the numpy budget
    #: (an engine searching through sqlite-vec sets it; PostgreSQL ignores it)
    vec_requested: bool

    # -- meta
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def fingerprint(self) -> dict[str, Any] | None: ...
    def set_fingerprint(self, fp: dict[str, Any]) -> None: ...
    def set_dims(self, dims: int) -> None: ...
    @property
    def dims(self) -> int | None: ...

    # -- files and chunks
    def files(self, paths: Collection[str] | None = None) -> dict[str, FileRecord]: ...
    def replace_file(
        self,
        *,
        path: str,
        source: str,
        file_hash: str,
        mtime: float,
        size: int,
        model: str,
        chunks: Sequence[NewChunk],
        error: str | None = None,
    ) -> None: ...
    def replace_file_meta(self, path: str, mtime: float, size: int) -> None: ...
    def remove_files(self, paths: Iterable[str]) -> int: ...
    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]: ...
    def file_mtimes(self, paths: Sequence[str]) -> dict[str, float]: ...
    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]: ...
    def chunk_hashes(self, ids: Sequence[int]) -> dict[int, str]: ...
    def counts(self) -> dict[str, int]: ...
    def embedded_count(self) -> int:
        """Chunks that hold a vector (a search without any is keyword-only)."""
        ...

    # -- line vectors
    def line_vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]: ...
    def chunks_without_line_vectors(
        self, model: str, *, after: str = "", limit: int | None = None
    ) -> list[tuple[str, str]]:
        """(hash, text) of the text chunks whose unit vectors are not stored yet, by
        hash: those past ``after``, at most ``limit`` (a page of a large sync)."""
        ...

    def count_chunks_without_line_vectors(self, model: str) -> int: ...
    def put_line_vectors(self, model: str, vectors: dict[str, LineMatrix]) -> None: ...
    def orphan_line_units(self, model: str, paths: Collection[str] = ()) -> dict[int, np.ndarray]:
        """unit key → vector from the matrices of chunks gone from the index, and of
        the chunks of ``paths`` (files about to be indexed again)."""
        ...

    def prune_line_vectors(self) -> int: ...

    # -- embedding cache
    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Sequence[str]
    ) -> dict[str, np.ndarray]: ...
    def cache_put(
        self, provider: str, model: str, provider_key: str, items: dict[str, np.ndarray]
    ) -> None: ...
    def cache_share_with_chunks(self) -> int: ...
    def cache_prune(self, max_entries: int) -> int: ...
    def copy_cache_from(self, other_path: Path, *, chunk_vectors: bool = True) -> int: ...
    def recode_line_vectors(self) -> int: ...

    # -- keyword side
    def keyword_index(self) -> KeywordIndex | None: ...
    def defer_keyword_index(self) -> None: ...
    def maintain_keyword_index(self) -> None: ...
    def release_free_pages(self) -> int: ...
    def keyword_search(
        self, words: Sequence[str], limit: int, sources: Sequence[str], *, require_all: bool = True
    ) -> list[tuple[int, float]] | None: ...
    def can_rank_rows(self) -> bool: ...
    def fts_ranks_of(
        self, words: Sequence[str], ids: Sequence[int], *, require_all: bool
    ) -> dict[int, float] | None: ...
    def term_frequencies(self, words: Sequence[str], ids: Sequence[int]) -> RowTerms | None:
        """bm25's tf of each word in each of ``ids`` and their lengths in terms, where
        the store keeps them per row; None: count them from the rows' text."""
        ...

    def fts_search(
        self, match: str, limit: int, sources: Sequence[str]
    ) -> list[tuple[int, float]]: ...
    def fts_row_count(self) -> int: ...
    def term_doc_counts(self, terms: Sequence[str]) -> dict[str, int]: ...

    # -- vector side
    def vector_search(
        self,
        query: np.ndarray,
        limit: int,
        sources: Sequence[str],
        *,
        path: str = "auto",
        read_vectors: ReadVectors | None = None,
    ) -> list[tuple[int, float]]: ...
    def maintain_vec_table(self) -> None: ...
    def rebuild_vec_table(self) -> None: ...
    def vec_table_consistent(self, *, deep: bool = True) -> bool: ...

    # -- checks and description
    def quick_check(self) -> str:
        """A cheap check of the stored pages/rows: "ok", or what is damaged."""
        ...

    def integrity_check(self) -> str:
        """The thorough check: "ok", or every finding."""
        ...

    def check(self, level: Literal["open", "index", "thorough"] = "open") -> tuple[str, ...]:
        """The index checked at ``level`` (see ``Store.check``): one line per finding."""
        ...

    def release_space(self) -> None:
        """Give back space a failed write left behind (SQLite's write-ahead log)."""
        ...

    def info(self) -> StoreInfo: ...
    def close(self) -> None: ...
