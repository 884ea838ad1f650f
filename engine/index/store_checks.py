"""Checks of the SQLite index: SQLite's pages and memdeck's own structures.

``Store.check`` at three levels (see :meth:`IndexChecks.check`); every finding is
one line a user reads in ``memdeck status``, the monitor or ``--json``, and the
next ``memdeck index`` rebuilds the index from the Markdown when there is any.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from engine.index import chunk_vector_codec, keyword_index, line_codec
from engine.index.db import Database, DatabaseError
from engine.index.embedding_cache import CACHED_VECTOR, sound_vector
from engine.index.keyword_index import KeywordIndex

#: how much of the index a check reads (``Store.check``)
CheckLevel = Literal["open", "index", "thorough"]


class IndexChecks:
    """The checks (a part of ``Store``); the store provides what they read."""

    db: Database
    fts_available: bool

    if TYPE_CHECKING:  # provided by ``Store``; declared here for the type checker

        @property
        def dims(self) -> int | None: ...

        def _ready_keyword_index(self) -> tuple[KeywordIndex, tuple[int, int]] | None: ...

    def quick_check(self) -> str:
        """``pragma quick_check``: "ok", or what is damaged (the first five findings).

        Reads every page once (``integrity_check`` also cross-checks indexes, which
        costs several times more) and never raises: a file too damaged to answer
        is reported as such."""
        try:
            rows = self.db.execute("pragma quick_check")
        except DatabaseError as exc:
            return f"quick_check failed: {exc}"
        # a row can hold several findings under a "*** in database main ***" header
        found = [
            line.strip()
            for r in rows
            for line in str(r[0]).splitlines()
            if line.strip() and not line.startswith("***")
        ]
        return "; ".join(found[:5]) or "quick_check returned nothing"

    def integrity_check(self) -> str:
        """``pragma integrity_check`` ("ok" when healthy)."""
        return "; ".join(str(r[0]) for r in self.db.execute("pragma integrity_check"))

    def check(self, level: CheckLevel = "open") -> tuple[str, ...]:
        """The index checked at ``level``; each finding one line (none: healthy).

        ``open`` (milliseconds at 100k chunks, when an engine opens the index): every
        file's chunk count against its rows, FTS5's row count and the keyword index's
        lengths against the chunks, the keyword postings present, stored vector
        sizes. ``index`` (before ``memdeck index`` syncs) adds SQLite's page check
        and every chunk text readable. ``thorough`` (``memdeck index --check``) adds
        FTS5's integrity check against the text, every vector finite and non-zero
        (chunks, cache, line vectors) and every keyword posting against the row
        lengths. A damaged page answers as a finding, never as an exception."""
        try:
            found = self._cheap_findings()
            if level != "open":
                found += self._page_findings()
            if level == "thorough" and not found:
                found += self._thorough_findings()
        except DatabaseError as exc:
            found = [f"the index cannot be read: {exc}"]
        return tuple(found)

    def _cheap_findings(self) -> list[str]:
        found: list[str] = []
        chunks = int(self.db.scalar("select count(*) from chunks") or 0)
        off = int(
            self.db.scalar(
                "select count(*) from files f where chunks <>"
                " (select count(*) from chunks c where c.path = f.path)"
            )
            or 0
        )
        if off:
            found.append(f"{off} files whose chunk count differs from their rows")
        orphans = int(
            self.db.scalar(
                "select count(*) from (select distinct path from chunks) c"
                " where not exists (select 1 from files f where f.path = c.path)"
            )
            or 0
        )
        if orphans:
            found.append(f"chunks of {orphans} files that have no file row")
        if self.fts_available:
            totals = keyword_index.totals(self.db)
            if totals is not None and totals[0] != chunks:
                found.append(f"the FTS5 index holds {totals[0]} rows for {chunks} chunks")
        ready = self._ready_keyword_index()
        if ready is not None and chunks:
            kw = ready[0]
            lengths = int((kw.lengths(("check", chunks)) >= 0).sum())
            if lengths != chunks:
                found.append(f"the keyword index has lengths for {lengths} of {chunks} chunks")
            if not self.db.scalar("select 1 from kw_postings limit 1"):
                found.append(f"the keyword index has no postings for {chunks} chunks")
        dims = self.dims
        if dims:
            wrong = int(
                self.db.scalar(
                    "select count(*) from chunks where embedding is not null"
                    " and length(embedding) not in (?, ?)",
                    (dims * 4, chunk_vector_codec.compact_size(dims)),
                )
                or 0
            )
            if wrong:
                found.append(f"{wrong} chunk vectors are not {dims} numbers long")
        return found

    def _page_findings(self) -> list[str]:
        pages = self.quick_check()
        if pages != "ok":
            return [f"damaged pages: {pages}"]
        zero = int(
            self.db.scalar(
                "select count(*) from chunks where embedding is not null"
                " and embedding = zeroblob(length(embedding))"
            )
            or 0
        )
        for (text,) in self.db.execute("select text from chunks"):  # raises on bad UTF-8
            if not isinstance(text, str):
                return ["a chunk's text is not text"]
        return [f"{zero} chunk vectors are all zero"] if zero else []

    def _thorough_findings(self) -> list[str]:
        found: list[str] = []
        if self.fts_available:
            try:
                self.db.execute(
                    "insert into chunks_fts(chunks_fts, rank) values ('integrity-check', 1)"
                )
            except DatabaseError as exc:
                found.append(f"the FTS5 index does not match the chunk text ({exc})")
        bad = {"chunk": 0, "cached": 0, "line": 0}
        width = self.dims
        for (blob,) in self.db.execute("select embedding from chunks where embedding is not null"):
            if width:  # a blob of neither size is counted by the cheap check already
                vec = chunk_vector_codec.decode(blob, width)
            else:
                vec = np.frombuffer(blob, dtype=np.float32) if len(blob) % 4 == 0 else None
            bad["chunk"] += vec is not None and not sound_vector(vec)
        for (blob,) in self.db.execute(f"select {CACHED_VECTOR} from embedding_cache"):
            if blob:
                bad["cached"] += not sound_vector(np.frombuffer(blob, dtype=np.float32))
        for dims, lines, blob in self.db.execute("select dims, lines, vectors from line_vectors"):
            try:
                mat, _keys = line_codec.decode(blob, int(lines), int(dims))
            except ValueError:
                bad["line"] += 1
                continue
            bad["line"] += not mat.size or not (np.isfinite(mat).all() and mat.any(axis=1).all())
        for kind, n in bad.items():
            if n:
                found.append(f"{n} {kind} vectors are not finite or are all zero")
        ready = self._ready_keyword_index()
        if ready is not None:
            found += ready[0].check()
        return found
