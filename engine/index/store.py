"""The index database: files, chunks, FTS5, sqlite-vec and the embedding cache.

One SQLite file per agent. Vectors are always stored as float32 blobs in
``chunks.embedding`` (the source of truth for the numpy path and for rebuilding
the ``vec0`` table); ``chunks_vec`` is an accelerator that exists only when
sqlite-vec loaded and the dimension is known.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from engine.index import chunk_vector_codec, keyword_index
from engine.index.db import Database, DatabaseError, VecStatus, snapshot_uri
from engine.index.embedding_cache import EmbeddingCacheTable, vector_blob
from engine.index.fts_bm25 import Phrase, bm25_rank, read_varint
from engine.index.index_store import StoreInfo
from engine.index.keyword_index import KeywordIndex, RowTerms
from engine.index.line_vector_table import LineVectorTable
from engine.index.recall_log import RecallLog, SqliteRecallLog
from engine.index.store_checks import IndexChecks
from engine.index.vector_matrix import ReadVectors, VectorMatrix, matrix_bytes

SCHEMA_VERSION = 1
#: the ``auto`` vector path keeps vectors in a numpy matrix up to this size (bytes)
NUMPY_BUDGET_BYTES = 256 * 2**20
#: ``store.fts.tokenizer`` → FTS5's ``tokenize=`` argument. ``porter`` is memdeck's
#: stemming extension: FTS5's porter stemmer over unicode61's words, so "visited",
#: "visits" and "visiting" are one term (English only; other words pass unchanged).
FTS5_TOKENIZE = {"unicode61": "unicode61", "trigram": "trigram", "porter": "porter unicode61"}


_TOKENIZE_ARG = re.compile(r"""tokenize\s*=\s*['"]?\s*(\w+)""", re.IGNORECASE)


def table_tokenizer(create_sql: str) -> str:
    """The ``store.fts.tokenizer`` name of an FTS5 table, from its CREATE statement.

    A table created without ``tokenize=`` uses FTS5's default, unicode61.
    """
    found = _TOKENIZE_ARG.search(create_sql)
    first = found.group(1).lower() if found else "unicode61"
    return first if first in ("porter", "trigram") else "unicode61"


#: page size of a new index file for a large memory. A chunk row (text, the 1.5 KB
#: float32 vector of 384 dims, path, hash: ~2.8 KB) fills a 4 KB page by itself; 16 KB
#: pages pack ~5 (100k chunks: 492 → ~417 MB after VACUUM). Existing files keep theirs
#: until a full reindex (``sqlite_files``' swap).
PAGE_SIZE = 16384
#: ... and for a small one: each of the ~25 tables and indexes takes a page at least,
#: which at 16 KB was a quarter of a 100 KB chat log's index (LoCoMo conv-5)
SMALL_PAGE_SIZE = 4096
#: Markdown below this size gets ``SMALL_PAGE_SIZE`` (about 7,000 chunks)
SMALL_MEMORY_BYTES = 8 * 2**20
#: ... and for a memory under ``TINY_MEMORY_BYTES``: a chunk row (~2.8 KB) or a
#: chunk's unit matrix (~3.4 KB) fills most of a 4 KB page by itself and leaves the
#: rest empty; in 1 KB pages the part past the first page goes to overflow pages filled
#: to the byte. LoCoMo conv-5 (106 KB): 1,167,360 → 932,864 bytes, its searches as
#: fast (a file this size is read from the page cache either way)
TINY_PAGE_SIZE = 1024
#: Markdown below this size gets ``TINY_PAGE_SIZE`` (about 900 chunks)
TINY_MEMORY_BYTES = 2**20


def page_size_for(markdown_bytes: int) -> int:
    """The page size of a new index for a memory of ``markdown_bytes``."""
    if markdown_bytes < TINY_MEMORY_BYTES:
        return TINY_PAGE_SIZE
    return SMALL_PAGE_SIZE if markdown_bytes < SMALL_MEMORY_BYTES else PAGE_SIZE


_SCHEMA = (
    """
create table if not exists meta (key text primary key, value text not null);
create table if not exists files (
    path text primary key, source text not null, hash text not null,
    mtime real not null, size integer not null, chunks integer not null default 0,
    error text, indexed_at real not null
);
create table if not exists chunks (
    id integer primary key, path text not null, source text not null,
    start_line integer not null, end_line integer not null, hash text not null,
    model text not null, text text not null, embedding blob, updated_at real not null
);
create index if not exists chunks_path on chunks(path);
create index if not exists chunks_embedded on chunks(id) where embedding is not null;
create table if not exists embedding_cache (
    provider text not null, model text not null, provider_key text not null,
    hash text not null, embedding blob not null, dims integer not null,
    updated_at real not null,
    primary key (provider, model, provider_key, hash)
);
create index if not exists embedding_cache_age on embedding_cache(updated_at);
create index if not exists embedding_cache_hash on embedding_cache(hash);
create index if not exists chunks_hash on chunks(hash);
create table if not exists line_vectors (
    chunk_hash text not null, model text not null, dims integer not null,
    lines integer not null, vectors blob not null,
    primary key (chunk_hash, model)
);
"""
    + keyword_index.SCHEMA
)


@dataclass(frozen=True, slots=True)
class ChunkRow:
    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True, slots=True)
class NewChunk:
    start_line: int
    end_line: int
    hash: str
    text: str
    embedding: np.ndarray | None
    #: the vector is memdeck's own (pooled from unit vectors), not the model's: SQLite
    #: keeps it in 8 bits (``chunk_vector_codec``); PostgreSQL stores every vector alike
    pooled: bool = False


@dataclass(frozen=True, slots=True)
class FileRecord:
    path: str
    source: str
    hash: str
    mtime: float
    size: int
    chunks: int
    error: str | None


class Store(EmbeddingCacheTable, LineVectorTable, IndexChecks):
    """Typed operations on one index file. Thread-safe through ``Database``'s lock."""

    #: which store this is (``pg_store.PgStore`` is the other)
    backend: Literal["sqlite", "postgres"] = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        vector_enabled: bool = True,
        extension_path: str | None = None,
        fts_tokenizer: str = "unicode61",
        binding: str | None = None,
        snapshot: bool = False,
        page_size: int = PAGE_SIZE,
    ):
        """``snapshot`` opens an existing index read-only without writing a byte
        (``db.snapshot_uri``): search, get and status on a full disk or a read-only
        state dir. Nothing may be written through such a store. ``page_size`` is
        used when the file is new (:func:`page_size_for`)."""
        self.path = Path(path)
        self.snapshot = snapshot
        if not snapshot:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = Database(snapshot_uri(self.path) if snapshot else self.path, binding=binding)
        #: who searched what, kept in this file beside the index
        self.recall: RecallLog = SqliteRecallLog(self.db)
        self.fts_tokenizer = fts_tokenizer
        self.fts_external = False
        #: build ``chunks_vec`` at the end of a sync even below the numpy budget (set
        #: by an engine whose vector path is sqlite-vec)
        self.vec_requested = False
        self._page_size = page_size
        if not snapshot:
            self._set_up()
        self.vec: VecStatus = (
            self.db.load_sqlite_vec(extension_path)
            if vector_enabled
            else VecStatus(False, reason="disabled by store.vector.enabled=false")
        )
        self.fts_available = self._ensure_fts()
        self._vec_dims: int | None = None
        self._matrix_cache: VectorMatrix | None = None
        self._generation = 0
        self._other_sources_cache: tuple[tuple[int, int], bool] | None = None
        self._embedded_cache: tuple[tuple[int, int], int] | None = None
        self._fts_rows_cache: tuple[tuple[int, int], int] | None = None
        self._df_cache: dict[str, tuple[int, int]] = {}
        self._bm25_cache: (
            tuple[tuple[int, int], Any, tuple[int, int], dict[tuple[str, ...], int]] | None
        ) = None
        self._kw_tokenize: keyword_index.Tokenize | None = None
        self._kw: KeywordIndex | None = None
        dims = self.get_meta("dims")
        if dims:
            self._ensure_vec_table(int(dims))

    def _set_up(self) -> None:
        """WAL mode and the schema (writes; skipped by a snapshot store)."""
        try:
            if not int(self.db.scalar("pragma page_count") or 0):  # a new file
                self.db.execute(f"pragma page_size={int(self._page_size)}")
                # free pages can be handed back to the file system after a sync
                # (``release_free_pages``); only settable before the first table
                self.db.execute("pragma auto_vacuum=incremental")
            self.db.execute("pragma journal_mode=wal")
            self.db.execute("pragma synchronous=normal")
            self.db.execute("pragma foreign_keys=off")
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    self.db.execute(stmt)
            self.db.execute(
                "insert or ignore into meta(key, value) values ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except DatabaseError:
            self.db.close()
            raise

    # -- meta -----------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        value = self.db.scalar("select value from meta where key = ?", (key,))
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "insert into meta(key, value) values (?, ?) "
            "on conflict(key) do update set value = excluded.value",
            (key, value),
        )

    def fingerprint(self) -> dict[str, Any] | None:
        raw = self.get_meta("fingerprint")
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def set_fingerprint(self, fp: dict[str, Any]) -> None:
        self.set_meta("fingerprint", json.dumps(fp, sort_keys=True))

    # -- FTS / vec tables -----------------------------------------------------
    def _ensure_fts(self) -> bool:
        """Create the FTS5 table: an external-content one reading ``chunks.text``.

        Indexes made before it (their ``chunks_fts`` keeps its own copy of every
        chunk's text: 177 of 429 MB at 100k chunks) open and work as they are
        (``fts_external`` says which layout this file has); the next full reindex
        writes the new layout.
        """
        tokenizer = FTS5_TOKENIZE.get(self.fts_tokenizer, "unicode61")
        try:
            self.db.execute(
                f"create virtual table if not exists chunks_fts using fts5("
                f"text, tokenize='{tokenizer}', content='chunks', content_rowid='id')"
            )
            sql = str(self.db.scalar("select sql from sqlite_master where name = 'chunks_fts'"))
            self.fts_external = "content=" in sql.replace(" ", "")
            # The table's own tokenizer wins over the configured one: until the full
            # reindex a changed ``store.fts.tokenizer`` triggers (it is part of the
            # fingerprint), queries must be tokenized the way the rows were.
            self.fts_tokenizer = table_tokenizer(sql)
            return True
        except DatabaseError:
            return False

    def _vec_table_exists(self) -> bool:
        return bool(self.db.scalar("select 1 from sqlite_master where name = 'chunks_vec'"))

    def _ensure_vec_table(self, dims: int, *, create: bool = False) -> None:
        """Keep ``chunks_vec`` (sqlite-vec) matching ``dims``; build it only when asked.

        The table is a second copy of every vector, so it exists only once the
        index outgrows the numpy path (``maintain_vec_table``) or a search asks
        for sqlite-vec; an older index that has one keeps it in step.
        """
        self._vec_dims = dims
        if not self.vec.loaded:
            return
        existing = self.db.scalar("select sql from sqlite_master where name = 'chunks_vec'")
        wanted = f"float[{dims}]"
        if existing and wanted not in existing:
            self.db.execute("drop table chunks_vec")
            existing = None
            create = True
        if not existing and create:
            with self.db.transaction():
                self._create_vec_table(dims)

    def _create_vec_table(self, dims: int) -> None:
        """``chunks_vec`` filled from ``chunks.embedding`` (the caller's transaction)."""
        self.db.execute(
            "create virtual table chunks_vec using vec0("
            f"embedding float[{dims}] distance_metric=cosine)"
        )
        # one statement: the vectors go from table to table inside SQLite (reading
        # them into Python first held every vector twice, ~300 MB at 100k chunks)
        self.db.execute(
            "insert into chunks_vec(rowid, embedding) select id, embedding from chunks"
            " where embedding is not null and length(embedding) = ?",
            (dims * 4,),
        )
        # compact (pooled) vectors are decoded to float32 a page at a time
        after = 0
        while True:
            page = list(
                self.db.execute(
                    "select id, embedding from chunks where id > ? and embedding is not null"
                    " and length(embedding) = ? order by id limit 2048",
                    (after, chunk_vector_codec.compact_size(dims)),
                )
            )
            if not page:
                break
            _, rows = chunk_vector_codec.decode_rows([b for _, b in page], dims)  # all fit
            self.db.executemany(
                "insert into chunks_vec(rowid, embedding) values (?, ?)",
                [(cid, row.tobytes()) for cid, row in zip((c for c, _ in page), rows, strict=True)],
            )
            after = int(page[-1][0])

    def maintain_vec_table(self) -> None:
        """Build ``chunks_vec`` once the vectors outgrow the numpy path's budget or
        ``vec_requested`` (called after a sync, under the writer lock, so no search
        pays for it)."""
        dims = self._vec_dims
        if (
            self.vec.loaded
            and dims
            and not self._vec_table_exists()
            and (self.vec_requested or self._outgrows_numpy(dims))
        ):
            self._ensure_vec_table(dims, create=True)

    def rebuild_vec_table(self) -> None:
        """Recreate sqlite-vec's table from ``chunks.embedding``, the canonical copy of
        every vector: a damaged ``chunks_vec`` (an error reading its blobs, rows
        missing after an unclean shutdown) costs one table rebuild, not a re-embed."""
        dims = self._vec_dims or int(self.get_meta("dims") or 0)
        if not self.vec.loaded or not dims:
            return
        with self.db.transaction():
            self.db.execute("drop table if exists chunks_vec")
            self._create_vec_table(dims)
        self._vec_dims = dims
        self._generation += 1

    def vec_table_consistent(self, *, deep: bool = True) -> bool:
        """Check: sqlite-vec holds one row per embedded chunk and its rows read.
        (Two counts and one ``k = 1`` query; run at sync time and after a vec error.)

        ``deep=False`` skips the ``k = 1`` query, which reads every vector (~0.3 s
        at 10k chunks on a loaded machine): the sync of a file the watcher reported
        checks the counts only; listing syncs and vec errors still check deeply."""
        if not self.vec.loaded or not self._vec_dims or not self._vec_table_exists():
            return True  # no table yet (built past the numpy budget): nothing to disagree
        try:
            have = int(self.db.scalar("select count(*) from chunks_vec_rowids") or 0)
            if have != self.embedded_count():
                return False
            if have and deep:
                probe = np.zeros(self._vec_dims, dtype=np.float32)
                probe[0] = 1.0
                self.db.execute(
                    "select rowid from chunks_vec where embedding match ? and k = 1",
                    (probe.tobytes(),),
                )
        except DatabaseError:
            return False
        return True

    def set_dims(self, dims: int) -> None:
        if self.get_meta("dims") != str(dims):
            self.set_meta("dims", str(dims))
        if self._vec_dims != dims:
            self._ensure_vec_table(dims)

    @property
    def dims(self) -> int | None:
        d = self.get_meta("dims")
        return int(d) if d else None

    # -- files and chunks -------------------------------------------------------
    def files(self, paths: Collection[str] | None = None) -> dict[str, FileRecord]:
        """Every indexed file, or only those among ``paths`` (an incremental sync)."""
        sql = "select path, source, hash, mtime, size, chunks, error from files"
        if paths is None:
            return {r[0]: FileRecord(*r) for r in self.db.execute(sql)}
        out: dict[str, FileRecord] = {}
        wanted = list(paths)
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            for r in self.db.execute(f"{sql} where path in ({marks})", part):
                out[r[0]] = FileRecord(*r)
        return out

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
    ) -> None:
        """Swap all rows of one file in one transaction (readers see old or new)."""
        now = time.time()
        with self.db.transaction():
            removed = self._delete_chunks(path)
            added: list[tuple[int, str]] = []
            with_vec = self.vec.loaded and bool(self._vec_dims) and self._vec_table_exists()
            for ch in chunks:
                emb = (
                    None
                    if ch.embedding is None
                    else chunk_vector_codec.encode(ch.embedding, compact=ch.pooled)
                )
                self.db.execute(
                    "insert into chunks(path, source, start_line, end_line, hash, model, text,"
                    " embedding, updated_at) values (?,?,?,?,?,?,?,?,?)",
                    (path, source, ch.start_line, ch.end_line, ch.hash, model, ch.text, emb, now),
                )
                cid = self.db.scalar("select last_insert_rowid()")
                added.append((int(cid), ch.text))
                if self.fts_available:
                    self.db.execute(
                        "insert into chunks_fts(rowid, text) values (?, ?)", (cid, ch.text)
                    )
                if emb is not None and with_vec:
                    self.db.execute(
                        "insert into chunks_vec(rowid, embedding) values (?, ?)",
                        (cid, vector_blob(ch.embedding)),  # sqlite-vec reads float32
                    )
            self.db.execute(
                "insert into files(path, source, hash, mtime, size, chunks, error, indexed_at)"
                " values (?,?,?,?,?,?,?,?) on conflict(path) do update set source=excluded.source,"
                " hash=excluded.hash, mtime=excluded.mtime, size=excluded.size,"
                " chunks=excluded.chunks, error=excluded.error, indexed_at=excluded.indexed_at",
                (path, source, file_hash, mtime, size, len(chunks), error, now),
            )
            self._keyword_index_follow(removed, added)
        self._generation += 1

    def replace_file_meta(self, path: str, mtime: float, size: int) -> None:
        """Record a new mtime/size for a file whose content hash did not change."""
        self.db.execute("update files set mtime = ?, size = ? where path = ?", (mtime, size, path))

    def remove_files(self, paths: Iterable[str]) -> int:
        n = 0
        with self.db.transaction():
            removed: list[tuple[int, str]] = []
            for path in paths:
                removed += self._delete_chunks(path)
                self.db.execute("delete from files where path = ?", (path,))
                n += 1
            self._keyword_index_follow(removed, [])
        self._generation += 1
        return n

    def _delete_chunks(self, path: str) -> list[tuple[int, str]]:
        """Delete one file's chunks; returns their (id, text)."""
        rows = self.db.execute("select id, text from chunks where path = ?", (path,))
        ids = [r[0] for r in rows]
        if not ids:
            return []
        if self.fts_available and self.fts_external:
            # an external-content table forgets a row by being told its old text
            self.db.executemany(
                "insert into chunks_fts(chunks_fts, rowid, text) values ('delete', ?, ?)", rows
            )
        elif self.fts_available:
            self.db.executemany("delete from chunks_fts where rowid = ?", [(i,) for i in ids])
        if self.vec.loaded and self._vec_dims and self._vec_table_exists():
            self.db.executemany("delete from chunks_vec where rowid = ?", [(i,) for i in ids])
        # cache entries that point at these vectors get their own copy back first
        self.db.execute(
            "update embedding_cache set embedding = (select c.embedding from chunks c"
            " where c.hash = embedding_cache.hash and c.embedding is not null limit 1)"
            " where length(embedding) = 0 and hash in (select hash from chunks"
            " where path = ? and embedding is not null)",
            (path,),
        )
        self.db.execute("delete from chunks where path = ?", (path,))
        return [(int(r[0]), str(r[1])) for r in rows]

    # -- the keyword side's postings (engine.index.keyword_index) ---------------------
    def _kw_tokenizer(self) -> keyword_index.Tokenize | None:
        if not self.can_rank_rows():
            return None
        if self._kw_tokenize is None:
            name, *args = FTS5_TOKENIZE[self.fts_tokenizer].split()
            self._kw_tokenize = self.db.fts5_tokenizer(name, args)
        return self._kw_tokenize

    def keyword_index(self) -> KeywordIndex | None:
        """The postings beside FTS5 when this store can read and write them (apsw,
        unicode61 or porter, tokenized as the table is); whether they are in step is
        ``KeywordIndex.ready``."""
        if self._kw is None:
            tokenize = self._kw_tokenizer()
            if tokenize is None:
                return None
            self._kw = KeywordIndex(self.db, tokenize)
        return self._kw

    def _ready_keyword_index(self) -> tuple[KeywordIndex, tuple[int, int]] | None:
        """The postings, when in step, and the state they are read at."""
        kw = self.keyword_index()
        if kw is None:
            return None
        state = self._state_key()
        return (kw, state) if kw.ready(state) else None

    def _term_rows(self, tokens: tuple[str, ...], word: str) -> int:
        """Rows holding the phrase ``tokens`` (bm25's n), the tokens of ``word``: from
        the postings for one token when they are in step, else FTS5's count of the
        quoted word (tokenized by FTS5 as the search's MATCH is: a stemmer's output
        need not stem to itself again)."""
        ready = self._ready_keyword_index() if len(tokens) == 1 else None
        if ready is not None:
            return ready[0].rows_with(tokens[0], ready[1])
        match = '"' + word.replace('"', '""') + '"'
        return int(
            self.db.scalar("select count(*) from chunks_fts where chunks_fts match ?", (match,))
            or 0
        )

    def _keyword_index_follow(
        self, removed: list[tuple[int, str]], added: list[tuple[int, str]]
    ) -> None:
        """Keep the postings in step with a write (the caller's transaction); a store
        that cannot (another binding or tokenizer) marks them stale instead."""
        if not (removed or added):
            return
        if not keyword_index.in_step(self.db):
            return
        kw = self.keyword_index()
        if kw is None:
            self.db.execute("update meta set value = '' where key = ?", (keyword_index.META_KEY,))
            return
        kw.follow(removed, added)

    def defer_keyword_index(self) -> None:
        """Stop following writes (a large sync): ``maintain_keyword_index`` rebuilds."""
        kw = self.keyword_index()
        if kw is not None and kw.ready():
            kw.mark_stale()

    def release_free_pages(self) -> int:
        """After a sync (writer lock held): give the pages no table uses any more back
        to the file system, so the file is the size of what it holds (a first sync
        frees the embedding cache's copies of the chunks' vectors, an edit its old
        chunks). A file made before ``auto_vacuum`` was set keeps them, to be reused
        by later writes. Returns the pages released."""
        if self.snapshot:
            return 0
        free = int(self.db.scalar("pragma freelist_count") or 0)
        if not free or int(self.db.scalar("pragma auto_vacuum") or 0) != 2:
            return 0
        self.db.execute("pragma incremental_vacuum")
        return free - int(self.db.scalar("pragma freelist_count") or 0)

    def maintain_keyword_index(self) -> None:
        """After a sync (writer lock held): rebuild stale postings, or fold a grown
        pending list into them."""
        kw = self.keyword_index()
        if kw is None or self.snapshot:
            return
        if not kw.ready():
            kw.rebuild()
        else:
            kw.compact()

    def keyword_search(
        self, words: Sequence[str], limit: int, sources: Sequence[str], *, require_all: bool = True
    ) -> list[tuple[int, float]] | None:
        """``fts_search`` of the AND (OR) of ``words`` from the postings: the same
        (id, rank) list without FTS5 ranking every match. None when this path
        cannot answer (postings not in step, other sources, a word FTS5 splits):
        use ``fts_search``."""
        ready = self._ready_keyword_index()
        if ready is None or not self._only_memory(sources):
            return None
        kw, state = ready
        return kw.top_k(words, limit, require_all=require_all, state=state).hits

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        if not ids:
            return {}
        out: dict[int, ChunkRow] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for r in self.db.execute(
                "select id, path, source, start_line, end_line, text from chunks"
                f" where id in ({marks})",
                part,
            ):
                out[r[0]] = ChunkRow(*r)
        return out

    def file_mtimes(self, paths: Sequence[str]) -> dict[str, float]:
        if not paths:
            return {}
        marks = ",".join("?" * len(paths))
        return {
            r[0]: float(r[1])
            for r in self.db.execute(
                f"select path, mtime from files where path in ({marks})", list(paths)
            )
        }

    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        if not ids:
            return {}
        dims = self.dims
        if not dims:
            return {}
        marks = ",".join("?" * len(ids))
        rows = [
            (int(cid), blob)
            for cid, blob in self.db.execute(
                f"select id, embedding from chunks where id in ({marks})", list(ids)
            )
            if blob is not None
        ]
        ok, vecs = chunk_vector_codec.decode_rows([blob for _, blob in rows], dims)
        kept = [cid for (cid, _), fits in zip(rows, ok, strict=True) if fits]
        finite = np.isfinite(vecs).all(axis=1)  # damaged bytes are never ranked
        return {cid: vecs[i] for i, cid in enumerate(kept) if finite[i]}

    # -- line vectors (memdeck extension: one vector per line of a chunk) ----------
    def chunk_hashes(self, ids: Sequence[int]) -> dict[int, str]:
        """Content hash of each chunk (the key of its line vectors)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {
            int(r[0]): str(r[1])
            for r in self.db.execute(
                f"select id, hash from chunks where id in ({marks})", list(ids)
            )
        }

    def counts(self) -> dict[str, int]:
        return {
            "files": int(self.db.scalar("select count(*) from files") or 0),
            "chunks": int(self.db.scalar("select count(*) from chunks") or 0),
            "embedded": int(
                self.db.scalar("select count(*) from chunks where embedding is not null") or 0
            ),
            "cache_entries": int(self.db.scalar("select count(*) from embedding_cache") or 0),
        }

    # -- embedding cache --------------------------------------------------------
    # -- retrieval --------------------------------------------------------------
    def fts_search(self, match: str, limit: int, sources: Sequence[str]) -> list[tuple[int, float]]:
        """(chunk id, bm25 rank) best first; rank is FTS5's (negative, smaller is better)."""
        if not self.fts_available:
            return []
        if self._only_memory(sources):
            # No join: FTS5 ranks and cuts by itself, which at 100k chunks is several
            # times faster than looking every match up in ``chunks`` to filter by source.
            sql = (
                "select rowid, bm25(chunks_fts) as rank from chunks_fts"
                " where chunks_fts match ? order by rank limit ?"
            )
            params: list[object] = [match, limit]
        else:
            marks = ",".join("?" * len(sources))
            sql = (
                "select f.rowid, bm25(chunks_fts) as rank from chunks_fts f"
                " join chunks c on c.id = f.rowid"
                f" where chunks_fts match ? and c.source in ({marks})"
                " order by rank limit ?"
            )
            params = [match, *sources, limit]
        return [(int(r[0]), float(r[1])) for r in self.db.execute(sql, params)]

    def can_rank_rows(self) -> bool:
        """Whether ``fts_ranks_of`` works here (apsw, the unicode61 tokenizer, FTS5)."""
        return (
            self.fts_available
            and self.fts_tokenizer in ("unicode61", "porter")
            and self.db.binding.startswith("apsw")
        )

    def term_frequencies(self, words: Sequence[str], ids: Sequence[int]) -> RowTerms | None:
        """From the keyword postings when they are in step (``KeywordIndex.frequencies``)."""
        ready = self._ready_keyword_index()
        return None if ready is None else ready[0].frequencies(words, ids, state=ready[1])

    def fts_ranks_of(
        self, words: Sequence[str], ids: Sequence[int], *, require_all: bool
    ) -> dict[int, float] | None:
        """FTS5's bm25 rank, under the MATCH of the quoted ``words`` (AND when
        ``require_all``, else OR), of each of ``ids`` that the query matches.

        The same doubles ``fts_search`` returns for those rows, without ranking
        every match (see ``engine.index.fts_bm25``). None when this store cannot
        compute them (another binding or tokenizer, no FTS5): use ``fts_search``.
        """
        if not self.can_rank_rows():
            return None
        ready = self._ready_keyword_index()
        if ready is not None:
            got = ready[0].ranks_of(words, ids, require_all=require_all, state=ready[1])
            if got is not None:
                return got
        key = self._state_key()
        if self._bm25_cache is None or self._bm25_cache[0] != key:
            name, *args = FTS5_TOKENIZE[self.fts_tokenizer].split()
            tokenize = self.db.fts5_tokenizer(name, args)
            if tokenize is None:
                return None
            totals = self._fts_totals()
            if totals is None:
                return None
            self._bm25_cache = (key, tokenize, totals, {})
        _, tokenize, (rows, total_tokens), hits = self._bm25_cache
        phrases: list[Phrase] = []
        for word in words:
            tokens = tuple(tokenize(word, True))
            if not tokens:
                return None
            if tokens not in hits:
                hits[tokens] = self._term_rows(tokens, word)
            phrases.append(Phrase(tokens, hits[tokens]))
        if not phrases or rows <= 0 or not ids:
            return {}
        out: dict[int, float] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            sizes = {
                int(r[0]): read_varint(r[1])[0]
                for r in self.db.execute(
                    f"select id, sz from chunks_fts_docsize where id in ({marks})", part
                )
            }
            for cid, text in self.db.execute(
                f"select id, text from chunks where id in ({marks})", part
            ):
                if cid not in sizes:
                    continue
                rank, freqs = bm25_rank(
                    phrases, tokenize(text, False), sizes[cid], rows, total_tokens
                )
                if all(freqs) if require_all else any(freqs):
                    out[int(cid)] = rank
        return out

    def _fts_totals(self) -> tuple[int, int] | None:
        """(rows, tokens) from FTS5's ``averages`` record (what its bm25 divides by)."""
        return keyword_index.totals(self.db)

    def fts_row_count(self) -> int:
        """Rows in the FTS table (all sources: bm25's N), cached until the next write."""
        key = self._state_key()
        if self._fts_rows_cache is None or self._fts_rows_cache[0] != key:
            n = int(self.db.scalar("select count(*) from chunks") or 0) if self.fts_available else 0
            self._fts_rows_cache = (key, n)
        return self._fts_rows_cache[1]

    def term_doc_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each query term (as FTS5 tokenizes it).

        Cached per term; an entry is reused until the index grows or shrinks by
        more than 5 %, which is precise enough for the only use: spotting terms
        that occur in at least half the chunks (see ``engine.search.retrieve.QueryTerms``).
        """
        total = self.fts_row_count()
        out: dict[str, int] = {}
        for term in terms:
            cached = self._df_cache.get(term)
            if cached is not None and abs(cached[0] - total) <= 0.05 * max(total, 1):
                out[term] = cached[1]
                continue
            phrase = '"' + term.replace('"', '""') + '"'
            tokenize = self._kw_tokenizer()
            try:
                if tokenize is not None:
                    toks = tuple(tokenize(term, True))
                    n = self._term_rows(toks, term) if toks else 0
                else:
                    n = int(
                        self.db.scalar(
                            "select count(*) from chunks_fts where chunks_fts match ?", (phrase,)
                        )
                        or 0
                    )
            except DatabaseError:
                n = 0
            if len(self._df_cache) > 50_000:
                self._df_cache.clear()
            self._df_cache[term] = (total, n)
            out[term] = n
        return out

    def vector_search(
        self,
        query: np.ndarray,
        limit: int,
        sources: Sequence[str],
        *,
        path: str = "auto",
        read_vectors: ReadVectors | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first, by sqlite-vec or in-process numpy.

        The numpy path of a large index scans quantized rows and computes the exact
        cosine of its best candidates from their stored vectors, read through
        ``read_vectors`` (default ``chunk_vectors``): a search that reads the
        candidates' vectors anyway passes its own reader so each is read once.
        """
        q = np.asarray(query, dtype=np.float32)
        use_vec = path == "sqlite-vec" or (path == "auto" and self._auto_prefers_vec())
        dims = self._vec_dims
        if use_vec and self.vec.loaded and dims is not None and dims == q.shape[0]:
            if not self._vec_table_exists():
                try:  # asked for sqlite-vec before the index outgrew numpy: build it now
                    self._ensure_vec_table(dims, create=True)
                except DatabaseError:
                    return self._numpy_search(q, limit, sources, read_vectors)
            k = limit if self._only_memory(sources) else limit * 4
            rows = self.db.execute(
                "select v.rowid, v.distance, c.source from chunks_vec v join chunks c"
                " on c.id = v.rowid where v.embedding match ? and k = ? order by v.distance",
                (q.tobytes(), k),
            )
            wanted = set(sources)
            return [(int(r[0]), 1.0 - float(r[1])) for r in rows if r[2] in wanted][:limit]
        return self._numpy_search(q, limit, sources, read_vectors)

    def _state_key(self) -> tuple[int, int]:
        """Changes whenever this store or another connection commits a write."""
        return self._generation, int(self.db.scalar("pragma data_version") or 0)

    def _only_memory(self, sources: Sequence[str]) -> bool:
        return list(sources) == ["memory"] and not self._has_other_sources()

    def _auto_prefers_vec(self) -> bool:
        """The ``auto`` vector path: numpy while the matrix fits its memory budget.

        Measured on 2 cores (README "Benchmarks"): a numpy matrix-vector product over
        100k×384 float32 takes ~5 ms against ~30 ms for sqlite-vec's brute-force
        ``vec0`` scan, so numpy wins whenever the matrix may live in memory. Above
        ``NUMPY_BUDGET_BYTES`` sqlite-vec keeps the process small.
        """
        if not self.vec.loaded:
            return False
        return self._outgrows_numpy(self._vec_dims or 0)

    def _outgrows_numpy(self, dims: int) -> bool:
        """The numpy matrix of every stored vector would exceed its budget (counted in
        the bytes it holds: int8 codes and projections from ``QUANTIZE_FROM`` rows)."""
        return matrix_bytes(self.embedded_count(), dims) > NUMPY_BUDGET_BYTES

    def embedded_count(self) -> int:
        """Chunks that hold a vector (cached until the next write)."""
        key = self._state_key()
        if self._embedded_cache is None or self._embedded_cache[0] != key:
            n = int(self.db.scalar("select count(*) from chunks where embedding is not null") or 0)
            self._embedded_cache = (key, n)
        return self._embedded_cache[1]

    def _has_other_sources(self) -> bool:
        key = self._state_key()
        cached = self._other_sources_cache
        if cached is None or cached[0] != key:
            found = bool(self.db.scalar("select 1 from chunks where source != 'memory' limit 1"))
            cached = self._other_sources_cache = (key, found)
        return cached[1]

    def vector_matrix(self, sources: Sequence[str]) -> VectorMatrix:
        """The stored vectors of ``sources`` in memory, kept in step with the table.

        After a write only the rows that changed are read again: an edit to one
        daily log must not cost a reload of 100k vectors (~1.4 s) before the next
        search. Large indexes hold them quantized (``engine.index.vector_matrix``).
        """
        key = (self._state_key(), tuple(sources))
        cache = self._matrix_cache
        if cache is not None and cache.key == key:
            return cache
        if (
            cache is not None
            and cache.sources == tuple(sources)
            and cache.refresh(self.db.execute, key)
        ):
            return cache
        self._matrix_cache = None  # let the old matrix go before building the new one
        self._matrix_cache = VectorMatrix.load(
            self.db.execute, self.embedded_count(), key, tuple(sources), self.dims or 0
        )
        return self._matrix_cache

    def _numpy_search(
        self,
        q: np.ndarray,
        limit: int,
        sources: Sequence[str],
        read_vectors: ReadVectors | None = None,
    ) -> list[tuple[int, float]]:
        matrix = self.vector_matrix(sources)
        return matrix.search(q, limit, read_vectors or self.chunk_vectors)

    # -- checks, description, compaction ----------------------------------------
    def info(self) -> StoreInfo:
        return StoreInfo(
            location=str(self.path),
            binding=self.db.binding,
            version=f"SQLite {self.db.sqlite_version}",
            sqlite_version=self.db.sqlite_version,
            fts="fts5" if self.fts_available else "unavailable",
            vector="sqlite-vec" if self.vec.loaded else "numpy",
        )

    def release_space(self) -> None:
        """Give back the write-ahead log's disk space (after a failed write: on a full
        disk the log would otherwise keep every later write failing)."""
        if self.snapshot:
            return
        with contextlib.suppress(DatabaseError):
            self.db.execute("pragma wal_checkpoint(TRUNCATE)")

    def compact(self, free_share: float) -> None:
        """Leave the file self-contained (no WAL) and VACUUM it when more than
        ``free_share`` of its pages are free (a rebuilt temp file before its swap)."""
        self.db.execute("pragma wal_checkpoint(TRUNCATE)")
        self.db.execute("pragma journal_mode=delete")
        pages = int(self.db.scalar("pragma page_count") or 0)
        free = int(self.db.scalar("pragma freelist_count") or 0)
        if pages and free > free_share * pages:
            self.db.execute("vacuum")

    def close(self) -> None:
        self.db.close()
