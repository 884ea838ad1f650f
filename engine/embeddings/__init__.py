"""Embedding providers behind one protocol (``base.EmbeddingProvider``)."""

from engine.embeddings.base import (
    EmbeddingProvider,
    EmbedProgress,
    ProgressCallback,
    ProviderError,
    normalize_rows,
)

__all__ = [
    "EmbedProgress",
    "EmbeddingProvider",
    "ProgressCallback",
    "ProviderError",
    "normalize_rows",
]
