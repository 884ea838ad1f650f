"""The SQLite index as files: temp builds, debris of killed builds, the swap.

A full reindex builds a new index in a temp file beside the live one
(``<index>.reindex-<pid>.tmp``), then copies it into the live file in one SQLite
transaction (:func:`copy_into`). A build killed half-way leaves its temp file
behind; :func:`clean_debris` removes it, salvaging the embeddings it paid for.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from engine.index.db import Database
from engine.index.store import Store

#: the temp file of a full reindex: ``<index name><TMP_MARKER><pid>.tmp``
TMP_MARKER = ".reindex-"


# -- full reindex file handling -------------------------------------------------
def temp_index_path(index_path: Path) -> Path:
    return index_path.with_name(f"{index_path.name}{TMP_MARKER}{os.getpid()}.tmp")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_debris(
    index_path: Path,
    *,
    assume_dead: bool = False,
    salvage: Callable[[Path], object] | None = None,
) -> list[Path]:
    """Remove temp files of reindexes whose process is gone (crash or kill -9).

    ``assume_dead`` is for callers holding the writer lock: a reindex only runs
    under that lock, so every temp file is then debris, even one whose pid was
    reused by an unrelated process. ``salvage(temp_db)`` runs before a dead
    build's file is deleted, so the embeddings it paid for (its cache) can be
    kept and the interrupted reindex resumes instead of starting over.
    """
    removed: list[Path] = []
    prefix = index_path.name + TMP_MARKER
    if not index_path.parent.is_dir():
        return removed
    entries = sorted(
        (e for e in index_path.parent.iterdir() if e.name.startswith(prefix)),
        key=lambda e: len(e.name),  # the main file before its -wal/-shm/-journal
    )
    for entry in entries:
        pid_text = entry.name[len(prefix) :].split(".", 1)[0]
        if (
            not assume_dead
            and pid_text.isdigit()
            and int(pid_text) != os.getpid()
            and _pid_alive(int(pid_text))
        ):
            continue
        if salvage is not None and entry.name.endswith(".tmp") and entry.stat().st_size > 0:
            with contextlib.suppress(Exception):
                salvage(entry)
        with contextlib.suppress(OSError):
            entry.unlink()
            removed.append(entry)
    return removed


#: a rebuilt file with more of its pages free than this is VACUUMed before the swap
VACUUM_FREE_SHARE = 0.05


def finalize_for_swap(store: Store) -> None:
    """Leave the temp file self-contained (no WAL) so renaming it is safe, and compact.

    A rebuild leaves free pages behind (cache entries pruned past
    ``cache.maxEntries``, vectors moved out of the cache once the chunks hold them:
    88.6 of 682.9 MB at 100k chunks) and a cache b-tree spread over pages its
    shrunk rows no longer fill; nobody reads the temp file yet, so a ``VACUUM``
    here (~7 s at 100k chunks) gives the index its packed size (413.8 MB there)."""
    store.compact(VACUUM_FREE_SHARE)
    store.close()


def _binding_name(binding: str) -> str:
    """``Database(binding=…)``'s name for a reported binding ("apsw 3.46…" → "apsw")."""
    return binding.split(" ")[0].split(".")[0]


def _page_size(path: Path | str, binding: str) -> int:
    db = Database(path, binding=_binding_name(binding))
    try:
        return db.page_size()
    finally:
        db.close()


def _match_page_size(temp_path: Path, page_size: int, binding: str) -> None:
    """Rewrite the rebuilt file (not in WAL mode: ``finalize_for_swap``) in ``page_size``
    pages, so that it can be backed up into a live index of that page size."""
    db = Database(temp_path, binding=_binding_name(binding))
    try:
        db.execute(f"pragma page_size={int(page_size)}")
        db.execute("vacuum")
    finally:
        db.close()


def copy_into(
    temp_path: Path,
    index_path: Path,
    binding: str,
    busy_ms: int = 30_000,
    *,
    live: Database | None = None,
) -> None:
    """Replace the index's contents with the rebuilt file, in one SQLite transaction.

    SQLite's online backup, not ``os.replace``: renaming a new file over a
    database that other processes (a second memdeck, OpenClaw) hold open would
    leave them on the old inode while sharing the ``-wal``/``-shm`` names with
    the new one, which SQLite documents as a way to corrupt a database. The
    backup writes every page into the live file's WAL and commits once, so
    readers keep their snapshot until the commit, other processes see the new
    index on their next read, and a kill before the commit leaves the old index
    untouched (uncommitted WAL frames are discarded on the next open).

    A live index written with another page size (4 KB, before new indexes got
    16 KB pages) cannot take such a backup while in WAL mode: ``live`` (the
    engine's own connection to it) copies the file in outside WAL mode when no
    other connection has the index open, which moves it to the new page size;
    otherwise the rebuilt file is converted to the old page size first and the
    index keeps it until a rebuild finds it unshared.
    """
    if index_path.exists() and index_path.stat().st_size > 0:
        have = _page_size(index_path, binding)
        if have and have != _page_size(temp_path, binding):
            if live is not None and live.replace_with(temp_path):
                return
            _match_page_size(temp_path, have, binding)
    if binding.startswith("apsw"):
        import apsw

        src = apsw.Connection(str(temp_path), flags=apsw.SQLITE_OPEN_READONLY)
        dst = apsw.Connection(str(index_path))
        try:
            dst.setbusytimeout(busy_ms)
            with dst.backup("main", src, "main") as backup:
                while not backup.done:
                    backup.step(-1)
            dst.execute("pragma wal_checkpoint(PASSIVE)").fetchall()
        finally:
            dst.close()
            src.close()
        return
    import importlib

    module = importlib.import_module(binding)  # "sqlite3" or "pysqlite3.dbapi2"
    src = module.connect(f"file:{temp_path}?mode=ro", uri=True)
    dst = module.connect(str(index_path), timeout=busy_ms / 1000)
    try:
        src.backup(dst)
        dst.execute("pragma wal_checkpoint(PASSIVE)").fetchall()
    finally:
        dst.close()
        src.close()
