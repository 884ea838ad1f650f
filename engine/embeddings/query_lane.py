"""A search's query embedding, run beside its keyword side.

The query vector (llama.cpp or HTTP, both release the GIL) is computed while the
search ranks the keyword side, so a hybrid search costs max(embed, keyword)
rather than their sum. :func:`embed_query_in_background` starts it and returns a
future of ``(vector, ms)``; the search waits on it for at most its time budget
and cancels it when it gives up.

A provider that stages its queries (:class:`StagedQueries`, the local model) is
prepared on the caller's thread and its rest runs on the process's one
:class:`QueryLane` thread. Any other provider gets a daemon thread of its own.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from concurrent.futures import Future

import numpy as np

from engine.embeddings.base import EmbeddingProvider, ProviderError, QueryRest, StagedQueries

__all__ = ["QueryLane", "QueryVector", "embed_query_in_background"]

#: the query vector and the milliseconds its embedding took
QueryVector = tuple[np.ndarray, float]


def embed_query_in_background(provider: EmbeddingProvider, text: str) -> Future[QueryVector]:
    """The query embedding of ``text``, started beside the caller's work.

    A staged provider is prepared here, so the model starts without waiting for
    the GIL while the caller ranks the keyword side, and its rest runs on the
    long-lived :class:`QueryLane` thread: starting a thread per search made the
    search's thread wait for the new one to get the GIL (~0.7 ms a search in
    ``memdeck mcp``, sampled). Any other provider gets a daemon thread of its
    own: a search that stopped waiting at its budget must not keep the process
    alive at exit (a pool's workers are joined then), and a hung provider must
    not hold a thread that later searches queue behind.
    """
    future: Future[QueryVector] = Future()
    t0 = time.perf_counter()
    if isinstance(provider, StagedQueries):
        try:
            rest = provider.stage_query(text)
        except Exception as exc:  # handed to the waiting search, as from the thread
            future.set_exception(exc)
            return future
        QueryLane.shared().submit(future, rest, t0)
        return future

    def run() -> None:
        _fulfil(future, lambda: provider.embed_query(text), t0)

    threading.Thread(target=run, name="memdeck-query-embed", daemon=True).start()
    return future


class QueryLane:
    """One daemon thread that runs staged query embeddings in turn (they take the
    provider's lock one at a time anyway). A search that gave up at its budget has
    cancelled its future, and its rest is skipped if it has not started."""

    _shared: QueryLane | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._jobs: queue.SimpleQueue[tuple[Future[QueryVector], QueryRest, float]] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._run, name="memdeck-query-embed", daemon=True).start()

    @classmethod
    def shared(cls) -> QueryLane:
        """The process's lane (a new one in a forked child: threads do not fork)."""
        with cls._guard:
            lane = cls._shared
            if lane is None or lane.pid != os.getpid():
                lane = cls._shared = cls()
            return lane

    def submit(self, future: Future[QueryVector], rest: QueryRest, t0: float) -> None:
        self._jobs.put((future, rest, t0))

    def _run(self) -> None:
        while True:
            _fulfil(*self._jobs.get())


def _fulfil(future: Future[QueryVector], embed: QueryRest, t0: float) -> None:
    """Run ``embed`` for ``future`` unless its search gave up (cancelled) first."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(_checked_vector(embed(), t0))
    except BaseException as exc:  # handed to the waiting search
        future.set_exception(exc)


def _checked_vector(vec: np.ndarray, t0: float) -> QueryVector:
    """The query vector and the ms since ``t0`` (when its embedding began)."""
    if not np.any(vec):  # NaN/inf become zeros in normalize_rows: no direction to compare
        raise ProviderError("the provider returned an empty (NaN or zero) query vector")
    return vec, (time.perf_counter() - t0) * 1000
