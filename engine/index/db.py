"""A small SQLite connection wrapper that can load sqlite-vec.

The stdlib ``sqlite3`` of many Pythons (this machine's included) is built
without extension loading, so memdeck prefers ``apsw``; ``pysqlite3`` and the
stdlib are fallbacks. Whatever runs is reported in status (``binding``,
``sqlite_version``), and a missing extension degrades search instead of failing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Row = tuple[Any, ...]


class DatabaseError(RuntimeError):
    """Any SQLite failure, binding-independent."""


class CorruptIndexError(DatabaseError):
    """The index file is not a usable SQLite database (it can be rebuilt)."""


class BusyIndexError(DatabaseError):
    """Another process held a lock longer than the busy timeout."""


class StoreUnreachable(DatabaseError):
    """The store's server cannot be reached (PostgreSQL down, the network): nothing is
    wrong with the index, and rebuilding it would not help."""


@dataclass(frozen=True)
class VecStatus:
    loaded: bool
    version: str | None = None
    reason: str | None = None  # why it is not loaded


#: What an opener returns: the connection, binding name, SQLite version, its error base class.
_Opened = tuple[Any, str, str, type[BaseException]]


def _open_apsw(path: str, timeout_ms: int) -> _Opened:
    import apsw

    if path.startswith("file:"):  # a read-only URI (see Database.snapshot_uri)
        flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
        conn = apsw.Connection(path, flags=flags)
    else:
        conn = apsw.Connection(path)
    conn.setbusytimeout(timeout_ms)
    return conn, "apsw " + apsw.apsw_version(), apsw.sqlite_lib_version(), apsw.Error


def _open_dbapi(module_name: str, path: str, timeout_ms: int) -> _Opened:
    module = __import__(module_name, fromlist=["dbapi2"])
    conn = module.connect(
        path,
        timeout=timeout_ms / 1000,
        isolation_level=None,
        check_same_thread=False,
        uri=path.startswith("file:"),
    )
    return conn, module_name, module.sqlite_version, module.Error


_OPENERS: tuple[tuple[str, Callable[[str, int], _Opened]], ...] = (
    ("apsw", lambda p, t: _open_apsw(p, t)),
    ("pysqlite3", lambda p, t: _open_dbapi("pysqlite3.dbapi2", p, t)),
    ("sqlite3", lambda p, t: _open_dbapi("sqlite3", p, t)),
)


def _classify(exc: BaseException) -> DatabaseError:
    text = str(exc)
    name = type(exc).__name__
    lowered = text.lower()
    if (
        name in {"CorruptError", "NotADBError"}
        or "not a database" in lowered
        or ("malformed" in lowered)
    ):
        return CorruptIndexError(text or name)
    if name in {"BusyError", "LockedError"} or "database is locked" in lowered:
        return BusyIndexError(text or name)
    return DatabaseError(f"{name}: {text}")


def snapshot_uri(path: Path | str) -> str:
    """A URI opening ``path`` read-only and ``immutable``: no ``-wal``/``-shm``, no
    locks, no byte written. For serving reads when the index cannot be opened for
    writing (full disk, read-only state dir); what a concurrent writer adds is not
    seen, which on such a disk cannot happen anyway."""
    from urllib.parse import quote

    return f"file:{quote(str(Path(path).resolve()))}?immutable=1"


class Database:
    """One connection, serialised by a lock so threads can share it safely."""

    def __init__(self, path: Path | str, *, timeout_ms: int = 5000, binding: str | None = None):
        self.path = str(path)
        self.timeout_ms = timeout_ms
        self._lock = threading.RLock()
        last: BaseException | None = None
        for name, opener in _OPENERS:
            if binding and name != binding:
                continue
            try:
                self._conn, self.binding, self.sqlite_version, self._error = opener(
                    self.path, timeout_ms
                )
                break
            except ImportError as exc:
                last = exc
            except Exception as exc:
                raise _classify(exc) from exc
        else:
            raise DatabaseError(f"no SQLite binding available: {last}")
        self._is_apsw = self.binding.startswith("apsw")
        self.vec = VecStatus(False, reason="not requested")

    # -- basic access -------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Row]:
        with self._lock:
            try:
                cur = self._conn.execute(sql, params)
                return list(cur) if self._is_apsw else cur.fetchall()
            except self._error as exc:
                raise _classify(exc) from exc
            except UnicodeDecodeError as exc:  # text bytes SQLite stored are not UTF-8
                raise CorruptIndexError(
                    f"{self.path}: a stored text is not valid UTF-8 (byte {exc.start}:"
                    f" {exc.reason}); the index is damaged"
                ) from exc

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._lock:
            try:
                self._conn.executemany(sql, rows)
            except self._error as exc:
                raise _classify(exc) from exc

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self.execute(sql, params)
        return rows[0][0] if rows else None

    @contextmanager
    def attached(self, path: Path | str, alias: str) -> Iterator[Database]:
        """Another database file under ``alias`` for the block (rows copied between
        files never pass through Python); detached afterwards, even on error.
        ``alias`` is an identifier chosen by the caller, never user input."""
        self.execute(f"attach database ? as {alias}", (str(path),))
        try:
            yield self
        finally:
            with contextlib.suppress(DatabaseError):
                self.execute(f"detach database {alias}")

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any exception."""
        with self._lock:
            self.execute("BEGIN IMMEDIATE")
            try:
                yield self
            except BaseException:
                with contextlib.suppress(DatabaseError):
                    self.execute("ROLLBACK")
                raise
            else:
                self.execute("COMMIT")

    def fts5_tokenizer(
        self, name: str, args: Sequence[str] = ()
    ) -> Callable[[str, bool], list[str]] | None:
        """FTS5's own tokenizer ``name`` (with ``args``, as in ``tokenize='porter
        unicode61'``) as a function (text, is_query) -> tokens.

        Only apsw exposes it; None under the other bindings.
        """
        if not self._is_apsw:
            return None
        import apsw

        try:
            with self._lock:
                tok = self._conn.fts5_tokenizer(name, list(args))
        except Exception:
            return None
        flags = {True: apsw.FTS5_TOKENIZE_QUERY, False: apsw.FTS5_TOKENIZE_DOCUMENT}

        def tokenize(text: str, is_query: bool) -> list[str]:
            return list(
                tok(
                    text.encode("utf-8"),
                    flags[is_query],
                    None,
                    include_offsets=False,
                    include_colocated=False,
                )
            )

        return tokenize

    def page_size(self) -> int:
        return int(self.scalar("pragma page_size") or 0)

    def replace_with(self, source: Path | str) -> bool:
        """This database's contents replaced by the file ``source`` through SQLite's
        backup API, on this very connection, when the two page sizes differ.

        A WAL database cannot take a backup of another page size, so the file leaves
        WAL mode for the copy and returns to it after; leaving WAL mode needs the
        file to itself. False (nothing changed) when another connection has it
        open, at once rather than after the busy timeout."""
        with self._lock:
            try:
                self._set_busy(0)
                try:
                    mode = str(self.scalar("pragma journal_mode=delete") or "")
                finally:
                    self._set_busy(self.timeout_ms)
            except DatabaseError:
                return False
            if mode.lower() == "wal":
                return False
            try:
                if self._is_apsw:
                    import apsw

                    src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
                    try:
                        with self._conn.backup("main", src, "main") as backup:
                            while not backup.done:
                                backup.step(-1)
                    finally:
                        src.close()
                else:
                    import importlib

                    module = importlib.import_module(self.binding)
                    src = module.connect(f"file:{source}?mode=ro", uri=True)
                    try:
                        src.backup(self._conn)
                    finally:
                        src.close()
            except self._error as exc:
                raise _classify(exc) from exc
            finally:
                with contextlib.suppress(DatabaseError):
                    self.execute("pragma journal_mode=wal")
            return True

    def _set_busy(self, timeout_ms: int) -> None:
        if self._is_apsw:
            self._conn.setbusytimeout(timeout_ms)
        else:
            self._conn.execute(f"pragma busy_timeout={int(timeout_ms)}")

    # -- extensions ---------------------------------------------------------
    def load_sqlite_vec(self, extension_path: str | None = None) -> VecStatus:
        """Load sqlite-vec; never raises, records why it could not load."""
        try:
            if extension_path is None:
                import sqlite_vec

                extension_path = sqlite_vec.loadable_path()
            with self._lock:
                self._conn.enable_load_extension(True)
                self._conn.load_extension(extension_path)
                self._conn.enable_load_extension(False)
            version = self.scalar("select vec_version()")
            self.vec = VecStatus(True, version=str(version))
        except ImportError:
            self.vec = VecStatus(False, reason="sqlite-vec package not installed")
        except AttributeError:
            self.vec = VecStatus(
                False, reason=f"{self.binding} cannot load extensions (built without it)"
            )
        except Exception as exc:
            self.vec = VecStatus(False, reason=f"sqlite-vec failed to load: {exc}")
        return self.vec

    def close(self) -> None:
        # closing twice or after corruption is harmless
        with self._lock, contextlib.suppress(Exception):
            self._conn.close()
