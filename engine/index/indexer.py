"""Keeping the index in step with the files: incremental sync and full reindex.

Incremental sync skips files whose content hash is unchanged, removes rows of
vanished files and embeds only chunks whose text hash is not in the cache.
Embeddings go into the cache batch by batch, so a killed sync loses at most one
batch of work. A full reindex (fingerprint change or ``--force``) builds a new
file beside the index and copies it in with one SQLite transaction
(``copy_into``): searches keep using the old index until then, and a kill at
any moment leaves a usable index. The temp file's embedding cache is salvaged
by the next run (``clean_debris``), so a killed reindex resumes.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.config.settings import MemorySearchSettings
from engine.embeddings.base import EmbeddingProvider, EmbedProgress, ProviderError
from engine.embeddings.batch import EmbeddingsDeferred
from engine.embeddings.multimodal import media_label, media_types, multimodal_scope
from engine.events import EventBus, FileError, SyncDone, SyncProgress, SyncStarted
from engine.index.chunking import CHUNKING_VERSION, chunk_markdown
from engine.index.index_store import IndexStore
from engine.index.line_vectors import (
    embed_chunks_with_units,
    embed_missing_lines,
    lines_setting,
    space_key,
    units_with_chunks,
)
from engine.index.pooled_chunks import (
    CHUNK_POOLING,
    FINGERPRINT_KEY,
    embed_pooled_chunks,
    pools_chunks,
)
from engine.index.store import SCHEMA_VERSION, FileRecord, NewChunk
from engine.workspace.files import (
    MAX_INDEX_BYTES,
    UnreadableFile,
    Workspace,
    decode_text,
    sha256_bytes,
)
from engine.workspace.safe_open import FileTooLarge, PathRefused, open_beneath

EMBED_BATCH = 32
BULK_FLUSH = 20_000
#: a sync changing more files than this (or 1/20 of the index) rebuilds the keyword
#: side's postings at its end instead of following each file
KEYWORD_DEFER_FILES = 64
BATCH_PENDING = "embeddings pending in a remote batch job; the next sync collects them"
#: A transcript's JSONL (tool output, metadata) can be far larger than the text
#: indexed from it; its own limit is on the raw file, the 10 MiB one on the text.
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
_TOO_LARGE_TAIL = " indexing limit; not indexed"


class SyncCancelled(RuntimeError):
    """The sync was cancelled; what was written so far is consistent."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to index. Sessions (transcripts) plug in with their own ``read``."""

    rel: str
    abs: Path
    source: str
    size: int
    mtime: float
    #: bytes → indexable text, or (text, line_map) where line_map[i] is the source
    #: line of text line i+1 (transcripts map flattened lines back to JSONL lines)
    read: Callable[[bytes], str | tuple[str, list[int]]] | None = None
    #: MIME type of an image/audio file embedded from its bytes (multimodal)
    media: str | None = None
    #: the folder ``abs`` is opened beneath without following symlinks (the
    #: workspace root, an extra path's parent); None = the file's own folder
    base: Path | None = None


@dataclass
class SyncStats:
    files_total: int = 0
    files_indexed: int = 0
    files_removed: int = 0
    chunks_embedded: int = 0
    cache_hits: int = 0
    errors: list[str] = field(default_factory=list)
    requests: int = 0  # embedding requests (remote providers report them)
    retries: int = 0
    deferred: int = 0  # chunks waiting in remote batch jobs (remote.batch.wait = false)
    bytes_indexed: int = 0  # of the files written
    started: float = field(default_factory=time.perf_counter)

    def kb_per_s(self) -> float:
        """KB of the files written so far per second since the sync started."""
        elapsed = time.perf_counter() - self.started
        return self.bytes_indexed / 1024 / elapsed if elapsed > 0 else 0.0


def index_fingerprint(
    ms: MemorySearchSettings, provider: EmbeddingProvider | None, *, dims_known: bool = True
) -> dict[str, Any]:
    """What the index's contents depend on; any change forces a full reindex.
    ``dims_known=False``: the provider's vector size is not asked (it would load a
    model or call an endpoint), ``dims`` is None."""
    fp: dict[str, object] = {
        "schema": SCHEMA_VERSION,
        "sources": sorted(ms.sources) if ms.session_memory else ["memory"],
        "extra_paths": sorted(ms.extra_paths),
        "multimodal": [ms.multimodal.enabled, sorted(ms.multimodal.modalities)]
        if ms.multimodal.enabled
        else False,
        "chunk_tokens": ms.chunking.tokens,
        "chunk_overlap": ms.chunking.overlap,
        "chunker": CHUNKING_VERSION,
        "fts_tokenizer": ms.store.fts_tokenizer,
    }
    if ms.extra_path_patterns:  # absent for plain paths, so older indexes stay valid
        fp["extra_patterns"] = sorted(f"{x.path}\0{x.pattern}" for x in ms.extra_path_patterns)
    if provider is None:
        fp.update(provider="none", model=None, provider_key=None, dims=None)
    else:
        fp.update(provider.fingerprint())
        fp["dims"] = provider.dims if dims_known else None
        if pools_chunks(provider, ms.store.line_vectors):  # absent otherwise: older indexes stay
            fp[FINGERPRINT_KEY] = CHUNK_POOLING
    return fp


def memory_source_files(workspace: Workspace) -> list[SourceFile]:
    return [
        SourceFile(f.rel, f.abs, "memory", f.size, f.mtime, base=workspace.base_of(f.abs)[0])
        for f in workspace.list_files()
    ]


def media_source_files(
    workspace: Workspace, ms: MemorySearchSettings, provider: EmbeddingProvider | None
) -> list[SourceFile]:
    """Images/audio under extraPaths, when the provider can embed them (multimodal embedding)."""
    if not multimodal_scope(ms, provider)[0]:
        return []
    types = media_types(ms.multimodal.modalities)
    return [
        SourceFile(
            f.rel,
            f.abs,
            "memory",
            f.size,
            f.mtime,
            media=types[f.abs.suffix.lower()],
            base=workspace.base_of(f.abs)[0],
        )
        for f in workspace.list_extra_files(tuple(types))
    ]


class Indexer:
    """Writes one ``Store`` from a list of source files."""

    def __init__(
        self,
        store: IndexStore,
        provider: EmbeddingProvider | None,
        ms: MemorySearchSettings,
        bus: EventBus | None = None,
        cancel: threading.Event | None = None,
    ):
        self.store = store
        self.provider = provider
        self.ms = ms
        self.bus = bus or EventBus()
        self.cancel = cancel or threading.Event()
        self._media: dict[str, tuple[str, SourceFile]] = {}  # media chunk hash → (mime, file)
        self._empty_vectors = 0  # NaN/zero vectors the provider returned (not stored)
        #: chunks embedded with their units whose units could not be pooled from the run
        self._separate_units: set[str] = set()

    def sync(
        self,
        files: Sequence[SourceFile],
        *,
        reason: str = "manual",
        full: bool = False,
        publish_done: bool = True,
        only: Collection[str] | None = None,
    ) -> SyncDone:
        """Write ``files`` into the store; ``publish_done=False`` when the caller
        still has work (a full reindex's swap) before the sync is really done.

        ``only``: the relative paths the caller knows may have changed (the
        watcher's report); ``files`` then lists just those that still exist, and
        only those paths are checked for removal, not every indexed file."""
        started = time.perf_counter()
        self.bus.publish(SyncStarted(reason=reason, full=full))
        stats = SyncStats(files_total=len(files))
        known = self.store.files(only)
        on_disk = {f.rel for f in files}
        scope = known if only is None else [p for p in only if p in known]
        vanished = [p for p in scope if p not in on_disk]
        if vanished:
            stats.files_removed = self.store.remove_files(vanished)

        # Only the list of changed files is kept here; their bytes are read again when
        # each is prepared, so a large sync never holds every changed file in memory.
        changed: list[SourceFile] = []
        for f in files:
            self._check_cancel()
            rec = known.get(f.rel)
            same = rec is not None and rec.size == f.size and rec.mtime == f.mtime
            if same and (rec.error is None or rec.error.endswith(_TOO_LARGE_TAIL)):  # type: ignore[union-attr]
                continue  # unchanged by metadata (an oversized file is not re-read)
            if rec and rec.error is None:
                read = self._read(f, stats)
                if read is None:
                    continue
                f, data = read
                if rec.hash == sha256_bytes(data):
                    self.store.replace_file_meta(f.rel, f.mtime, f.size)
                    continue
            changed.append(f)
        self._progress("scan", 0, len(changed), stats)
        if len(changed) > max(KEYWORD_DEFER_FILES, len(known) // 20):
            # rebuilding the keyword postings once beats following this many files one by one
            self.store.defer_keyword_index()

        pending: list[tuple[SourceFile, str, list[NewChunk], str | None]] = []
        pending_chunks = 0
        for done, f in enumerate(changed, start=1):
            self._check_cancel()
            read = self._read(f, stats)
            if read is None:
                continue
            f, data = read
            prepared = self._prepare(f, data, stats)
            if prepared is None:
                continue
            pending.append(prepared)
            pending_chunks += len(prepared[2])
            if pending_chunks >= self._flush_every():
                self._flush(pending, stats, done, len(changed))
                pending, pending_chunks = [], 0
        if pending:
            self._flush(pending, stats, len(changed), len(changed))
        self._embed_lines(stats)
        if self.ms.cache.enabled:
            self.store.cache_prune(self.ms.cache.max_entries)
            self.store.cache_share_with_chunks()
        self.store.maintain_vec_table()
        self.store.maintain_keyword_index()
        self.store.release_free_pages()
        done_event = SyncDone(
            reason=reason,
            full=full,
            files_indexed=stats.files_indexed,
            files_removed=stats.files_removed,
            chunks_embedded=stats.chunks_embedded,
            cache_hits=stats.cache_hits,
            duration=time.perf_counter() - started,
            errors=tuple(stats.errors),
            listed=only is None,
            bytes_indexed=stats.bytes_indexed,
        )
        if publish_done:
            self.bus.publish(done_event)
        return done_event

    # -- steps ---------------------------------------------------------------
    def _embed_lines(self, stats: SyncStats) -> None:
        """Line vectors for chunks that have none (``engine.index.line_vectors``).

        By default (``store.vector.lines`` unset) with the local model and with a
        remote API whose requests carry the units beside their chunks
        (``line_vectors.lines_setting``). A provider failure here is
        reported like any embedding failure and leaves the chunks without line
        vectors (search then uses the chunk's own cosine); the next sync retries.
        """
        if self.provider is None or self.store.dims is None or not self._wants_lines():
            return
        try:
            embed_missing_lines(
                self.store,
                self.provider,
                use_cache=self.ms.cache.enabled,
                check_cancel=self._check_cancel,
                separate=self._separate_units,
            )
            self._separate_units.clear()
        except (ProviderError, EmbeddingsDeferred) as exc:
            self._error(stats, "(provider)", f"line embedding failed: {exc}")

    def _wants_lines(self) -> bool:
        """Whether chunks get unit vectors (``store.vector.lines``, else
        ``line_vectors.lines_setting``)."""
        return lines_setting(self.provider, self.ms.store.line_vectors).on

    def _pools_chunks(self) -> bool:
        """Whether chunk vectors are pooled from unit vectors (``engine.index.pooled_chunks``)."""
        return pools_chunks(self.provider, self.ms.store.line_vectors)

    def _read(self, f: SourceFile, stats: SyncStats) -> tuple[SourceFile, bytes] | None:
        """The file's bytes and its size/mtime, all from one descriptor opened without
        following symlinks and checked (regular file, one link; ``safe_open``). The
        returned ``SourceFile`` carries the opened file's metadata, not the
        listing's: what is recorded in the index describes what was read.

        A Markdown file over ``MAX_INDEX_BYTES`` is recorded as not indexed from its
        ``fstat`` size without reading a byte of it.
        """
        base = f.base if f.base is not None else f.abs.parent
        try:
            rel = f.abs.relative_to(base).as_posix()
            with open_beneath(base, rel, shown=f.rel) as fh:
                opened = dataclasses.replace(f, size=fh.size, mtime=fh.mtime)
                limit = self._limit(f)
                if fh.size > limit:
                    self._not_indexed(opened, "", self._too_large(f, fh.size, limit), stats)
                    return None
                return opened, fh.read_all(limit)
        except FileNotFoundError:
            return None  # vanished since the listing: the next sync removes its rows
        except FileTooLarge as exc:  # grew past the limit while being read
            self._not_indexed(f, "", str(exc), stats)
            return None
        except PathRefused as exc:
            self._refused(f, str(exc), stats)
            return None
        except OSError as exc:
            self._error(stats, f.rel, f"{f.rel}: cannot read ({exc.strerror or exc})")
            return None

    def _limit(self, f: SourceFile) -> int:
        if f.media is not None:
            return self.ms.multimodal.max_file_bytes
        if f.read is not None:  # a transcript's limit applies to its flattened text
            return MAX_TRANSCRIPT_BYTES
        return MAX_INDEX_BYTES

    @staticmethod
    def _too_large(f: SourceFile, size: int, limit: int) -> str:
        if f.media is not None:
            return f"{f.rel}: {size} bytes is over multimodal.maxFileBytes ({limit})"
        return f"{f.rel}: {size / 1e6:.1f} MB is over the {limit // 2**20} MiB{_TOO_LARGE_TAIL}"

    def _refused(self, f: SourceFile, message: str, stats: SyncStats) -> None:
        """A file that is not safe to read (symlink swapped in, FIFO, hard link): its
        earlier rows are removed, so nothing read before is served under its name."""
        self._error(stats, f.rel, message)
        self.store.replace_file(
            path=f.rel,
            source=f.source,
            file_hash="",
            mtime=-1.0,  # never equal to a real mtime: the next sync looks again
            size=-1,
            model=self._model(),
            chunks=[],
            error=message,
        )

    def _prepare(
        self, f: SourceFile, data: bytes, stats: SyncStats
    ) -> tuple[SourceFile, str, list[NewChunk], str | None] | None:
        file_hash = sha256_bytes(data)
        problem: str | None = None
        if f.media is not None:
            return self._prepare_media(f, data, file_hash, stats)
        try:
            # A transcript's limit applies to its flattened text: the JSONL around it
            # (tool output, metadata) can be far larger than what gets indexed.
            size = len(data)
            line_map: list[int] | None = None
            if f.read is not None:
                produced = f.read(data)
                text, line_map = produced if isinstance(produced, tuple) else (produced, None)
                size = len(text.encode("utf-8"))
            if size > MAX_INDEX_BYTES:
                raise UnreadableFile(self._too_large(f, size, MAX_INDEX_BYTES))
            if f.read is None:
                text, problem = decode_text(data, f.rel)
        except (UnreadableFile, ValueError) as exc:
            self._not_indexed(f, file_hash, str(exc), stats)
            return None
        if problem:
            self._error(stats, f.rel, problem)

        def src(line: int) -> int:
            return line_map[min(line, len(line_map)) - 1] if line_map else line

        chunks = [
            NewChunk(src(c.start_line), src(c.end_line), c.hash, c.text, None)
            for c in chunk_markdown(text, self.ms.chunking.tokens, self.ms.chunking.overlap)
        ]
        return f, file_hash, chunks, problem  # a warning kept on the file's record

    def _not_indexed(self, f: SourceFile, file_hash: str, message: str, stats: SyncStats) -> None:
        """Record a file that cannot be indexed, with why (status shows it)."""
        self._error(stats, f.rel, message)
        self.store.replace_file(
            path=f.rel,
            source=f.source,
            file_hash=file_hash,
            mtime=f.mtime,
            size=f.size,
            model=self._model(),
            chunks=[],
            error=message,
        )

    def _prepare_media(
        self, f: SourceFile, data: bytes, file_hash: str, stats: SyncStats
    ) -> tuple[SourceFile, str, list[NewChunk], str | None] | None:
        """An image or audio file is one chunk: a label of its path for keyword
        search, and a vector of its bytes (read again when embedding, so large
        files are not held in memory while a flush fills up)."""
        assert f.media is not None
        chunk_hash = f"media:{file_hash}"
        self._media[chunk_hash] = (f.media, f)
        return f, file_hash, [NewChunk(1, 1, chunk_hash, media_label(f.rel, f.media), None)], None

    def _flush(
        self,
        pending: list[tuple[SourceFile, str, list[NewChunk], str | None]],
        stats: SyncStats,
        files_done: int,
        files_total: int,
    ) -> None:
        vectors: dict[str, np.ndarray] = {}
        embed_error: str | None = None
        if self.provider is not None:
            try:
                vectors = self._embed_all(
                    [c for _, _, chunks, _ in pending for c in chunks],
                    [f.rel for f, _, _, _ in pending],
                    stats,
                    files_done,
                    files_total,
                )
            except ProviderError as exc:
                embed_error = f"embedding failed: {exc}"
                self._error(stats, "(provider)", embed_error)
            if self._empty_vectors and embed_error is None:
                embed_error = (
                    f"the provider returned {self._empty_vectors} empty (NaN or zero) "
                    "vectors; those chunks are keyword-only until a sync embeds them"
                )
                self._error(stats, "(provider)", embed_error)
                self._empty_vectors = 0
        # memdeck's own chunk vectors (pooled from units) are kept in 8 bits; a media
        # file's vector is the model's, shared with the embedding cache
        pooled = self._pools_chunks()
        for f, file_hash, chunks, warning in pending:
            self._check_cancel()
            with_vecs = [
                NewChunk(
                    c.start_line,
                    c.end_line,
                    c.hash,
                    c.text,
                    vectors.get(c.hash),
                    pooled=pooled and c.hash not in self._media,
                )
                for c in chunks
            ]
            # A file whose chunks could not be embedded keeps an empty hash so the next
            # sync retries it; its text is searchable by FTS meanwhile.
            incomplete = self.provider is not None and any(c.embedding is None for c in with_vecs)
            self.store.replace_file(
                path=f.rel,
                source=f.source,
                file_hash="" if incomplete else file_hash,
                mtime=f.mtime,
                size=f.size,
                model=self._model(),
                chunks=with_vecs,
                # without an error, the chunks wait in remote batch jobs (wait=false);
                # the note makes the next sync revisit the file and shows in status
                # else the file's own warning (not valid UTF-8, indexed with U+FFFD):
                # status and the app list it as long as the file is so
                error=(embed_error or BATCH_PENDING) if incomplete else warning,
            )
            stats.files_indexed += 1
            stats.bytes_indexed += f.size
        self._progress("write", files_done, files_total, stats)

    def _embed_all(
        self,
        chunks: list[NewChunk],
        paths: list[str],
        stats: SyncStats,
        files_done: int,
        files_total: int,
    ) -> dict[str, np.ndarray]:
        provider = self.provider
        assert provider is not None
        fp = provider.fingerprint()
        pid, model, key = str(fp.get("provider")), str(fp.get("model")), str(fp.get("provider_key"))
        hashes = list(dict.fromkeys(c.hash for c in chunks))
        # pooled chunk vectors are not the model's vectors of the chunks' texts: never
        # cached as those (their units are kept in the line vectors instead); a media
        # file's vector is the model's, cached as ever
        pooled = self._pools_chunks()
        use_cache = self.ms.cache.enabled
        cacheable = [h for h in hashes if not pooled or h in self._media]
        cached = self.store.cache_get(pid, model, key, cacheable) if use_cache else {}
        dims = provider.dims
        cached = {h: v for h, v in cached.items() if v.shape[0] == dims}
        stats.cache_hits += len(cached)
        text_of = {c.hash: c.text for c in chunks}
        missing = [h for h in hashes if h not in cached]
        out = dict(cached)
        if missing:
            self.store.set_dims(dims)
        t0 = time.perf_counter()
        media = [h for h in missing if h in self._media]
        texts = [h for h in missing if h not in self._media]
        # batch jobs (remote.batch) want every text at once; direct requests go in slices
        step = max(1, len(texts)) if getattr(provider, "bulk", False) else EMBED_BATCH
        units = [("media", media[i : i + 4]) for i in range(0, len(media), 4)]
        units += [("text", texts[i : i + step]) for i in range(0, len(texts), step)]
        # progress counts this sync's chunks: embedded so far of (earlier + this flush's)
        total = stats.chunks_embedded + len(missing)
        known = self._known_units(provider, paths) if texts else {}
        done = 0
        for kind, batch in units:
            self._check_cancel()
            seen: list[EmbedProgress] = []

            def on_progress(
                p: EmbedProgress, seen: list[EmbedProgress] = seen, before: int = done
            ) -> None:
                seen.append(p)
                self._embed_progress(stats, p, before, total, t0, files_done, files_total)
                # between the provider's own calls (16 texts, one request): a stop
                # (Ctrl-C, an MCP client leaving) waits for one call, not a whole batch
                self._check_cancel()

            fresh, reused = self._embed_unit(
                provider, kind, batch, text_of, dims, on_progress, stats, known
            )
            if seen:
                stats.requests += seen[-1].requests
                stats.retries += seen[-1].retries
            out.update(fresh)
            if use_cache and fresh and (kind == "media" or not pooled):
                self.store.cache_put(pid, model, key, fresh)
            # chunks pooled from unit vectors already stored are cache hits, not embedded
            stats.cache_hits += reused
            stats.chunks_embedded += len(fresh) - reused
            done += len(batch)
            self._embed_progress(stats, None, done, total, t0, files_done, files_total)
        if self.store.dims is None and out:
            self.store.set_dims(dims)
        return out

    def _known_units(self, provider: EmbeddingProvider, paths: list[str]) -> dict[int, np.ndarray]:
        """Unit vectors a provider that sends each unit as an input of its chunk's
        request need not send again: those of the files' chunks before this edit and
        of chunks gone from the index (``IndexStore.orphan_line_units``)."""
        both = units_with_chunks(provider)
        packed = both is not None and both.unit_pooling == "packed"
        if not self.ms.cache.enabled or not self._wants_lines():
            return {}
        if not packed and not self._pools_chunks():
            return {}
        dims = provider.dims
        got = self.store.orphan_line_units(space_key(provider), paths)
        return {k: v for k, v in got.items() if v.shape == (dims,)}

    def _media_bytes(self, f: SourceFile) -> bytes:
        """A media file's bytes, read again (safely) when it is embedded."""
        base = f.base if f.base is not None else f.abs.parent
        try:
            with open_beneath(base, f.abs.relative_to(base).as_posix(), shown=f.rel) as fh:
                return fh.read_all(self.ms.multimodal.max_file_bytes)
        except (PathRefused, FileTooLarge) as exc:
            raise OSError(str(exc)) from exc

    def _flush_every(self) -> int:
        """Chunks gathered before embedding and writing. Batch jobs (remote.batch) take
        hours, so they get one job per big slice instead of one per small flush."""
        return BULK_FLUSH if getattr(self.provider, "bulk", False) else EMBED_BATCH * 4

    def _embed_unit(
        self,
        provider: EmbeddingProvider,
        kind: str,
        batch: list[str],
        text_of: dict[str, str],
        dims: int,
        progress: Callable[[EmbedProgress], None],
        stats: SyncStats,
        known: Mapping[int, np.ndarray],
    ) -> tuple[dict[str, np.ndarray], int]:
        """Embed one slice of texts (or media files); returns hash → vector for the
        ones that are ready (batch jobs may keep some for a later sync), and how many
        of them came without the provider (pooled from unit vectors already stored)."""
        reused = 0
        try:
            if kind == "media":
                items = [(self._media[h][0], self._media_bytes(self._media[h][1])) for h in batch]
                vecs = provider.embed_media(items, progress)  # type: ignore[attr-defined]
            elif self._pools_chunks():
                # the units embedded on their own, the chunks' vectors pooled from them
                pooled = embed_pooled_chunks(
                    self.store,
                    provider,
                    space_key(provider),
                    {h: text_of[h] for h in batch},
                    progress,
                    known,
                )
                vecs, reused = pooled.vectors, pooled.from_stored
            elif (both := units_with_chunks(provider)) is not None and self._wants_lines():
                # the units' vectors from the chunks' own run of the model, or their
                # own inputs in the chunks' requests (UnitsWithChunks)
                vecs, separate = embed_chunks_with_units(
                    self.store,
                    both,
                    space_key(provider),
                    {h: text_of[h] for h in batch},
                    progress,
                    known,
                )
                self._separate_units |= separate
            else:
                vecs = provider.embed_documents([text_of[h] for h in batch], progress)
        except OSError as exc:
            raise ProviderError(f"cannot read a media file: {exc}") from exc
        except EmbeddingsDeferred as deferred:
            stats.deferred += deferred.pending
            keep = sorted(deferred.ready)
            batch = [batch[i] for i in keep]
            vecs = np.asarray([deferred.ready[i] for i in keep], dtype=np.float32)
            vecs = vecs.reshape(len(keep), dims)
        if vecs.shape != (len(batch), dims):
            raise ProviderError(
                f"provider returned shape {vecs.shape}, expected ({len(batch)}, {dims})"
            )
        # NaN/inf rows are zeroed by normalize_rows: such a vector matches nothing, so
        # it is not stored; its file stays incomplete (keyword-only) and is retried
        empty = ~np.any(vecs, axis=1)
        if empty.any():
            self._empty_vectors += int(empty.sum())
            ok = {h: v for h, v, bad in zip(batch, vecs, empty, strict=True) if not bad}
            return ok, reused
        return dict(zip(batch, vecs, strict=True)), reused

    def _embed_progress(
        self,
        stats: SyncStats,
        p: EmbedProgress | None,
        done: int,
        total: int,
        t0: float,
        files_done: int,
        files_total: int,
    ) -> None:
        """One ``embed`` event: chunks (of ``total`` known so far), requests, retries,
        rate and ETA; ``done`` counts this flush's items before the running call.

        ``chunks_embedded`` counts only vectors already committed to the cache, so a
        process killed right after an ``embed n/N`` line resumes with those ``n``
        as cache hits; the running call's own progress moves the rate and ETA."""
        in_call = p.items_done if p else 0
        now = done + in_call
        embedded = stats.chunks_embedded
        elapsed = time.perf_counter() - t0
        rate = now / elapsed if elapsed > 0 and now else 0.0
        self.bus.publish(
            SyncProgress(
                phase="embed",
                files_done=files_done,
                files_total=files_total,
                chunks_embedded=embedded,
                chunks_total=total,
                cache_hits=stats.cache_hits,
                rate=rate,
                eta_seconds=(total - embedded) / rate if rate > 0 else None,
                requests=stats.requests + (p.requests if p else 0),
                retries=stats.retries + (p.retries if p else 0),
                kb_per_s=stats.kb_per_s(),
            )
        )

    # -- helpers -------------------------------------------------------------
    def _model(self) -> str:
        return "none" if self.provider is None else str(self.provider.model)

    def _error(self, stats: SyncStats, path: str, message: str) -> None:
        stats.errors.append(message)
        self.bus.publish(FileError(path=path, error=message))

    def _progress(self, phase: str, done: int, total: int, stats: SyncStats) -> None:
        self.bus.publish(
            SyncProgress(
                phase=phase,
                files_done=done,
                files_total=total,
                chunks_embedded=stats.chunks_embedded,
                cache_hits=stats.cache_hits,
                kb_per_s=stats.kb_per_s(),
            )
        )

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise SyncCancelled("sync cancelled")


def disk_differs(on_disk: list[SourceFile], indexed: Mapping[str, FileRecord]) -> bool:
    """True when a file appeared, vanished or changed size/mtime since it was indexed.

    This is what a fresh process (the CLI) can know without a watcher; the hash
    comparison that decides what to re-embed happens in the indexer. Transcripts
    are left out: they are re-indexed only after their delta thresholds, and so
    are files refused when last read (each sync reads them again anyway).
    """
    disk = {f.rel: f for f in on_disk if f.source == "memory"}
    index = {p: r for p, r in indexed.items() if r.source == "memory"}
    if set(disk) != set(index):
        return True
    for f in disk.values():
        rec = index[f.rel]
        if rec.size == -1 and rec.error:
            # refused when last read (a hard link, a FIFO): recorded without its size
            # so that every sync looks at it again, but not a change to sync for
            continue
        if rec.size != f.size or abs(rec.mtime - f.mtime) > 1e-6:
            return True
    return False
