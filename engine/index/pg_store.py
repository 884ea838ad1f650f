"""The index on PostgreSQL + pgvector: the same operations as ``store.Store``.

Why: one agent's memory fits one SQLite file; a team whose agents (on several
machines) share a memory needs a database server. Every row carries a *space*
(one generation of one namespace, e.g. ``main:4f3a…``); ``memdeck_namespaces``
says which space is live for each namespace (an agent or workspace). A full
reindex fills a new space and then switches the namespace to it in one
transaction, so readers see the old index or the new one, never a mix.

Keyword search: a ``tsvector`` (GIN index) decides which chunks match, and the
rank is FTS5's own bm25 (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5)/(n + 0.5))
clamped to 1e-6, negative = better) computed from per-chunk term counts, so the
pipeline's bm25 → 0..1 mapping gives the same text scores as on SQLite. Terms
are made by ``unicode61`` (FTS5 unicode61's rules), not by PostgreSQL's parser
or stemmer: the same words match on both stores.

Vectors: a ``vector`` column with one partial HNSW index (cosine) per vector
size, so namespaces with different models share the table.

The DSN is a secret: it is never printed; errors show it through ``mask_dsn``.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from engine.index.db import DatabaseError, StoreUnreachable, VecStatus
from engine.index.index_store import StoreInfo
from engine.index.keyword_index import RowTerms
from engine.index.pg_line_vectors import PgLineVectorTable
from engine.index.pg_recall import PgRecallLog
from engine.index.recall_log import RecallLog
from engine.index.store import ChunkRow, FileRecord, NewChunk
from engine.index.unicode61 import doc_terms, phrase_tsquery, query_terms, tsvector_literal

#: FTS5's bm25 parameters and its floor for idf <= 0 (see ``engine.search.retrieve``)
BM25_K1 = 1.2
BM25_B = 0.75
IDF_FLOOR = 1e-6

_SCHEMA = """
create extension if not exists vector;
create table if not exists memdeck_namespaces (
    name text primary key, space text not null, updated_at double precision not null
);
create table if not exists memdeck_meta (
    space text not null, key text not null, value text not null, primary key (space, key)
);
create table if not exists memdeck_files (
    space text not null, path text not null, source text not null, hash text not null,
    mtime double precision not null, size bigint not null, chunks integer not null default 0,
    error text, indexed_at double precision not null, primary key (space, path)
);
create table if not exists memdeck_chunks (
    id bigserial primary key, space text not null, path text not null, source text not null,
    start_line integer not null, end_line integer not null, hash text not null,
    model text not null, text text not null, tsv tsvector not null, tf jsonb not null,
    ntok integer not null, dims integer, embedding vector, updated_at double precision not null
);
create index if not exists memdeck_chunks_space_path on memdeck_chunks (space, path);
create index if not exists memdeck_chunks_tsv on memdeck_chunks using gin (tsv);
create table if not exists memdeck_embedding_cache (
    provider text not null, model text not null, provider_key text not null,
    hash text not null, embedding bytea not null, dims integer not null,
    updated_at double precision not null,
    primary key (provider, model, provider_key, hash)
);
create index if not exists memdeck_embedding_cache_age on memdeck_embedding_cache (updated_at);
create table if not exists memdeck_line_vectors (
    chunk_hash text not null, model text not null, dims integer not null,
    lines integer not null, vectors bytea not null, primary key (chunk_hash, model)
);
create table if not exists memdeck_space_stats (
    space text primary key, chunks bigint not null, terms bigint not null
);
"""

#: every relation ``_SCHEMA`` creates (a store opened on a ready database skips it)
_SCHEMA_OBJECTS = tuple(re.findall(r"create (?:table|index) if not exists (\w+)", _SCHEMA))


def _schema_present(c: Any) -> bool:
    """True when the extension and every relation exist: then ``_SCHEMA`` is not run.

    ``create index if not exists`` takes a SHARE lock on its table before it sees
    the index exists, so running it on every open (each ``memdeck search``) would
    queue behind writers' transactions and stall the writers queued behind it."""
    row = c.execute(
        "select exists (select 1 from pg_extension where extname = 'vector'), "
        + ", ".join(["to_regclass(%s) is not null"] * len(_SCHEMA_OBJECTS)),
        _SCHEMA_OBJECTS,
    ).fetchone()
    return row is not None and all(row)


#: every table whose rows belong to one space (dropped together)
_SPACE_TABLES = ("memdeck_chunks", "memdeck_files", "memdeck_meta", "memdeck_space_stats")
_NAMESPACE_RE = re.compile(r"^[A-Za-z0-9_.:@/-]{1,200}$")


class PgStoreError(DatabaseError):
    """A PostgreSQL failure; the message never contains the DSN's password."""


class PgStoreUnreachable(PgStoreError, StoreUnreachable):
    """No connection to the server (refused, lost, or none free in time)."""


#: how long a call waits for a pooled connection: while the server is down, every
#: call of a long-running server (``memdeck mcp``) fails after this, not the pool's 30 s
POOL_WAIT_S = 3.0


def mask_dsn(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***`` (URL and key=value forms)."""
    # a URI's password runs to the authority's last "@" (an "@" left unencoded in it
    # would otherwise leave its tail showing); a key=value one may escape a space
    masked = re.sub(r"(://[^:/@\s]*:)([^/\s]*)(@)", r"\1***\3", dsn)
    return re.sub(
        r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|(?:[^\s\\]|\\.)+)", r"\1***", masked, flags=re.I
    )


def dsn_password(dsn: str) -> str | None:
    """The password a DSN carries (to scrub it from driver messages), if any."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        value = conninfo_to_dict(dsn).get("password")
    except Exception:
        return None
    return str(value) if value else None


def scrub(text: str, dsn: str) -> str:
    """``text`` with the DSN (and its bare password) masked wherever it appears: the
    password libpq reads, and what a URI holds up to its last "@" (libpq stops at the
    first one, and the driver then names the rest as part of the host)."""
    out = text.replace(dsn, mask_dsn(dsn))
    secrets = {dsn_password(dsn) or ""}
    uri = re.match(r"[a-z]+://[^:/@\s]*:([^/\s]*)@", dsn)
    if uri:  # the pieces past libpq's password: short ones would mask unrelated text
        secrets |= {uri.group(1), *(p for p in uri.group(1).split("@") if len(p) >= 3)}
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        out = out.replace(secret, "***")
    return out


def check_namespace(name: str) -> str:
    if not _NAMESPACE_RE.match(name):
        raise ValueError(
            f"invalid store namespace {name!r}: use 1-200 letters, digits and _ . : @ / -"
        )
    return name


class PgStore(PgLineVectorTable):
    """The ``Store`` operations on one namespace of a PostgreSQL database.

    ``space`` None: the live store, which reads the namespace's current space at
    each operation (another process's reindex switch is seen at once). A given
    ``space``: a build target for a full reindex (see :meth:`publish`).
    """

    backend: Literal["sqlite", "postgres"] = "postgres"
    snapshot = False
    fts_available = True
    fts_tokenizer = "unicode61 terms, FTS5 bm25"
    vec_requested = False  # pgvector's index is the server's

    def __init__(
        self,
        dsn: str,
        namespace: str,
        *,
        space: str | None = None,
        pool_size: int = 4,
        connect_timeout: float = 10.0,
    ):
        self.dsn = dsn
        self.namespace = check_namespace(namespace)
        self._fixed_space = space
        self._lock = threading.Lock()
        self._df_cache: dict[tuple[str, str], tuple[int, int]] = {}
        try:
            import psycopg
            from pgvector.psycopg import register_vector
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - the postgres extra is missing
            raise PgStoreError(
                f"store.backend 'postgres' needs psycopg, psycopg-pool and pgvector ({exc}); "
                "install memdeck[postgres]"
            ) from exc
        self._psycopg = psycopg
        try:
            with psycopg.connect(dsn, connect_timeout=int(connect_timeout), autocommit=True) as c:
                if not _schema_present(c):
                    with contextlib.suppress(psycopg.errors.UniqueViolation):
                        # concurrent first starts race on the extension's catalog row
                        c.execute("select pg_advisory_lock(7210001)")
                        try:
                            c.execute(_SCHEMA)
                        finally:
                            c.execute("select pg_advisory_unlock(7210001)")
                version = str(_one(c.execute("show server_version").fetchone()))
                vext = c.execute("select extversion from pg_extension where extname='vector'")
                vec_version = str(_one(vext.fetchone()))
        except psycopg.Error as exc:
            raise PgStoreError(self._problem(exc)) from exc
        self.binding = "psycopg " + psycopg.__version__
        self.server_version = "PostgreSQL " + version
        #: who searched what, kept per namespace (a reindex keeps it)
        self.recall: RecallLog = PgRecallLog(self)
        self.vec = VecStatus(True, version=vec_version)

        def configure(conn: Any) -> None:
            register_vector(conn)
            conn.execute("set hnsw.iterative_scan = strict_order")
            conn.commit()

        self.pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            configure=configure,
            kwargs={"connect_timeout": int(connect_timeout)},
            open=False,
            name="memdeck",
            timeout=min(connect_timeout, POOL_WAIT_S),
        )
        try:
            self.pool.open(wait=True, timeout=connect_timeout)
        except Exception as exc:
            raise PgStoreError(self._problem(exc)) from exc
        if space is None:
            self._ensure_namespace()

    # -- plumbing ------------------------------------------------------------------
    def _problem(self, exc: BaseException) -> str:
        return scrub(
            f"PostgreSQL store ({mask_dsn(self.dsn)}, namespace {self.namespace!r}): {exc}",
            self.dsn,
        )

    @contextlib.contextmanager
    def _conn(self, *, snapshot: bool = False) -> Iterator[Any]:
        """A pooled connection inside one transaction; errors come out masked.

        ``snapshot``: every statement sees the same committed state (repeatable
        read), so bm25's N and each term's n come from one moment even while a
        writer commits."""
        from psycopg_pool import PoolTimeout

        try:
            with self.pool.connection() as conn, conn.transaction():
                if snapshot:
                    conn.execute("set transaction isolation level repeatable read")
                yield conn
        except (PoolTimeout, self._psycopg.OperationalError) as exc:
            raise PgStoreUnreachable(self._problem(exc)) from exc
        except self._psycopg.Error as exc:
            raise PgStoreError(self._problem(exc)) from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A pooled psycopg connection inside one transaction, for tables kept beside
        the index (recall history); errors come out as masked ``PgStoreError``."""
        with self._conn() as c:
            yield c

    def _ensure_namespace(self) -> None:
        with self._conn() as c:
            c.execute(
                "insert into memdeck_namespaces(name, space, updated_at) values (%s, %s, %s)"
                " on conflict (name) do nothing",
                (self.namespace, f"{self.namespace}#{uuid.uuid4().hex}", time.time()),
            )

    def _space(self, c: Any) -> str:
        if self._fixed_space is not None:
            return self._fixed_space
        row = c.execute(
            "select space from memdeck_namespaces where name = %s", (self.namespace,)
        ).fetchone()
        if row is None:
            raise PgStoreError(f"namespace {self.namespace!r} was removed from the database")
        return str(row[0])

    def current_space(self) -> str:
        with self._conn() as c:
            return self._space(c)

    # -- meta ----------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._conn() as c:
            row = c.execute(
                "select value from memdeck_meta where space = %s and key = %s",
                (self._space(c), key),
            ).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._conn() as c:
            c.execute(
                "insert into memdeck_meta(space, key, value) values (%s, %s, %s)"
                " on conflict (space, key) do update set value = excluded.value",
                (self._space(c), key, value),
            )

    def fingerprint(self) -> dict[str, Any] | None:
        raw = self.get_meta("fingerprint")
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def set_fingerprint(self, fp: dict[str, Any]) -> None:
        self.set_meta("fingerprint", json.dumps(fp, sort_keys=True))

    def set_dims(self, dims: int) -> None:
        if self.get_meta("dims") != str(dims):
            self.set_meta("dims", str(dims))
        self._ensure_hnsw(dims)

    def _ensure_hnsw(self, dims: int) -> None:
        """One partial HNSW index per vector size (cosine distance)."""
        dims = int(dims)
        with self._conn() as c:
            c.execute("select pg_advisory_xact_lock(7210002)")
            c.execute(
                f"create index if not exists memdeck_chunks_hnsw_{dims} on memdeck_chunks"
                f" using hnsw ((embedding::vector({dims})) vector_cosine_ops)"
                f" where dims = {dims}"
            )

    def vec_table_consistent(self, *, deep: bool = True) -> bool:
        """Always: PostgreSQL maintains the HNSW index inside each transaction."""
        return True

    def rebuild_vec_table(self) -> None:
        """Nothing to rebuild (see :meth:`vec_table_consistent`)."""

    @property
    def dims(self) -> int | None:
        d = self.get_meta("dims")
        return int(d) if d else None

    # -- files and chunks ------------------------------------------------------------
    def files(self, paths: Collection[str] | None = None) -> dict[str, FileRecord]:
        """Every indexed file, or only those among ``paths`` (an incremental sync)."""
        with self._conn() as c:
            if paths is None:
                rows = c.execute(
                    "select path, source, hash, mtime, size, chunks, error from memdeck_files"
                    " where space = %s",
                    (self._space(c),),
                ).fetchall()
            else:
                rows = c.execute(
                    "select path, source, hash, mtime, size, chunks, error from memdeck_files"
                    " where space = %s and path = any(%s)",
                    (self._space(c), list(paths)),
                ).fetchall()
        return {
            r[0]: FileRecord(r[0], r[1], r[2], float(r[3]), int(r[4]), r[5], r[6]) for r in rows
        }

    # -- SQLite-store hooks that have no PostgreSQL counterpart --------------------
    #: set by the engine for SQLite's sqlite-vec table; pgvector has no second copy
    vec_requested = False

    def maintain_vec_table(self) -> None:
        """Nothing to build: pgvector's HNSW index follows the rows by itself."""

    def keyword_index(self) -> None:
        """No postings beside the full-text index here (``Store.keyword_search``)."""
        return None

    def defer_keyword_index(self) -> None:
        """No postings here (``Store.keyword_search``)."""

    def maintain_keyword_index(self) -> None:
        """No postings here (``Store.keyword_search``)."""

    def release_free_pages(self) -> int:
        """Nothing to do: PostgreSQL's autovacuum reuses dead rows' space."""
        return 0

    def keyword_search(
        self, words: Sequence[str], limit: int, sources: Sequence[str], *, require_all: bool = True
    ) -> list[tuple[int, float]] | None:
        """None: the keyword ranking comes from ``fts_search``."""
        return None

    def can_rank_rows(self) -> bool:
        """No per-row bm25 here (``Store.fts_ranks_of``): a hybrid search reads the
        longer keyword ranking instead."""
        return False

    def fts_ranks_of(
        self, words: Sequence[str], ids: Sequence[int], *, require_all: bool
    ) -> dict[int, float] | None:
        return None

    def term_frequencies(self, words: Sequence[str], ids: Sequence[int]) -> RowTerms | None:
        return None  # the ranking counts the rows' text (the same terms, ``unicode61``)

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
        rows = []
        for ch in chunks:
            terms = doc_terms(ch.text)
            tf: dict[str, int] = {}
            for t in terms:
                tf[t] = tf.get(t, 0) + 1
            emb = None if ch.embedding is None else np.asarray(ch.embedding, dtype=np.float32)
            rows.append(
                (
                    path, source, ch.start_line, ch.end_line, ch.hash, model, ch.text,
                    tsvector_literal(terms), json.dumps(tf), len(terms),
                    None if emb is None else int(emb.shape[0]), emb, now,
                )
            )  # fmt: skip
        with self._conn() as c:
            space = self._space(c)
            gone = c.execute(
                "with d as (delete from memdeck_chunks where space = %s and path = %s"
                " returning ntok) select count(*), coalesce(sum(ntok), 0) from d",
                (space, path),
            ).fetchone()
            self._add_stats(
                c, space, len(rows) - int(gone[0]), sum(r[9] for r in rows) - int(gone[1])
            )
            with c.cursor() as cur:
                cur.executemany(
                    "insert into memdeck_chunks(space, path, source, start_line, end_line, hash,"
                    " model, text, tsv, tf, ntok, dims, embedding, updated_at)"
                    " values (%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector,%s::jsonb,%s,%s,%s,%s)",
                    [(space, *r) for r in rows],
                )
            c.execute(
                "insert into memdeck_files(space, path, source, hash, mtime, size, chunks, error,"
                " indexed_at) values (%s,%s,%s,%s,%s,%s,%s,%s,%s) on conflict (space, path) do"
                " update set source=excluded.source, hash=excluded.hash, mtime=excluded.mtime,"
                " size=excluded.size, chunks=excluded.chunks, error=excluded.error,"
                " indexed_at=excluded.indexed_at",
                (space, path, source, file_hash, mtime, size, len(chunks), error, now),
            )

    def replace_file_meta(self, path: str, mtime: float, size: int) -> None:
        """Record a new mtime/size for a file whose content hash did not change."""
        with self._conn() as c:
            c.execute(
                "update memdeck_files set mtime = %s, size = %s where space = %s and path = %s",
                (mtime, size, self._space(c), path),
            )

    def remove_files(self, paths: Iterable[str]) -> int:
        paths = list(paths)
        with self._conn() as c:
            space = self._space(c)
            gone = c.execute(
                "with d as (delete from memdeck_chunks where space = %s and path = any(%s)"
                " returning ntok) select count(*), coalesce(sum(ntok), 0) from d",
                (space, paths),
            ).fetchone()
            self._add_stats(c, space, -int(gone[0]), -int(gone[1]))
            c.execute(
                "delete from memdeck_files where space = %s and path = any(%s)", (space, paths)
            )
        return len(paths)

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        if not ids:
            return {}
        with self._conn() as c:
            rows = c.execute(
                "select id, path, source, start_line, end_line, text from memdeck_chunks"
                " where id = any(%s) and space = %s",
                (list(ids), self._space(c)),
            ).fetchall()
        return {int(r[0]): ChunkRow(int(r[0]), *r[1:]) for r in rows}

    def file_mtimes(self, paths: Sequence[str]) -> dict[str, float]:
        if not paths:
            return {}
        with self._conn() as c:
            rows = c.execute(
                "select path, mtime from memdeck_files where space = %s and path = any(%s)",
                (self._space(c), list(paths)),
            ).fetchall()
        return {r[0]: float(r[1]) for r in rows}

    def chunk_vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        if not ids:
            return {}
        with self._conn() as c:
            rows = c.execute(
                "select id, embedding from memdeck_chunks where id = any(%s) and space = %s"
                " and embedding is not null",
                (list(ids), self._space(c)),
            ).fetchall()
        return {int(r[0]): _array(r[1]) for r in rows}

    def chunk_hashes(self, ids: Sequence[int]) -> dict[int, str]:
        """Content hash of each chunk (the key of its line vectors)."""
        if not ids:
            return {}
        with self._conn() as c:
            rows = c.execute(
                "select id, hash from memdeck_chunks where id = any(%s) and space = %s",
                (list(ids), self._space(c)),
            ).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    # -- line vectors (shared by every namespace, keyed by content hash and model) ----
    def counts(self) -> dict[str, int]:
        with self._conn() as c:
            space = self._space(c)
            files = c.execute(
                "select count(*) from memdeck_files where space = %s", (space,)
            ).fetchone()[0]
            chunks, embedded = c.execute(
                "select count(*), count(embedding) from memdeck_chunks where space = %s", (space,)
            ).fetchone()
            cache = c.execute("select count(*) from memdeck_embedding_cache").fetchone()[0]
        return {
            "files": int(files),
            "chunks": int(chunks),
            "embedded": int(embedded),
            "cache_entries": int(cache),
        }

    # -- embedding cache (shared by every namespace: same text, same model, same vector) ----
    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        with self._conn() as c:
            rows = c.execute(
                "select hash, embedding from memdeck_embedding_cache where provider = %s and"
                " model = %s and provider_key = %s and hash = any(%s)",
                (provider, model, provider_key, list(hashes)),
            ).fetchall()
        return {h: np.frombuffer(bytes(blob), dtype=np.float32) for h, blob in rows}

    def cache_put(
        self, provider: str, model: str, provider_key: str, items: dict[str, np.ndarray]
    ) -> None:
        if not items:
            return
        now = time.time()
        with self._conn() as c, c.cursor() as cur:
            cur.executemany(
                "insert into memdeck_embedding_cache(provider, model, provider_key, hash,"
                " embedding, dims, updated_at) values (%s,%s,%s,%s,%s,%s,%s)"
                " on conflict (provider, model, provider_key, hash) do update set"
                " embedding = excluded.embedding, dims = excluded.dims,"
                " updated_at = excluded.updated_at",
                [
                    (
                        provider, model, provider_key, h,
                        np.asarray(v, dtype=np.float32).tobytes(), int(v.shape[0]), now,
                    )
                    for h, v in sorted(items.items())  # sorted: concurrent writers lock in order
                ],
            )  # fmt: skip

    def cache_share_with_chunks(self) -> int:
        """Nothing to share: the PostgreSQL cache is one table shared by namespaces."""
        return 0

    def cache_prune(self, max_entries: int) -> int:
        with self._conn() as c:
            count = int(c.execute("select count(*) from memdeck_embedding_cache").fetchone()[0])
            excess = count - max_entries
            if excess <= 0:
                return 0
            c.execute(
                "delete from memdeck_embedding_cache where (provider, model, provider_key, hash)"
                " in (select provider, model, provider_key, hash from memdeck_embedding_cache"
                " order by updated_at asc limit %s)",
                (excess,),
            )
        return excess

    def recode_line_vectors(self) -> int:
        """Older matrices are kept as they are here (they are read as they are); a
        chunk embedded again gets its matrix in the current layout."""
        return 0

    def copy_cache_from(self, other_path: object, *, chunk_vectors: bool = True) -> int:
        """The cache is shared by every space already: nothing to copy."""
        return 0

    # -- retrieval -----------------------------------------------------------------
    def fts_search(self, match: str, limit: int, sources: Sequence[str]) -> list[tuple[int, float]]:
        """(chunk id, bm25 rank) best first; FTS5's bm25 (negative, smaller is better).

        ``match`` is the pipeline's FTS5 expression (quoted words joined by AND or
        OR); it becomes a tsquery over the same terms.
        """
        parsed = query_terms(match)
        if parsed is None:
            return []
        tsquery, phrases, _op = parsed
        with self._conn(snapshot=True) as c:
            space = self._space(c)
            total, avgdl = self._doc_stats(c, space)
            if total == 0:
                return []
            counts = self._doc_counts(c, space, phrases)
            # rank = -Σ idf·tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)), FTS5's bm25(),
            # summed over phrases; a phrase's tf is its rarest term's count (exact
            # when the terms occur only together, as in ``foo_bar``)
            parts = []
            params: list[object] = []
            for phrase in phrases:
                tf = "least(" + ", ".join(["coalesce((tf->>%s)::float8, 0)"] * len(phrase)) + ")"
                parts.append(
                    f"%s * {tf} * {BM25_K1 + 1} / ({tf} + "
                    f"{BM25_K1} * (1 - {BM25_B} + {BM25_B} * ntok / %s))"
                )
                params += [_idf(total, counts[phrase]), *phrase, *phrase, avgdl]
            score = " + ".join(parts)
            rows = c.execute(
                f"select id, -({score}) as rank from memdeck_chunks"
                " where space = %s and source = any(%s) and tsv @@ %s::tsquery"
                " order by rank, id limit %s",
                [*params, space, list(sources), tsquery, limit],
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    @staticmethod
    def _add_stats(c: Any, space: str, chunks: int, terms: int) -> None:
        """Keep bm25's N and total length per space in step, in the writing transaction
        (counting them per query would scan the whole namespace)."""
        c.execute(
            "insert into memdeck_space_stats(space, chunks, terms) values (%s, %s, %s)"
            " on conflict (space) do update set chunks = memdeck_space_stats.chunks"
            " + excluded.chunks, terms = memdeck_space_stats.terms + excluded.terms",
            (space, chunks, terms),
        )

    def _doc_stats(self, c: Any, space: str) -> tuple[int, float]:
        """N and the average chunk length in terms (bm25's avgdl), all sources."""
        row = c.execute(
            "select chunks, terms from memdeck_space_stats where space = %s", (space,)
        ).fetchone()
        if row is None:  # a space written before the stats table existed: count once
            row = c.execute(
                "select count(*), coalesce(sum(ntok), 0) from memdeck_chunks where space = %s",
                (space,),
            ).fetchone()
            c.execute(
                "insert into memdeck_space_stats(space, chunks, terms) values (%s, %s, %s)"
                " on conflict (space) do nothing",
                (space, int(row[0]), int(row[1])),
            )
        if int(row[0]) <= 0:
            return 0, 1e-9
        return int(row[0]), max(float(row[1]) / float(row[0]), 1e-9)

    def _doc_counts(
        self, c: Any, space: str, phrases: Sequence[tuple[str, ...]]
    ) -> dict[tuple[str, ...], int]:
        """bm25's n: chunks holding each phrase (GIN index lookups)."""
        return {
            p: int(
                c.execute(
                    "select count(*) from memdeck_chunks where space = %s and tsv @@ %s::tsquery",
                    (space, phrase_tsquery(list(p))),
                ).fetchone()[0]
            )
            for p in dict.fromkeys(phrases)
        }

    def fts_row_count(self) -> int:
        """Chunks in the namespace (all sources: bm25's N)."""
        with self._conn() as c:
            return self._doc_stats(c, self._space(c))[0]

    def term_doc_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each query word (tokenized as the index is)."""
        out: dict[str, int] = {}
        with self._conn() as c:
            space = self._space(c)
            for term in terms:
                parsed = query_terms('"' + term.replace('"', '""') + '"')
                if parsed is None or not parsed[1]:
                    out[term] = 0
                    continue
                out[term] = int(
                    c.execute(
                        "select count(*) from memdeck_chunks where space = %s"
                        " and tsv @@ %s::tsquery",
                        (space, parsed[0]),
                    ).fetchone()[0]
                )
        return out

    def vector_search(
        self,
        query: np.ndarray,
        limit: int,
        sources: Sequence[str],
        *,
        path: str = "auto",
        read_vectors: Callable[[Sequence[int]], Mapping[int, np.ndarray]] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first, through the HNSW index (its
        distances are exact: ``read_vectors``, ``Store``'s reader for rescoring a
        quantized scan, goes unused)."""
        q = np.asarray(query, dtype=np.float32)
        dims = int(q.shape[0])
        with self._conn() as c:
            space = self._space(c)
            c.execute(f"set local hnsw.ef_search = {max(40, min(1000, int(limit) * 2))}")
            rows = c.execute(
                f"select id, embedding::vector({dims}) <=> %s as distance from memdeck_chunks"
                f" where dims = {dims} and space = %s and source = any(%s)"
                f" order by embedding::vector({dims}) <=> %s limit %s",
                (q, space, list(sources), q, limit),
            ).fetchall()
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

    # -- generations -----------------------------------------------------------------
    def new_generation(self) -> PgStore:
        """A store writing into a fresh, empty space of this namespace (a reindex target)."""
        return PgStore(
            self.dsn, self.namespace, space=f"{self.namespace}#{uuid.uuid4().hex}", pool_size=2
        )

    def publish(self, build: PgStore) -> None:
        """Make ``build``'s space the namespace's live one, in one transaction, and
        drop the old space's rows in the same transaction (readers keep seeing the
        old rows until it commits, then the new ones)."""
        new_space = build._fixed_space
        assert new_space is not None
        with self._conn() as c:
            row = c.execute(
                "select space from memdeck_namespaces where name = %s for update",
                (self.namespace,),
            ).fetchone()
            old = None if row is None else str(row[0])
            c.execute(
                "insert into memdeck_namespaces(name, space, updated_at) values (%s, %s, %s)"
                " on conflict (name) do update set space = excluded.space,"
                " updated_at = excluded.updated_at",
                (self.namespace, new_space, time.time()),
            )
            if old and old != new_space:
                for table in _SPACE_TABLES:
                    c.execute(f"delete from {table} where space = %s", (old,))

    def drop_space(self) -> None:
        """Delete this build target's rows (a failed or cancelled reindex)."""
        assert self._fixed_space is not None
        with self._conn() as c:
            for table in _SPACE_TABLES:
                c.execute(f"delete from {table} where space = %s", (self._fixed_space,))

    def drop_orphan_spaces(self) -> int:
        """Delete rows of this namespace's spaces that are not live (killed reindexes).

        Only safe under the namespace's writer lock (no build is running)."""
        prefix = self.namespace + "#"
        with self._conn() as c:
            live = self._space(c)
            n = 0
            for table in _SPACE_TABLES:
                cur = c.execute(
                    f"delete from {table} where starts_with(space, %s) and space <> %s",
                    (prefix, live),
                )
                n += cur.rowcount or 0
        return n

    def info(self) -> StoreInfo:
        return StoreInfo(
            location=f"{mask_dsn(self.dsn)} (namespace {self.namespace})",
            binding=self.binding,
            version=self.server_version,
            sqlite_version=None,
            fts="tsvector",
            vector="pgvector",
        )

    def release_space(self) -> None:
        """The server manages its own log."""

    def embedded_count(self) -> int:
        """Chunks that hold a vector in the live space."""
        with self._conn() as c:
            row = c.execute(
                "select count(*) from memdeck_chunks where space = %s and embedding is not null",
                (self._space(c),),
            ).fetchone()
        return int(row[0]) if row else 0

    def check(self, level: Literal["open", "index", "thorough"] = "open") -> tuple[str, ...]:
        """The cross-table checks (the server keeps its own pages)."""
        found = self.integrity_check()
        return () if found == "ok" else tuple(found.split("; "))

    def quick_check(self) -> str:
        """The server keeps its pages sound: the cross-table checks are the check."""
        return self.integrity_check()

    def integrity_check(self) -> str:
        """Cross-table checks a reader relies on ("ok" when they hold)."""
        with self._conn() as c:
            space = self._space(c)
            bad = c.execute(
                "select count(*) from memdeck_files f where space = %s and chunks <>"
                " (select count(*) from memdeck_chunks k where k.space = f.space"
                " and k.path = f.path)",
                (space,),
            ).fetchone()[0]
            orphans = c.execute(
                "select count(*) from memdeck_chunks k where space = %s and not exists"
                " (select 1 from memdeck_files f where f.space = k.space and f.path = k.path)",
                (space,),
            ).fetchone()[0]
            # bm25's N and total length, kept in step by every write transaction
            kept = c.execute(
                "select chunks, terms from memdeck_space_stats where space = %s", (space,)
            ).fetchone()
            real = c.execute(
                "select count(*), coalesce(sum(ntok), 0) from memdeck_chunks where space = %s",
                (space,),
            ).fetchone()
        problems = []
        if kept is not None and (int(kept[0]), int(kept[1])) != (int(real[0]), int(real[1])):
            problems.append(
                f"keyword statistics say {kept[0]} chunks / {kept[1]} terms,"
                f" the rows {real[0]} / {real[1]}"
            )
        if bad:
            problems.append(f"{bad} files whose chunk count differs from their rows")
        if orphans:
            problems.append(f"{orphans} chunks without a file row")
        return "; ".join(problems) or "ok"

    @contextlib.contextmanager
    def writer_lock(self, timeout: float = 30.0) -> Iterator[None]:
        """The namespace's single-writer lock, across machines: a session advisory
        lock, released by the server if the holder dies (kill -9 included)."""
        key = f"memdeck-writer:{self.namespace}"
        deadline = time.monotonic() + timeout
        with self.pool.connection() as conn:
            conn.autocommit = True
            try:
                while not conn.execute(
                    "select pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)
                ).fetchone()[0]:
                    if time.monotonic() >= deadline:
                        from engine.index.lock import IndexLocked

                        raise IndexLocked(
                            f"another memdeck is writing namespace {self.namespace!r}"
                            f" (waited {timeout:g} s)"
                        )
                    time.sleep(0.2)
                try:
                    yield
                finally:
                    conn.execute("select pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
            finally:
                conn.autocommit = False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.pool.close()


def _one(row: tuple[Any, ...] | None) -> Any:
    """The single value of a one-row, one-column answer."""
    if row is None:
        raise PgStoreError("the server returned no row")
    return row[0]


def _idf(total: int, n: int) -> float:
    ratio = (total - n + 0.5) / (n + 0.5)
    return math.log(ratio) if ratio > 1 else IDF_FLOOR


def _array(value: Any) -> np.ndarray:
    """A stored vector (pgvector's ``Vector`` for an untyped column) as float32."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)
