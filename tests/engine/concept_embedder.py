"""A tiny deterministic embedder for pipeline tests whose numbers are worked by hand.

Each text maps to a bag of "concepts" (words listed in CONCEPTS, plus synonyms);
the vector has one axis per concept. It implements the real provider protocol,
so the real store, sqlite-vec and search pipeline run unchanged; only the model
is replaced by something whose cosines can be computed on paper.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.embeddings.base import ProgressCallback, normalize_rows

CONCEPTS = {
    "cat": ["cat", "kitten", "miso", "feline"],
    "medicine": ["pill", "pills", "tablet", "medication", "methimazole", "dose"],
    "train": ["train", "rail", "porto"],
    "database": ["postgres", "database", "sqlite", "migration"],
    "coffee": ["coffee", "espresso", "beans"],
    "other": ["misc"],
}


class ConceptEmbedder:
    id = "concept"
    model = "concept-v1"

    def __init__(self) -> None:
        self.calls = 0
        self.texts_embedded = 0
        self.axes = list(CONCEPTS)

    @property
    def dims(self) -> int:
        return len(self.axes)

    def fingerprint(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "provider_key": "test"}

    def describe(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "dims": self.dims}

    def _vec(self, text: str) -> np.ndarray:
        words = text.lower().replace(".", " ").replace(",", " ").split()
        v = np.zeros(self.dims, dtype=np.float32)
        for i, axis in enumerate(self.axes):
            v[i] = sum(1 for w in words if w in CONCEPTS[axis])
        if not v.any():
            v[self.axes.index("other")] = 1.0
        return v

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        return normalize_rows(self._vec(text))

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        return normalize_rows(np.stack([self._vec(t) for t in texts]))

    def close(self) -> None:
        pass
