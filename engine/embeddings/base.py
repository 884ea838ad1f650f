"""The embedding provider protocol every provider implements.

Vectors leave a provider as float32 numpy arrays that are NaN-free and
L2-normalised (``normalize_rows``), so the store and the search pipeline can
treat the dot product as cosine similarity without re-checking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np


class ProviderError(RuntimeError):
    """An embedding request failed. ``retryable`` is False for auth/config errors."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@dataclass(frozen=True)
class EmbedProgress:
    """Progress of one ``embed_documents`` call (items are texts)."""

    items_done: int
    items_total: int
    requests: int = 0
    retries: int = 0


ProgressCallback = Callable[[EmbedProgress], None]


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What the index and the search pipeline need from an embedder."""

    @property
    def id(self) -> str:
        """Provider id as written in config: "local", "openai", "gemini", ..."""
        ...

    @property
    def model(self) -> str:
        """Model name (or GGUF path for local)."""
        ...

    @property
    def dims(self) -> int:
        """Vector dimension; may load the model on first access."""
        ...

    def fingerprint(self) -> dict[str, object]:
        """What identifies this embedder's vector space: provider, model, provider_key
        (endpoint or a hash of endpoint+headers, never the API key itself)."""
        ...

    def describe(self) -> dict[str, object]:
        """Human-facing status: provider, model, endpoint (key redacted), dims."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One normalised float32 vector of shape (dims,)."""
        ...

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Normalised float32 matrix of shape (len(texts), dims), same order as texts."""
        ...

    def close(self) -> None: ...


#: The rest of a staged query embedding: blocks (in native code or I/O, the GIL
#: released) and returns what ``embed_query`` would.
QueryRest = Callable[[], np.ndarray]


@runtime_checkable
class StagedQueries(Protocol):
    """A provider that can split ``embed_query`` into its Python-side preparation
    and the blocking rest.

    A search runs the query embedding on a thread beside its keyword side, which is
    Python and SQLite on the calling thread. Every time the embedding thread needs
    the GIL back (after each call into llama.cpp: tokenizing, the model's settings)
    it waits for the calling thread to let go of it, so the model started ~2 ms
    late. Staged, the preparation runs first on the calling thread and the thread
    only enters native code: the model starts as the thread does.
    """

    def stage_query(self, text: str) -> QueryRest:
        """Prepare ``text``'s embedding now, without waiting on a busy model (never
        blocks behind another caller); the returned call does the rest."""
        ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Replace NaN/inf with 0 and L2-normalise each row (zero rows stay zero)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        row: np.ndarray = normalize_rows(arr[None, :])[0]
        return row
    arr = np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(arr / norms, dtype=np.float32)


class UnitSpan(NamedTuple):
    """One vector unit of a chunk: its first and last line offsets in the chunk
    (0-based, inclusive) and its text (a line, or a paragraph's lines joined)."""

    first: int
    last: int
    text: str


#: A chunk's units, in order.
UnitSpans = Sequence[UnitSpan]


@runtime_checkable
class UnitsWithChunks(Protocol):
    """A provider that can give a chunk's unit vectors in the same call as the
    chunk's own vector, in one of two ways (``unit_pooling``):

    - ``"late-1"``, the local model (``engine.embeddings.late_units``): one run of
      the model over the chunk, each unit's vector mean-pooled from its tokens'
      outputs. Not the vector of the unit's text alone, so stored apart from those.
    - ``"packed"``, a remote API (``engine.embeddings.request_batches.pack_units``):
      each unit's text is embedded on its own, as an input of the request that
      carries its chunk, so the units cost tokens but no requests of their own. The
      vectors are those of the units embedded alone.

    Any other value (``"separate"``) means the units are embedded on their own, in
    calls of their own, after the chunks."""

    unit_pooling: str

    def embed_with_units(
        self,
        texts: Sequence[str],
        spans: Sequence[UnitSpans],
        progress: ProgressCallback | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """(the chunks' vectors, as ``embed_documents`` gives them; per chunk its
        units' normalised vectors, one row per span, or None where they cannot be
        had in this call: for late pooling, a chunk longer than the model's context
        or whose tokens are not its lines' tokens end to end)."""
        ...
