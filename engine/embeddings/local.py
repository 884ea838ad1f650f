"""The ``local`` provider: a GGUF embedding model run in-process by llama.cpp.

The model loads lazily (first ``dims``/``embed_*`` call) so building an Engine
stays cheap, and one lock serialises calls into the llama context, which is
not thread-safe. Inputs longer than the model's context are truncated to it,
which is what the chunker's ~400-token chunks need for a 512-position BERT.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.config.settings import LocalSettings
from engine.embeddings.base import EmbedProgress as _Progress
from engine.embeddings.base import (
    ProgressCallback,
    ProviderError,
    QueryRest,
    UnitSpans,
    normalize_rows,
)
from engine.embeddings.late_units import line_token_starts, pool_units

if TYPE_CHECKING:
    from llama_cpp import Llama

    from engine.embeddings.hf_download import DownloadProgress

#: texts handed to llama.cpp per call; progress is reported between calls
DOC_BATCH = 16
#: Threads for one query. A query is a dozen tokens: a second thread saves ~2 ms on
#: an idle 2-core machine, but llama.cpp's threads spin-wait for each other, so when
#: the cores are busy (the search's own SQLite work runs beside the embedding, other
#: processes) a 2-thread query took 200 ms at p50 and 2.8 s at p95 where one thread
#: took 23 ms (tests/bench/mcp_latency.py, README "MCP: memory_search per call").
QUERY_THREADS = 1
#: llama.cpp's fused attention kernel. Without it a 400-token chunk's attention costs
#: twice the rest of the model on the CPU, and a batch of short lines attends over the
#: whole batch's positions (masked). With it, LoCoMo conv-5's 90 chunks embed in
#: 10.7 s instead of 23-25 s and their 676 lines in 8.3 s instead of 24 s (2 threads;
#: docs/benchmarks/2026-11-28-flash-attention.md). The vectors are the same to
#: float32 rounding (largest difference 2.2e-4 of a unit vector's component).
FLASH_ATTENTION = True
#: Recent query vectors kept per provider (an agent often asks the same thing again).
QUERY_CACHE = 256


def _tokens(llm: Llama, text: str) -> list[int]:
    """The ids ``Llama.embed`` feeds the model for ``text`` (before truncation)."""
    try:
        return list(llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(f"local embedding failed: {exc}") from exc


def _pooled_embedding(llm: Llama, tokens: list[int], dims: int) -> np.ndarray:
    """The pooled embedding of one token sequence, as ``Llama.embed`` computes it
    (truncated to the batch, one sequence, every token an output), from a single call
    into llama.cpp: the caller holds the provider's lock.

    ``Llama.embed`` makes several calls into llama.cpp before the model runs, and
    builds a Python list of the result; a query needs neither.
    """
    import llama_cpp

    tokens = tokens[: llm.n_batch]
    batch = llm._batch
    batch.reset()  # type: ignore[no-untyped-call]
    batch.add_sequence(tokens, 0, True)
    try:
        llm._ctx.kv_cache_clear()  # type: ignore[no-untyped-call]
        llm._ctx.decode(batch)
    except RuntimeError as exc:
        raise ProviderError(f"local embedding failed: {exc}") from exc
    finally:
        batch.reset()  # type: ignore[no-untyped-call]
    ptr = llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, 0)
    if not ptr:
        raise ProviderError("local embedding failed: llama.cpp returned no pooled embedding")
    return np.ctypeslib.as_array(ptr, shape=(dims,)).astype(np.float32)


def _token_rows(llm: Llama, seqs: list[list[int]], dims: int) -> list[np.ndarray]:
    """Each sequence's last-layer token rows (tokens × dims) from a context without
    pooling, as few sequences per run of the model as fit its batch (the caller
    holds the provider's lock; every sequence fits the batch)."""
    import llama_cpp

    out: list[np.ndarray] = []
    batch = llm._batch
    n_seq_max = int(llm.context_params.n_seq_max)

    def run(group: list[list[int]]) -> None:
        try:
            llm._ctx.kv_cache_clear()  # type: ignore[no-untyped-call]
            llm._ctx.decode(batch)
        except RuntimeError as exc:
            raise ProviderError(f"local embedding failed: {exc}") from exc
        finally:
            batch.reset()  # type: ignore[no-untyped-call]
        n = sum(len(s) for s in group)
        ptr = llama_cpp.llama_get_embeddings(llm._ctx.ctx)
        if not ptr:
            raise ProviderError("local embedding failed: llama.cpp returned no token rows")
        rows = np.ctypeslib.as_array(ptr, shape=(n, dims)).copy()
        at = 0
        for s in group:
            out.append(rows[at : at + len(s)])
            at += len(s)

    group: list[list[int]] = []
    used = 0
    batch.reset()  # type: ignore[no-untyped-call]
    for tokens in seqs:
        if group and (used + len(tokens) > llm.n_batch or len(group) >= n_seq_max):
            run(group)
            group, used = [], 0
        batch.add_sequence(tokens, len(group), True)
        group.append(tokens)
        used += len(tokens)
    if group:
        run(group)
    return out


def _drop_log(level: int, text: bytes, user_data: object) -> None:
    """A llama.cpp log callback that prints nothing."""


#: the ctypes wrapper of :func:`_drop_log`, made once and kept alive while llama.cpp holds it
_QUIET: list[object] = []


def _quiet_log() -> object:
    if not _QUIET:
        import llama_cpp

        _QUIET.append(llama_cpp.llama_log_callback(_drop_log))
    return _QUIET[0]


def _default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


class LocalProvider:
    """Embeddings from a local GGUF file (or an ``hf:`` URI fetched into a cache dir)."""

    id = "local"

    def __init__(
        self,
        path: Path | str,
        *,
        cache_dir: Path | None = None,
        uri: str | None = None,
        n_ctx: int = 512,
        n_threads: int | None = None,
        env: Mapping[str, str] = os.environ,
        on_download: Callable[[DownloadProgress], None] | None = None,
        late_units: bool = False,
    ):
        self.path = Path(path)
        self.uri = uri
        self.cache_dir = cache_dir
        self.model = self.path.name
        self.n_ctx = n_ctx
        self.n_threads = n_threads or _default_threads()
        self._env = env
        self._on_download = on_download
        self._llm: Llama | None = None
        #: the same model without pooling: token rows for :meth:`embed_with_units`
        self._token_llm: Llama | None = None
        #: whether documents' units are pooled from the chunk's run
        #: (``engine.embeddings.late_units``); part of the unit vectors' space key
        self.late_units = late_units
        self.unit_pooling = "late-1" if late_units else "separate"
        self._dims: int | None = None
        self._fingerprint: dict[str, object] | None = None
        self._lock = threading.Lock()
        self._threads_now: int | None = None  # what the context is set to
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        if uri is None and not self.path.is_file():
            raise ProviderError(
                f"local embedding model not found: {self.path} "
                "(run `memdeck model import` or set memorySearch.local.modelPath)"
            )

    @classmethod
    def from_settings(
        cls, local: LocalSettings, env: Mapping[str, str] = os.environ
    ) -> LocalProvider:
        """A provider for ``local.modelPath``: a file, or an ``hf:`` URI downloaded on first use."""
        target = local.model_path
        if target.startswith("hf:"):
            from engine.embeddings.hf_download import HfUri
            from engine.embeddings.registry import models_dir

            cache = Path(local.model_cache_dir) if local.model_cache_dir else models_dir(env) / "hf"
            hf = HfUri.parse(target)
            return cls(hf.local_path(cache), cache_dir=cache, uri=target, env=env)
        return cls(Path(target).expanduser(), cache_dir=local.model_cache_dir, env=env)

    # -- loading -----------------------------------------------------------------
    def _ensure_loaded(self) -> Llama:
        if self._llm is not None:
            return self._llm
        if self.uri is not None and not self.path.is_file():
            from engine.embeddings.hf_download import download

            assert self.cache_dir is not None
            self.path = download(
                self.uri, self.cache_dir, env=self._env, progress=self._on_download
            )
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - depends on installation
            raise ProviderError(f"llama-cpp-python is not installed: {exc}") from exc
        llm = self._open(Llama)
        from llama_cpp import LLAMA_POOLING_TYPE_NONE

        if int(llm.pooling_type()) == LLAMA_POOLING_TYPE_NONE:  # typed str, is an int
            llm.close()
            raise ProviderError(
                f"{self.path.name} has no pooling (one vector per token): memdeck needs a "
                "sentence embedding model, mean or CLS pooled (`memdeck model import` "
                "writes one)"
            )
        self._dims = int(llm.n_embd())
        self._llm = llm
        return llm

    def _open(self, llama: type[Llama], **extra: object) -> Llama:
        """A llama.cpp context on the model file (the caller holds the lock): with the
        fused attention kernel, or without it where llama.cpp cannot make one so (a
        model or a build the kernel does not cover)."""
        if FLASH_ATTENTION:
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                return self._context(llama, fused=True, **extra)
        try:
            return self._context(llama, fused=False, **extra)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(f"cannot load local embedding model {self.path}: {exc}") from exc

    def _context(self, llama: type[Llama], *, fused: bool, **extra: object) -> Llama:
        return llama(
            model_path=str(self.path),
            embedding=True,
            n_ctx=self.n_ctx,
            n_batch=self.n_ctx,
            n_ubatch=self.n_ctx,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            flash_attn=fused,
            verbose=False,
            **extra,  # type: ignore[arg-type]
        )

    def _ensure_token_model(self) -> Llama:
        """The model without pooling, beside the pooled one (the caller holds the
        lock). Its weights are the same mapped file, so it costs a context, not a
        second copy of the model."""
        if self._token_llm is None:
            import ctypes

            import llama_cpp
            from llama_cpp import _logger

            # llama.cpp warns on stderr that the pooling differs from the model's: it
            # is meant to, and the warning would land in the middle of `memdeck index`
            llama_cpp.llama_log_set(_quiet_log(), ctypes.c_void_p(0))
            try:
                self._token_llm = self._open(
                    llama_cpp.Llama, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE
                )
            finally:
                llama_cpp.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))
        return self._token_llm

    @property
    def dims(self) -> int:
        with self._lock:
            if self._dims is None:  # adopted from the index: no model load needed yet
                self._ensure_loaded()
        assert self._dims is not None
        return self._dims

    @property
    def known_dims(self) -> int | None:
        """The size if known without loading the model (None: ``dims`` would load it)."""
        return self._dims

    def adopt_dims(self, dims: int, source: str) -> None:
        """Take the size recorded in an index built with this very model file (same
        name, size and first-MiB hash), so a keyword-only search, ``status`` and an
        unchanged ``index`` never load llama.cpp; the model's own size replaces it
        when the model loads."""
        with self._lock:
            if self._dims is None:
                self._dims = int(dims)

    # -- identity ----------------------------------------------------------------
    def fingerprint(self) -> dict[str, object]:
        """Model file identity: name, size and a hash of its first MiB (cheap, content-based).

        Computed once per provider: the indexer asks for it on every batch.
        """
        if self._fingerprint is not None:
            return dict(self._fingerprint)
        if self.uri is not None:  # the URI names the model, downloaded or not
            return {"provider": self.id, "model": self.model, "provider_key": self.uri}
        h = hashlib.sha256()
        try:
            with self.path.open("rb") as fh:
                h.update(fh.read(1 << 20))
            size = self.path.stat().st_size
        except OSError as exc:
            raise ProviderError(f"cannot read local embedding model {self.path}: {exc}") from exc
        self._fingerprint = {
            "provider": self.id,
            "model": self.model,
            "provider_key": f"{size}:{h.hexdigest()[:16]}",
        }
        return dict(self._fingerprint)

    def describe(self) -> dict[str, object]:
        return {
            "provider": self.id,
            "model": self.model,
            "path": str(self.path),
            "uri": self.uri,
            "dims": self._dims,
            "threads": self.n_threads,
            "context": self.n_ctx,
            "loaded": self._llm is not None,
        }

    # -- embedding ---------------------------------------------------------------
    def token_ids(self, text: str) -> list[int]:
        """The ids llama.cpp feeds the model for ``text`` ([CLS] … [SEP], truncated)."""
        with self._lock:
            ids = _tokens(self._ensure_loaded(), text)
        return ids[: self.n_ctx]

    def _embed(self, texts: Sequence[str], *, threads: int | None = None) -> np.ndarray:
        want = min(self.n_threads, threads or self.n_threads)
        with self._lock:
            llm = self._ensure_loaded()
            self._use_threads(llm, want)
            raw = self._embed_locked(llm, texts)
        return normalize_rows(raw)

    def _use_threads(self, llm: Llama, n: int) -> None:
        """Run the context on ``n`` threads from now on (the caller holds the lock)."""
        if n != self._threads_now:
            llm._ctx.set_n_threads(n, n)
            self._threads_now = n

    @staticmethod
    def _embed_locked(llm: Llama, texts: Sequence[str]) -> np.ndarray:
        """``Llama.embed`` of ``texts`` as a float32 matrix (the caller holds the lock)."""
        try:
            rows = llm.embed(list(texts), normalize=False, truncate=True)
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"local embedding failed: {exc}") from exc
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector: on :data:`QUERY_THREADS` threads, from the cache when the
        same text was embedded lately (the array is read-only: it is shared)."""
        return self.stage_query(text)()

    def stage_query(self, text: str) -> QueryRest:
        """:class:`~engine.embeddings.base.StagedQueries`: the cache lookup and the
        tokenizing now, the model's run in the returned call.

        Never waits: while another caller holds the model (a sync embedding
        documents) or before it is loaded (loading, perhaps downloading, is the
        returned call's work, inside the search's time budget) the returned call
        does all of it, as ``embed_query`` did.
        """
        if not self._lock.acquire(blocking=False):
            return lambda: self._query_vector(text, None)
        try:
            hit = self._cached(text)
            if hit is not None:
                return lambda: hit
            if self._llm is None:
                return lambda: self._query_vector(text, None)
            tokens = _tokens(self._llm, text)
        finally:
            self._lock.release()
        return lambda: self._query_vector(text, tokens)

    def _cached(self, text: str) -> np.ndarray | None:
        """The cached vector of ``text``, now the newest entry (the caller holds the lock)."""
        hit = self._queries.get(text)
        if hit is not None:
            self._queries.move_to_end(text)
        return hit

    def _query_vector(self, text: str, tokens: list[int] | None) -> np.ndarray:
        """``text``'s vector from its ``tokens`` (tokenized here when None), cached."""
        with self._lock:
            hit = self._cached(text)
            if hit is not None:
                return hit
            llm = self._ensure_loaded()
            if tokens is None:
                tokens = _tokens(llm, text)
            self._use_threads(llm, QUERY_THREADS)
            assert self._dims is not None  # set by _ensure_loaded
            try:
                raw = _pooled_embedding(llm, tokens, self._dims)
            except AttributeError:  # llama-cpp-python's internals moved: its public path
                raw = self._embed_locked(llm, [text])[0]
            row: np.ndarray = normalize_rows(raw)
            row.flags.writeable = False
            self._queries[text] = row
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return row

    def forget_queries(self) -> None:
        """Drop the cached query vectors (benchmarks time the model, not the cache)."""
        with self._lock:
            self._queries.clear()

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), DOC_BATCH):
            parts.append(self._embed(texts[start : start + DOC_BATCH]))
            if progress:
                done = min(len(texts), start + DOC_BATCH)
                progress(_Progress(done, len(texts), requests=start // DOC_BATCH + 1))
        return np.vstack(parts)

    def embed_with_units(
        self,
        texts: Sequence[str],
        spans: Sequence[UnitSpans],
        progress: ProgressCallback | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """:class:`~engine.embeddings.base.UnitsWithChunks`: each chunk's vector (the mean of
        its token rows: the pooled embedding, to float32 rounding) and its units'
        vectors from the same run of the model. A model that is not mean pooled, or
        ``late_units`` off, gives the chunks' vectors and no units."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32), []
        if not self.late_units:
            return self.embed_documents(texts, progress), [None] * len(texts)
        vectors: list[np.ndarray] = []
        units: list[np.ndarray | None] = []
        for start in range(0, len(texts), DOC_BATCH):
            part = slice(start, start + DOC_BATCH)
            got = self._late_batch(texts[part], spans[part])
            if got is None:  # not mean pooled: the chunks as before, units on their own
                self.late_units, self.unit_pooling = False, "separate"
                return self.embed_with_units(texts, spans, progress)
            vectors += got[0]
            units += got[1]
            if progress:
                done = min(len(texts), start + DOC_BATCH)
                progress(_Progress(done, len(texts), requests=start // DOC_BATCH + 1))
        return normalize_rows(np.stack(vectors)), units

    def _late_batch(
        self, texts: Sequence[str], spans: Sequence[UnitSpans]
    ) -> tuple[list[np.ndarray], list[np.ndarray | None]] | None:
        """One slice of :meth:`embed_with_units` (None: the model is not mean pooled)."""
        from llama_cpp import LLAMA_POOLING_TYPE_MEAN

        with self._lock:
            if int(self._ensure_loaded().pooling_type()) != LLAMA_POOLING_TYPE_MEAN:
                return None
            tok = self._ensure_token_model()
            assert self._dims is not None

            def tokenize(text: str, special: bool) -> list[int]:
                try:
                    return list(tok.tokenize(text.encode("utf-8"), add_bos=special, special=False))
                except (ValueError, RuntimeError) as exc:
                    raise ProviderError(f"local embedding failed: {exc}") from exc

            seqs = [tokenize(text, True) for text in texts]
            starts = [
                line_token_starts(tokenize, text, ids) if len(ids) <= tok.n_batch else None
                for text, ids in zip(texts, seqs, strict=True)
            ]
            rows = _token_rows(tok, [ids[: tok.n_batch] for ids in seqs], self._dims)
        units = [
            None if at is None else pool_units(r, at, unit_spans)
            for r, at, unit_spans in zip(rows, starts, spans, strict=True)
        ]
        return [r.mean(axis=0) for r in rows], units

    def close(self) -> None:
        with self._lock:
            llm, self._llm = self._llm, None
            tok, self._token_llm = self._token_llm, None
            self._threads_now = None
            self._queries.clear()
        for one in (llm, tok):
            if one is not None:
                with contextlib.suppress(Exception):
                    one.close()
