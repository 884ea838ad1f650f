"""Choosing the PostgreSQL store, and what the engine does differently with it.

The choice lives in memdeck's own settings file (``<memdeck home>/settings.json``,
never ``openclaw.json``, whose schema OpenClaw enforces)::

    {
      "store": {
        "backend": "postgres",          // "sqlite" (default) or "postgres"
        "dsnEnv": "MEMDECK_PG_DSN",     // the variable holding the DSN (default)
        "namespace": "team-notes"       // default: the agent id
      }
    }

or, without a file, ``MEMDECK_STORE_BACKEND=postgres`` and
``MEMDECK_PG_NAMESPACE``. The DSN itself comes only from the environment (a
secret does not belong in a settings file others read); it is never printed:
status and errors show it with the password masked.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from engine.config.memdeck_settings import load_memdeck_settings
from engine.config.paths import env_value
from engine.config.reader import ConfigError
from engine.index.index_store import IndexStore
from engine.index.lock import LockGrant
from engine.index.unicode61 import TERMS_VERSION

if TYPE_CHECKING:
    from engine.index.pg_store import PgStore

T = TypeVar("T")

BACKEND_ENV = "MEMDECK_STORE_BACKEND"
NAMESPACE_ENV = "MEMDECK_PG_NAMESPACE"


@dataclass(frozen=True)
class PgSelection:
    """The PostgreSQL store was chosen: where to connect and which namespace."""

    dsn: str
    dsn_env: str
    namespace: str | None  # None: the agent id

    def __repr__(self) -> str:  # the DSN is a secret: never in a repr or a log line
        from engine.index.pg_store import mask_dsn

        return f"PgSelection(dsn={mask_dsn(self.dsn)!r}, namespace={self.namespace!r})"

    __str__ = __repr__


def load_store_backend(env: Mapping[str, str] = os.environ) -> PgSelection | None:
    """None for the SQLite store (the default); the selection for PostgreSQL.

    A mistake stops with a ConfigError naming the key: a store silently falling
    back to a local file would split a team's memory without anyone noticing.
    """
    settings = load_memdeck_settings(env)
    path = settings.path
    problem = settings.problem("store")
    if problem is not None:
        raise problem
    section = settings.store
    backend: Any = env_value(env, BACKEND_ENV) or section.backend
    if backend not in ("sqlite", "postgres"):
        raise ConfigError(
            f"expected 'sqlite' or 'postgres', got {backend!r}", key=f"${BACKEND_ENV}"
        )
    if backend == "sqlite":
        return None
    dsn_env = section.dsn_env
    namespace = env_value(env, NAMESPACE_ENV) or section.namespace
    dsn = env_value(env, dsn_env)
    if not dsn:
        raise ConfigError(
            f"store.backend is 'postgres' but ${dsn_env} is not set: export it with the "
            "server's DSN (postgresql://user:password@host:5432/db)",
            file=path if path.is_file() else None,
        )
    return PgSelection(dsn=dsn, dsn_env=dsn_env, namespace=namespace)


class PgBackend:
    """One namespace of a PostgreSQL database (``engine.index.backends``)."""

    kind: Literal["sqlite", "postgres"] = "postgres"
    local_file = False
    #: the terms are cut in Python (``engine.index.unicode61``)
    fingerprint_keys: Mapping[str, object] = {"terms": TERMS_VERSION}

    def __init__(self, selection: PgSelection, agent_id: str):
        self.selection = selection
        self.namespace = selection.namespace or agent_id

    def open(self, *, snapshot: bool = False) -> IndexStore:
        from engine.index.pg_store import PgStore

        return PgStore(self.selection.dsn, self.namespace)

    def exists(self) -> bool:
        return True

    def identity(self, store: IndexStore) -> tuple[object, ...]:
        return ("postgres",)  # the live store follows the namespace's space by itself

    @contextlib.contextmanager
    def writer(
        self, store: IndexStore, timeout: float, cancel: threading.Event | None = None
    ) -> Iterator[LockGrant]:
        """One writer per namespace across machines: a server-side advisory lock,
        released by the server if its holder dies (so none ever dies holding it)."""
        with _pg(store).writer_lock(timeout):
            yield LockGrant()

    def rebuild(
        self,
        live: IndexStore,
        build: Callable[[IndexStore], T],
        fingerprint: dict[str, Any],
        cancelled: Callable[[], bool],
        before_swap: Callable[[T], None],
    ) -> tuple[T, IndexStore]:
        """Build the namespace again in a new space, then switch to it in one step.

        Runs under the namespace's writer lock, so any other unpublished space of
        this namespace is debris of a killed reindex and is dropped first. A
        failure or cancel drops the new space; readers never see it.
        """
        from engine.index.indexer import SyncCancelled

        store = _pg(live)
        store.drop_orphan_spaces()
        new = store.new_generation()
        published = False
        try:
            done = build(new)
            new.set_fingerprint(fingerprint)
            new.set_meta("build", new.current_space())
            if cancelled():
                raise SyncCancelled("sync cancelled")
            before_swap(done)
            store.publish(new)
            published = True
        finally:
            if not published:
                with contextlib.suppress(Exception):
                    new.drop_space()
            new.close()
        return done, live


def _pg(store: IndexStore) -> PgStore:
    from engine.index.pg_store import PgStore

    if not isinstance(store, PgStore):
        raise TypeError(f"the PostgreSQL backend was given a {type(store).__name__}")
    return store
