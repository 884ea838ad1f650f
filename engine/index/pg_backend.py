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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.config.loader import ConfigError, read_json5
from engine.config.paths import env_value, memdeck_home

if TYPE_CHECKING:
    from engine.index.pg_store import PgStore

BACKEND_ENV = "MEMDECK_STORE_BACKEND"
DEFAULT_DSN_ENV = "MEMDECK_PG_DSN"
NAMESPACE_ENV = "MEMDECK_PG_NAMESPACE"
_KEYS = ("backend", "dsnEnv", "namespace")


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
    path = memdeck_home(env) / "settings.json"
    data = read_json5(path, empty={}) if path.is_file() else {}
    if not isinstance(data, Mapping):
        raise ConfigError("expected an object at the top level", file=path)
    section = data.get("store", {})
    if not isinstance(section, Mapping):
        raise ConfigError("expected an object", file=path, key="store")
    for key in section:
        if key not in _KEYS:
            raise ConfigError(
                f"unknown key (known: {', '.join(_KEYS)})", file=path, key=f"store.{key}"
            )
    backend: Any = env_value(env, BACKEND_ENV) or section.get("backend", "sqlite")
    if backend not in ("sqlite", "postgres"):
        raise ConfigError(
            f"expected 'sqlite' or 'postgres', got {backend!r}", file=path, key="store.backend"
        )
    if backend == "sqlite":
        return None
    dsn_env = section.get("dsnEnv", DEFAULT_DSN_ENV)
    if not isinstance(dsn_env, str) or not dsn_env:
        raise ConfigError("expected an environment variable name", file=path, key="store.dsnEnv")
    namespace = env_value(env, NAMESPACE_ENV) or section.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace.strip()):
        raise ConfigError("expected a non-empty string", file=path, key="store.namespace")
    dsn = env_value(env, dsn_env)
    if not dsn:
        raise ConfigError(
            f"store.backend is 'postgres' but ${dsn_env} is not set: export it with the "
            "server's DSN (postgresql://user:password@host:5432/db)",
            file=path if path.is_file() else None,
        )
    return PgSelection(dsn=dsn, dsn_env=dsn_env, namespace=namespace)


def open_pg_store(selection: PgSelection, agent_id: str) -> PgStore:
    from engine.index.pg_store import PgStore

    return PgStore(selection.dsn, selection.namespace or agent_id)


def describe(store: PgStore) -> str:
    """What ``status`` shows as the index: masked DSN and namespace."""
    from engine.index.pg_store import mask_dsn

    return f"{mask_dsn(store.dsn)} (namespace {store.namespace})"


def full_reindex(
    store: PgStore,
    build_index: Callable[[PgStore], Any],
    fingerprint: dict[str, Any],
    cancelled: Callable[[], bool],
) -> Any:
    """Build the namespace again in a new space, then switch to it in one step.

    ``build_index`` fills the new space (the indexer's full sync) and returns its
    result. Runs under the namespace's writer lock, so any other unpublished
    space of this namespace is debris of a killed reindex and is dropped first.
    A failure or cancel drops the new space; readers never see it.
    """
    from engine.index.indexer import SyncCancelled

    store.drop_orphan_spaces()
    build = store.new_generation()
    published = False
    try:
        done = build_index(build)
        build.set_fingerprint(fingerprint)
        build.set_meta("build", build.current_space())
        if cancelled():
            raise SyncCancelled("sync cancelled")
        store.publish(build)
        published = True
        return done
    finally:
        if not published:
            with contextlib.suppress(Exception):
                build.drop_space()
        build.close()
