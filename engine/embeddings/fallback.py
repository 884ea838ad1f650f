"""``memorySearch.fallback``: a second provider used once the primary fails.

The switch is one-way for the life of the engine and is recorded (from, to,
why, when) so status and ``memory_search`` can say what happened. Vectors of
the two providers live in different spaces, so a switch in the middle of
indexing must not mix them: ``embed_documents`` raises ``ProviderSwitched`` and
the engine restarts the sync, which now sees a new fingerprint and rebuilds the
index once, atomically. A query that hits the failure gets a ``ProviderError``
(the search falls back to keywords) until that rebuild is done.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from engine.embeddings.base import (
    EmbeddingProvider,
    ProgressCallback,
    ProviderError,
    UnitSpans,
    UnitsWithChunks,
)

ProviderFactory = Callable[[], EmbeddingProvider]

_T = TypeVar("_T")


class ProviderSwitched(RuntimeError):
    """The fallback took over during a call; the caller must re-plan with the new
    fingerprint. Deliberately not a ``ProviderError``: it must not be swallowed as
    an ordinary embedding failure."""


class FallbackProvider:
    """Delegates to the primary until it fails, then to the fallback for good."""

    def __init__(
        self,
        primary_factory: ProviderFactory,
        fallback_factory: ProviderFactory,
        *,
        primary_name: str = "primary",
    ):
        self._fallback_factory = fallback_factory
        self._primary_name = primary_name
        self._lock = threading.RLock()
        self.switch: dict[str, object] | None = None
        #: bumped on every switch, so holders of a cached fingerprint can notice
        self.generation = 0
        self.primary: EmbeddingProvider | None = None
        self.secondary: EmbeddingProvider | None = None
        try:
            self.primary = primary_factory()
        except ProviderError as exc:
            self._switch(exc, "could not start")

    # -- state -------------------------------------------------------------------
    @property
    def active(self) -> EmbeddingProvider:
        current = self.secondary if self.switch else self.primary
        assert current is not None
        return current

    @property
    def id(self) -> str:
        return self.active.id

    @property
    def model(self) -> str:
        return self.active.model

    @property
    def bulk(self) -> bool:
        return bool(getattr(self.active, "bulk", False))

    def _switch(self, exc: Exception, stage: str) -> None:
        with self._lock:
            if self.switch:
                return
            primary_name = getattr(self.primary, "id", None) or self._primary_name
            try:
                self.secondary = self._fallback_factory()
            except ProviderError as fb_exc:
                raise ProviderError(
                    f"{primary_name} failed ({exc}) and the fallback could not start: {fb_exc}"
                ) from fb_exc
            self.switch = {
                "from": primary_name,
                "to": self.secondary.id,
                "reason": f"{primary_name} {stage}: {exc}",
                "at": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            }
            self.generation += 1
            if self.primary is not None:
                with contextlib.suppress(Exception):
                    self.primary.close()

    def follow_index(self, stored: Mapping[str, object]) -> bool:
        """Switch to the fallback, without a request to the primary, when ``stored``
        (the index's fingerprint) is the fallback's vector space and not the
        primary's: an earlier process switched and rebuilt the index with it. Its
        searches then embed the query as the index was embedded. True when it
        switched."""
        keys = ("provider", "model", "provider_key")
        with self._lock:
            if self.switch or self.primary is None or stored.get("provider") is None:
                return False
            mine = self.primary.fingerprint()
            if all(stored.get(k) == mine.get(k) for k in keys):
                return False
            try:
                secondary = self._fallback_factory()
                theirs = secondary.fingerprint()
            except ProviderError:
                return False
            if not all(stored.get(k) == theirs.get(k) for k in keys):
                with contextlib.suppress(Exception):
                    secondary.close()
                return False
            primary_name = getattr(self.primary, "id", None) or self._primary_name
            self.secondary = secondary
            self.switch = {
                "from": primary_name,
                "to": secondary.id,
                "reason": (
                    f"the index was built with the fallback after {primary_name} failed;"
                    f" `memdeck index` tries {primary_name} again"
                ),
                "at": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            }
            self.generation += 1
            return True

    def _guard(self, stage: str, call: Callable[[EmbeddingProvider], _T]) -> _T:
        """Run ``call`` on the active provider; a primary failure switches over."""
        if self.switch:
            return call(self.active)
        try:
            return call(self.active)
        except ProviderError as exc:
            if getattr(exc, "pending", None) is not None:
                raise  # batch jobs still running is not a failure
            self._switch(exc, stage)
            raise ProviderSwitched(str(self.switch["reason"]) if self.switch else str(exc)) from exc

    # -- protocol ----------------------------------------------------------------
    @property
    def dims(self) -> int:
        # Asked before any vector is written, so switching here needs no restart.
        if not self.switch:
            try:
                return self.active.dims
            except ProviderError as exc:
                self._switch(exc, "failed")
        return self.active.dims

    @property
    def known_dims(self) -> int | None:
        """See ``RemoteProvider.known_dims``; a provider without it never needs a request."""
        active = self.active
        return active.known_dims if hasattr(active, "known_dims") else active.dims

    def adopt_dims(self, dims: int, source: str) -> None:
        adopt = getattr(self.active, "adopt_dims", None)
        if adopt is not None:
            adopt(dims, source)

    def forget_adopted_dims(self) -> None:
        forget = getattr(self.active, "forget_adopted_dims", None)
        if forget is not None:
            forget()

    def fingerprint(self) -> dict[str, object]:
        return self.active.fingerprint()

    def describe(self) -> dict[str, object]:
        out = dict(self.active.describe())
        out["fallback"] = dict(self.switch) if self.switch else None
        out["fallback_provider"] = (
            self.secondary.id if self.secondary is not None else "configured, not started"
        )
        return out

    def embed_query(self, text: str) -> np.ndarray:
        try:
            return self._guard("failed", lambda p: p.embed_query(text))
        except ProviderSwitched as exc:
            raise ProviderError(
                f"{exc}; switched to the fallback, keyword search until the index is rebuilt"
            ) from exc

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        return self._guard("failed", lambda p: p.embed_documents(texts, progress))

    # -- unit vectors beside the chunks (UnitsWithChunks), as the active provider does
    @property
    def unit_pooling(self) -> str:
        return str(getattr(self.active, "unit_pooling", "separate"))

    def embed_with_units(
        self,
        texts: Sequence[str],
        spans: Sequence[UnitSpans],
        progress: ProgressCallback | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray | None]]:
        def call(p: EmbeddingProvider) -> tuple[np.ndarray, list[np.ndarray | None]]:
            if isinstance(p, UnitsWithChunks):
                return p.embed_with_units(texts, spans, progress)
            return p.embed_documents(texts, progress), [None] * len(texts)

        return self._guard("failed", call)

    def close(self) -> None:
        for p in (self.primary, self.secondary):
            if p is not None:
                with contextlib.suppress(Exception):
                    p.close()
