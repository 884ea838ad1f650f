"""Remote embedding providers over HTTP: openai, mistral, custom OpenAI-compatible
endpoints, voyage, gemini and ollama.

Each provider only knows its wire format (URL, body, where the vectors are in
the answer). Everything else is shared: endpoint and key resolution
(``remote_endpoint``), retries/timeouts/redaction (``http_retry``), request
sizing (``request_batches``) and batch jobs (``batch``/``batch_wire``).

Dimensions: for a provider's public endpoint the model's documented size is
used without a request; a custom endpoint (or an unknown model) is asked once
with a short probe, because a self-hosted "text-embedding-3-small" may be
anything. Every answer is checked against that size.
"""

from __future__ import annotations

import abc
import base64
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.config.settings import PROVIDER_DEFAULT_MODELS, Settings
from engine.embeddings.base import (
    EmbedProgress,
    ProgressCallback,
    ProviderError,
    UnitSpans,
    normalize_rows,
)
from engine.embeddings.batch import BatchRunner, EmbeddingsDeferred, JobRegistry
from engine.embeddings.dims_memo import DimsMemo
from engine.embeddings.http_retry import (
    HttpTransport,
    Redactor,
    RetryPolicy,
    secret_header_values,
    url_secrets,
)
from engine.embeddings.remote_endpoint import (
    ENV_KEYS,
    KEY_OPTIONAL,
    REMOTE_NAMES,
    Endpoint,
    merge_headers,
    resolve_endpoint,
    uses_remote_block,
)
from engine.embeddings.request_batches import (
    MAX_REQUEST_BYTES,
    RequestLimits,
    pack_units,
    split_by_bytes,
)

KNOWN_DIMS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "mistral-embed": 1024,
    "voyage-4-large": 1024,
    "voyage-4": 1024,
    "voyage-4-lite": 1024,
    "voyage-3-large": 1024,
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-code-3": 1024,
    "gemini-embedding-001": 3072,
    "nomic-embed-text": 768,
}
MULTIMODAL_MODELS = ("gemini-embedding-2-preview", "gemini-embedding-2")
GEMINI_OUTPUT_DIMS = (768, 1536, 3072)
PROBE_TEXT = "memdeck dimension probe"


#: what a packed request to a self-hosted endpoint may carry (its limits are unknown):
#: twice the chunk-only byte budget
SELF_HOSTED_LIMITS = RequestLimits(512, 2 * MAX_REQUEST_BYTES)

#: the largest vector accepted from an endpoint (models go up to 4,096; a larger
#: "size" is a broken answer, and would cost every later search)
MAX_DIMS = 16_384


class RemoteProvider(abc.ABC):
    """Shared behaviour of the HTTP providers; subclasses supply the wire format."""

    id: str = "remote"
    #: most inputs one request may carry (besides the byte budget)
    max_items: int = 128

    def __init__(
        self,
        endpoint: Endpoint,
        model: str,
        policy: RetryPolicy,
        *,
        batch_settings: Any = None,
        registry: JobRegistry | None = None,
        dims_memo: DimsMemo | None = None,
        sleep: Callable[[float], None] | None = None,
    ):
        self.endpoint = endpoint
        self.model = model
        self.policy = policy
        headers = merge_headers(self._auth_headers(endpoint.api_key), endpoint.headers)
        redactor = Redactor(
            [endpoint.api_key, *secret_header_values(headers), *url_secrets(endpoint.base_url)]
        )
        kwargs: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
        self.transport = HttpTransport(
            headers=headers,
            policy=policy,
            redactor=redactor,
            label=self.id,
            **kwargs,
        )
        requested = self._requested_dims()
        documented = None if endpoint.custom else self._documented_dims()
        self._dims: int | None = requested or documented
        self.dims_source = "requested" if requested else "documented" if documented else "unknown"
        self.dims_memo = dims_memo or DimsMemo(None)
        #: set by ``forget_adopted_dims``: the next size comes from the endpoint itself
        self._ask_endpoint = False
        self.scope = f"{self.id}|{self.model}|{self._provider_key()}"
        self._dims_lock = threading.Lock()
        self.batch: BatchRunner | None = None
        wire = self._batch_wire()
        if batch_settings is not None and batch_settings.enabled and wire is not None:
            self.batch = BatchRunner(
                wire,
                batch_settings,
                registry or JobRegistry(None),
                scope=self.scope,
                **kwargs,
            )

    # -- to override -------------------------------------------------------------
    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _documented_dims(self) -> int | None:
        return KNOWN_DIMS.get(self.model)

    def _requested_dims(self) -> int | None:
        """A size the request itself asks for (trusted on any endpoint)."""
        return None

    def _space_extra(self) -> tuple[object, ...]:
        """Request options that change the vector space (part of the cache key)."""
        return ()

    @abc.abstractmethod
    def _post_texts(
        self, texts: Sequence[str], kind: str, on_retry: Callable[[int, float, str], None] | None
    ) -> list[Any]:
        """One request for ``texts``; the raw vectors in input order (each wire format's own)."""

    def _batch_wire(self) -> Any:
        return None

    # -- protocol ----------------------------------------------------------------
    @property
    def bulk(self) -> bool:
        """True while batch jobs are in use: the indexer then sends all texts at once."""
        return self.batch is not None and self.batch.active

    @property
    def dims(self) -> int:
        if self._dims is None:
            with self._dims_lock:
                if self._dims is None:
                    self._probe_dims()
        assert self._dims is not None
        return self._dims

    @property
    def known_dims(self) -> int | None:
        """The size if known without asking the endpoint (None: ``dims`` would probe)."""
        return self._dims

    def adopt_dims(self, dims: int, source: str) -> None:
        """Take a size learned elsewhere (the index built with this endpoint), so
        no probe request is sent; every answer is still checked against it."""
        with self._dims_lock:
            if self._dims is None:
                self._dims = int(dims)
                self.dims_source = source

    def forget_adopted_dims(self) -> None:
        """Drop a size taken from the index or remembered from an earlier probe, so
        the next ``dims`` asks the endpoint (``memdeck index --force`` after an
        endpoint changed its model)."""
        with self._dims_lock:
            if self.dims_source == "index" or self.dims_source.startswith("remembered"):
                self._dims = None
                self.dims_source = "unknown"
            self._ask_endpoint = True

    def _probe_dims(self) -> None:
        """The size seen last time if there is one (no request: every answer is still
        checked against it, and a status or search must not wait on a slow endpoint
        before it starts); else ask the endpoint once (see ``dims_memo``)."""
        remembered = None if self._ask_endpoint else self.dims_memo.get(self.scope)
        if remembered is not None:
            self._dims = remembered
            self.dims_source = "remembered"
            return
        try:
            rows = self._post_texts([PROBE_TEXT], "document", None)
        except ProviderError as exc:
            remembered = self.dims_memo.get(self.scope) if exc.retryable else None
            if remembered is None:
                raise
            self._dims = remembered
            self.dims_source = f"remembered (probe failed: {exc})"
            return
        self._as_matrix(rows, 1)  # sets and remembers the size

    def _provider_key(self) -> str:
        return self.endpoint.key_hash(*self._space_extra())

    def fingerprint(self) -> dict[str, object]:
        return {"provider": self.id, "model": self.model, "provider_key": self._provider_key()}

    def describe(self) -> dict[str, object]:
        stats = self.transport.stats
        out: dict[str, object] = {
            "provider": self.id,
            "model": self.model,
            **self.endpoint.redacted(),
            "dims": self._dims,
            "dims_source": self.dims_source,
            "timeout_s": self.policy.timeout,
            "max_retries": self.policy.max_retries,
            "requests": stats.requests,
            "retries": stats.retries,
            "last_error": stats.last_error,
            "fallback": None,
        }
        if self.batch is not None:
            out["batch"] = self.batch.describe()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        rows = self._post_texts([text], "query", None)
        row: np.ndarray = normalize_rows(self._as_matrix(rows, 1))[0]
        return row

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        if self.bulk:
            return self._embed_with_batch(texts, progress)
        return self._embed_direct(texts, progress)

    def packed_limits(self) -> RequestLimits | None:
        """What a request may carry when units ride beside their chunks
        (:meth:`embed_with_units`); None: this API gains nothing from it (one text
        per request, or every input counted as a request against the rate limit)."""
        return None

    @property
    def unit_pooling(self) -> str:
        """``"packed"`` (:class:`~engine.embeddings.base.UnitsWithChunks`) when units
        can ride in their chunks' requests; ``"separate"`` with batch jobs configured
        (``remote.batch``: units would go in the jobs, on their own) or when the API
        has no use for it (:meth:`packed_limits`)."""
        return "packed" if self.packed_limits() is not None and self.batch is None else "separate"

    def embed_with_units(
        self,
        texts: Sequence[str],
        spans: Sequence[UnitSpans],
        progress: ProgressCallback | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """The chunks' vectors and each chunk's units' vectors, every unit's text an
        input of its own in its chunk's request (``request_batches.pack_units``):
        as many requests as the chunks alone would need, within :meth:`packed_limits`."""
        limits = self.packed_limits()
        if limits is None or self.unit_pooling != "packed":
            return self.embed_documents(texts, progress), [None] * len(texts)
        groups = [[text, *(u.text for u in us)] for text, us in zip(texts, spans, strict=True)]
        got: dict[tuple[int, int], np.ndarray] = {}
        stats = self.transport.stats
        req0, retry0 = stats.requests, stats.retries
        done = 0  # chunks whose last input has been answered
        for slots in pack_units(groups, limits):
            rows = self._post_texts([groups[g][k] for g, k in slots], "document", None)
            got.update(zip(slots, normalize_rows(self._as_matrix(rows, len(slots))), strict=True))
            done += sum(1 for g, k in slots if k == len(groups[g]) - 1)
            if progress is not None:
                progress(
                    EmbedProgress(
                        items_done=done,
                        items_total=len(texts),
                        requests=stats.requests - req0,
                        retries=stats.retries - retry0,
                    )
                )
        chunks = np.stack([got[(g, 0)] for g in range(len(groups))])
        units = [
            np.stack([got[(g, k)] for k in range(1, len(items))])
            if len(items) > 1
            else np.zeros((0, chunks.shape[1]), dtype=np.float32)
            for g, items in enumerate(groups)
        ]
        return chunks, list(units)

    def close(self) -> None:
        self.transport.close()

    # -- direct requests ---------------------------------------------------------
    def _embed_direct(
        self, texts: list[str], progress: ProgressCallback | None, *, offset: int = 0
    ) -> np.ndarray:
        stats = self.transport.stats
        req0, retry0 = stats.requests, stats.retries
        total = len(texts) + offset
        done = offset

        def report() -> None:
            if progress is not None:
                progress(
                    EmbedProgress(
                        items_done=done,
                        items_total=total,
                        requests=stats.requests - req0,
                        retries=stats.retries - retry0,
                    )
                )

        def on_retry(_n: int, _delay: float, _why: str) -> None:
            report()

        parts: list[np.ndarray] = []
        for group in split_by_bytes(texts, MAX_REQUEST_BYTES, self.max_items):
            chunk = [texts[i] for i in group]
            rows = self._post_texts(chunk, "document", on_retry)
            parts.append(self._as_matrix(rows, len(chunk)))
            done += len(chunk)
            report()
        return normalize_rows(np.vstack(parts))

    def _as_matrix(self, rows: Any, expected: int) -> np.ndarray:
        """Validate a decoded answer: count, numbers only, one consistent size."""
        if not isinstance(rows, list) or len(rows) != expected:
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            raise ProviderError(f"{self.id}: expected {expected} embeddings, got {got}")
        sizes = set()
        for row in rows:
            if not isinstance(row, list) or not row:
                raise ProviderError(f"{self.id}: an embedding is not a list of numbers")
            sizes.add(len(row))
        if len(sizes) != 1:
            raise ProviderError(f"{self.id}: embeddings of different sizes {sorted(sizes)}")
        size = sizes.pop()
        if self._dims is not None and size != self._dims:
            hint = (
                " (the size recorded in the index; `memdeck index --force` rebuilds it)"
                if self.dims_source == "index"
                else ""
            )
            raise ProviderError(
                f"{self.id}: model {self.model} returned {size}-dimensional vectors, "
                f"expected {self._dims}{hint}"
            )
        if size > MAX_DIMS:
            raise ProviderError(
                f"{self.id}: model {self.model} returned {size:,}-dimensional vectors; no "
                f"embedding model has more than {MAX_DIMS:,}: check baseUrl/model"
            )
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise ProviderError(
                f"{self.id}: an embedding holds something other than numbers"
            ) from None
        if not np.isfinite(matrix).all():
            raise ProviderError(f"{self.id}: an embedding holds NaN or infinite numbers")
        if not matrix.any(axis=1).all():
            raise ProviderError(f"{self.id}: an embedding is all zeros (no direction to rank by)")
        if self._dims is None:
            self._dims = size  # the first answer of a custom endpoint fixes the size
            self.dims_source = "probed"
            self.dims_memo.put(self.scope, size)
        return matrix

    # -- batch jobs --------------------------------------------------------------
    def _embed_with_batch(self, texts: list[str], progress: ProgressCallback | None) -> np.ndarray:
        assert self.batch is not None
        dims = self.dims

        def hook(ready: int, wanted: int) -> None:
            if progress is not None:
                stats = self.transport.stats
                progress(EmbedProgress(ready, wanted, stats.requests, stats.retries))

        outcome = self.batch.run(texts, hook)
        out = np.zeros((len(texts), dims), dtype=np.float32)
        got = np.zeros(len(texts), dtype=bool)
        if outcome.vectors:
            idx = sorted(outcome.vectors)
            out[idx] = self._as_matrix([outcome.vectors[i] for i in idx], len(idx))
            got[idx] = True
        if outcome.direct:
            out[outcome.direct] = self._embed_direct([texts[i] for i in outcome.direct], progress)
            got[outcome.direct] = True
        out = normalize_rows(out)
        if outcome.pending:
            ready = {int(i): out[i] for i in np.flatnonzero(got)}
            raise EmbeddingsDeferred(
                f"{self.id}: {len(outcome.pending)} embeddings are in batch jobs that are "
                "still running (remote.batch.wait = false); the next sync collects them",
                ready,
                len(outcome.pending),
            )
        return out


class OpenAICompatibleProvider(RemoteProvider):
    """``POST {base}/embeddings {model, input}`` → ``data[].embedding`` (openai, mistral,
    any custom OpenAI-compatible server)."""

    def __init__(self, name: str, *args: Any, **kwargs: Any):
        self.id = name
        super().__init__(*args, **kwargs)

    def _post_texts(
        self, texts: Sequence[str], kind: str, on_retry: Callable[[int, float, str], None] | None
    ) -> list[Any]:
        payload = self.transport.request(
            "POST",
            f"{self.endpoint.base_url}/embeddings",
            json_body=self._body(texts, kind),
            on_retry=on_retry,
        )
        return _openai_rows(payload, self.id)

    def _body(self, texts: Sequence[str], kind: str) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts)}

    def packed_limits(self) -> RequestLimits | None:
        """OpenAI takes 2,048 inputs and 300,000 tokens a request; Mistral 256 inputs
        (more are refused: "Too many inputs in request") and ~16,000 tokens; a
        self-hosted OpenAI-compatible server gets ``SELF_HOSTED_LIMITS``."""
        if self.id == "mistral":
            return RequestLimits(256, 16_000)
        if self.endpoint.custom:
            return SELF_HOSTED_LIMITS
        return RequestLimits(2_048, 64_000)

    def _batch_wire(self) -> Any:
        if self.id != "openai":
            return None
        from engine.embeddings.batch_wire import OpenAIStyleBatch

        return OpenAIStyleBatch(self.transport, self.endpoint.base_url, self.model)


class VoyageProvider(OpenAICompatibleProvider):
    """The OpenAI shape plus ``input_type`` (query or document)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__("voyage", *args, **kwargs)

    def _body(self, texts: Sequence[str], kind: str) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts), "input_type": kind}

    def packed_limits(self) -> RequestLimits | None:
        """Voyage takes 1,000 inputs a request and 120,000 tokens (voyage-3.5 and
        -large; more for the lite models); its rate limits count tokens, not inputs."""
        if self.endpoint.custom:
            return SELF_HOSTED_LIMITS
        return RequestLimits(1_000, 64_000)

    def _batch_wire(self) -> Any:
        from engine.embeddings.batch_wire import OpenAIStyleBatch

        return OpenAIStyleBatch(
            self.transport,
            self.endpoint.base_url,
            self.model,
            name="voyage",
            input_type="document",
        )


def _openai_rows(payload: Any, who: str) -> list[Any]:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise ProviderError(f"{who}: answer has no data[] list of embeddings")
    if all(isinstance(d, dict) and isinstance(d.get("index"), int) for d in data):
        data = sorted(data, key=lambda d: d["index"])
    return [d.get("embedding") if isinstance(d, dict) else None for d in data]


class GeminiProvider(RemoteProvider):
    """``models/<m>:embedContent`` for queries, ``:batchEmbedContents`` for documents;
    key in ``x-goog-api-key``; ``outputDimensionality`` for Gemini Embedding 2,
    which also embeds images and audio (``embed_media``)."""

    id = "gemini"
    max_items = 100
    # packed_limits: None. Each input of a batchEmbedContents call counts as a request
    # against the per-minute quota, so units in the chunks' calls would still cost
    # ~9x the requests; unit vectors stay off unless store.vector.lines asks.

    def __init__(self, *args: Any, output_dimensionality: int = 3072, **kwargs: Any):
        self.output_dimensionality = output_dimensionality
        super().__init__(*args, **kwargs)
        name = self.model.removeprefix("models/")
        self.model_path = f"models/{name}"
        self.multimodal_capable = name in MULTIMODAL_MODELS

    @property
    def _is_v2(self) -> bool:
        return self.model.removeprefix("models/") in MULTIMODAL_MODELS

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": key} if key else {}

    def _documented_dims(self) -> int | None:
        return KNOWN_DIMS.get(self.model.removeprefix("models/"))

    def _requested_dims(self) -> int | None:
        return self.output_dimensionality if self._is_v2 else None

    def _space_extra(self) -> tuple[object, ...]:
        return (self.output_dimensionality,) if self._is_v2 else ()

    def _extra(self) -> dict[str, Any]:
        return {"outputDimensionality": self.output_dimensionality} if self._is_v2 else {}

    def _request(self, parts: list[dict[str, Any]], task: str) -> dict[str, Any]:
        return {
            "model": f"models/{self.model.removeprefix('models/')}",
            "content": {"parts": parts},
            "taskType": task,
            **self._extra(),
        }

    def _post_texts(
        self, texts: Sequence[str], kind: str, on_retry: Callable[[int, float, str], None] | None
    ) -> list[Any]:
        base = f"{self.endpoint.base_url}/models/{self.model.removeprefix('models/')}"
        if kind == "query":
            payload = self.transport.request(
                "POST",
                f"{base}:embedContent",
                json_body=self._request([{"text": texts[0]}], "RETRIEVAL_QUERY"),
                on_retry=on_retry,
            )
            emb = payload.get("embedding") if isinstance(payload, dict) else None
            if not isinstance(emb, dict):
                raise ProviderError("gemini: answer has no embedding")
            return [emb.get("values")]
        payload = self.transport.request(
            "POST",
            f"{base}:batchEmbedContents",
            json_body={
                "requests": [self._request([{"text": t}], "RETRIEVAL_DOCUMENT") for t in texts]
            },
            on_retry=on_retry,
        )
        embs = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(embs, list):
            raise ProviderError("gemini: answer has no embeddings[] list")
        return [e.get("values") if isinstance(e, dict) else None for e in embs]

    def embed_media(
        self, items: Sequence[tuple[str, bytes]], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Embed images/audio (mime type, bytes), one request each (they are large)."""
        if not self.multimodal_capable:
            raise ProviderError(f"gemini: {self.model} cannot embed images or audio")
        base = f"{self.endpoint.base_url}/models/{self.model.removeprefix('models/')}"
        rows = []
        for n, (mime, data) in enumerate(items, start=1):
            part = {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode()}}
            payload = self.transport.request(
                "POST",
                f"{base}:embedContent",
                json_body=self._request([part], "RETRIEVAL_DOCUMENT"),
            )
            emb = payload.get("embedding") if isinstance(payload, dict) else None
            rows.append(emb.get("values") if isinstance(emb, dict) else None)
            if progress is not None:
                stats = self.transport.stats
                progress(EmbedProgress(n, len(items), stats.requests, stats.retries))
        if not rows:
            return np.zeros((0, self.dims), dtype=np.float32)
        return normalize_rows(self._as_matrix(rows, len(rows)))

    def _batch_wire(self) -> Any:
        from engine.embeddings.batch_wire import GeminiBatch

        return GeminiBatch(
            self.transport,
            self.endpoint.base_url,
            f"models/{self.model.removeprefix('models/')}",
            self._extra(),
        )


class OllamaProvider(RemoteProvider):
    """``POST {base}/api/embeddings {model, prompt}`` → ``embedding``; one text a request."""

    id = "ollama"
    max_items = 1

    def __init__(self, endpoint: Endpoint, *args: Any, **kwargs: Any):
        # OpenClaw's chat config often points Ollama at its OpenAI shim (``…/v1``);
        # the native embeddings API lives at the server root.
        base = endpoint.base_url.removesuffix("/v1")
        if base != endpoint.base_url:
            endpoint = Endpoint(
                endpoint.provider,
                base,
                endpoint.api_key,
                endpoint.key_source,
                endpoint.headers,
                endpoint.base_source,
            )
        super().__init__(endpoint, *args, **kwargs)

    def _documented_dims(self) -> int | None:
        return None  # a local server: whatever is pulled under that name decides

    def _post_texts(
        self, texts: Sequence[str], kind: str, on_retry: Callable[[int, float, str], None] | None
    ) -> list[Any]:
        rows = []
        for text in texts:
            payload = self.transport.request(
                "POST",
                f"{self.endpoint.base_url}/api/embeddings",
                json_body={"model": self.model, "prompt": text},
                on_retry=on_retry,
            )
            if not isinstance(payload, dict) or "embedding" not in payload:
                raise ProviderError("ollama: answer has no embedding")
            rows.append(payload["embedding"])
        return rows


# -- factory entry points (see engine.embeddings.factory) ------------------------
def model_for(name: str, settings: Settings) -> str:
    ms = settings.memory_search
    if ms.model and uses_remote_block(name, settings) and ms.provider in (name, "auto", "local"):
        return ms.model
    return PROVIDER_DEFAULT_MODELS[name]


def _beside_index(settings: Settings, what: str) -> Path:
    """Small state files live next to the index: ``<index>.remote-dims.json``..."""
    index = settings.index_path
    return index.with_name(f"{index.name}.remote-{what}.json")


def batch_registry_path(settings: Settings) -> Path:
    index = settings.index_path
    return index.with_name(index.name + ".batch-jobs.json")


def create_remote_provider(
    name: str,
    settings: Settings,
    env: Mapping[str, str],
    *,
    sleep: Callable[[float], None] | None = None,
) -> RemoteProvider:
    """Build provider ``name`` from settings; raises ``ProviderError`` when it cannot work."""
    if name not in REMOTE_NAMES:
        raise ProviderError(f"unknown remote embedding provider {name!r}")
    ms = settings.memory_search
    endpoint = resolve_endpoint(name, settings, env)
    if endpoint.api_key is None and name not in KEY_OPTIONAL and not endpoint.custom:
        alias = "google" if name == "gemini" else name
        raise ProviderError(
            f"{name}: no API key; set {settings.memory_search_path}.remote.apiKey, "
            f"models.providers.{alias}.apiKey or {ENV_KEYS[name]}"
        )
    policy = RetryPolicy.from_env(env)
    model = model_for(name, settings)
    kwargs: dict[str, Any] = {
        "sleep": sleep,
        "dims_memo": DimsMemo(_beside_index(settings, "dims")),
    }
    if ms.remote.batch.enabled and name in ("openai", "gemini", "voyage"):
        kwargs["batch_settings"] = ms.remote.batch
        kwargs["registry"] = JobRegistry(batch_registry_path(settings))
    if name in ("openai", "mistral"):
        return OpenAICompatibleProvider(name, endpoint, model, policy, **kwargs)
    if name == "voyage":
        return VoyageProvider(endpoint, model, policy, **kwargs)
    if name == "gemini":
        dims = ms.output_dimensionality
        if model.removeprefix("models/") in MULTIMODAL_MODELS and dims not in GEMINI_OUTPUT_DIMS:
            raise ProviderError(
                f"gemini: outputDimensionality must be one of {GEMINI_OUTPUT_DIMS}, got {dims}"
            )
        return GeminiProvider(endpoint, model, policy, output_dimensionality=dims, **kwargs)
    return OllamaProvider(endpoint, model, policy, **kwargs)
