"""A numpy forward pass of a BERT encoder, the yardstick for ``model import``.

It is written from the BERT architecture (post-LayerNorm encoder blocks,
GELU feed-forward, mean or CLS pooling) and runs on the float32 source
weights, so agreement with llama.cpp on the converted GGUF shows that the
tensor mapping, the dtype conversion and the graph all line up. It is slow
and only used for verification, never for indexing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(var + eps) * weight + bias)


def _gelu(x: np.ndarray) -> np.ndarray:
    # tanh approximation; differs from the erf form by < 1e-3 and is what ggml computes
    return np.asarray(0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3))))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.asarray(e / e.sum(axis=-1, keepdims=True))


class BertReference:
    """Embeds token ids with the float32 weights (HF names without the ``bert.`` prefix)."""

    def __init__(
        self, config: Mapping[str, Any], tensors: Mapping[str, np.ndarray], pooling: str = "mean"
    ):
        self.t = tensors
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.pooling = pooling

    def _linear(self, x: np.ndarray, prefix: str) -> np.ndarray:
        return np.asarray(x @ self.t[prefix + ".weight"].T + self.t[prefix + ".bias"])

    def _ln(self, x: np.ndarray, prefix: str) -> np.ndarray:
        return _layer_norm(x, self.t[prefix + ".weight"], self.t[prefix + ".bias"], self.eps)

    def hidden_states(self, ids: Sequence[int]) -> np.ndarray:
        t = self.t
        n = len(ids)
        x = (
            t["embeddings.word_embeddings.weight"][np.asarray(ids)]
            + t["embeddings.position_embeddings.weight"][:n]
            + t["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        d = x.shape[1]
        hd = d // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (
                self._linear(x, p + f"attention.self.{w}").reshape(n, self.heads, hd)
                for w in ("query", "key", "value")
            )
            scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
            ctx = np.einsum("hqk,khd->qhd", _softmax(scores), v).reshape(n, d)
            x = self._ln(
                self._linear(ctx, p + "attention.output.dense") + x,
                p + "attention.output.LayerNorm",
            )
            ff = self._linear(_gelu(self._linear(x, p + "intermediate.dense")), p + "output.dense")
            x = self._ln(ff + x, p + "output.LayerNorm")
        return x

    def embed(self, ids: Sequence[int]) -> np.ndarray:
        """The pooled, L2-normalised sentence vector for one token-id sequence."""
        h = self.hidden_states(ids)
        vec = h[0] if self.pooling == "cls" else h.mean(axis=0)
        return np.asarray(vec / np.linalg.norm(vec), dtype=np.float32)
