"""The keyword side's own postings beside FTS5: bm25 top-k in numpy.

FTS5 answers ``MATCH … ORDER BY rank LIMIT k`` by calling ``bm25()`` once per
matching row through SQLite's virtual-table machinery, and recounts every
phrase's rows (bm25's n) by walking its whole doclist on each query; the common
words of a query match half of a 100k-chunk index, so that was 300–500 ms a
search there. Here each term's postings — row ids and term frequencies — are
kept compressed in ``kw_postings`` (written with the chunks), the row lengths
FTS5 divides by in ``kw_lengths``, and a query:

* decodes the postings of its words (decoded lists are cached between
  searches until the lists are rewritten);
* for AND, intersects them starting from the rarest word, so only rows that
  hold every word are ever touched (for OR: their union);
* scores those rows with FTS5's bm25 in vectorised float64 (the operations of
  ``fts5Bm25Function`` in its order, so the doubles are FTS5's bit for bit;
  ``tests/engine/test_keyword_index.py`` compares every LoCoMo question with
  FTS5's own ranking) and selects the top k without sorting the rest.

Writes do not rewrite a common word's postings: a changed row adds its terms to
``kw_pending`` (term, row, tf; tf 0 = the row no longer holds the term), which
a query merges in and ``compact`` folds into ``kw_postings`` once it grows. A
sync of many files skips the per-row bookkeeping and ``rebuild``s at its end.
``meta.keyword_index`` says whether the tables are in step; when they are not
(an index made before them, a store that cannot tokenize like FTS5) every
search uses FTS5's exhaustive ranking, as before.

Only single-token words under the ``unicode61`` tokenizer take this path; the
caller falls back to ``Store.fts_search`` otherwise.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.index import heap
from engine.index.db import Database, DatabaseError
from engine.index.fts_bm25 import IDF_FLOOR, K1, B, read_varint

#: the layout version written to ``meta.keyword_index`` once the tables are in step:
#: "2" since short lists are stored raw (``_pack``)
LAYOUT = "2"
#: the layouts this code reads. Layout 1 (every list zlib'd) reads as it is and
#: becomes 2 at the first fold of pending rows, so an index is never rebuilt for it
#: (~30 s at 100k chunks); a version that reads only "1" finds "2" not in step,
#: answers through FTS5 and rebuilds the postings in its own layout.
READABLE_LAYOUTS = frozenset({"1", LAYOUT})
META_KEY = "keyword_index"
#: ``kw_pending`` rows past which a sync folds them into ``kw_postings``
PENDING_MAX = 50_000
#: row lengths per ``kw_lengths`` row
LENGTH_PAGE = 1024
#: decoded postings kept between searches (total postings across terms)
CACHE_POSTINGS = 4_000_000
#: candidates past which frequencies are looked up in a table over the id range
DENSE_FROM = 4096
#: chunks read per step of a rebuild (and the bits of a row's place in one)
REBUILD_PAGE = 8192
_LOCAL_BITS = 13

Tokenize = Callable[[str, bool], list[str]]

#: ``kw_postings`` is keyed by its term alone (``without rowid``): a rowid table kept the
#: terms a second time in the primary key's index (29 KB of LoCoMo conv-5's 933 KB).
#: A file created before keeps its rowid table; both read and write the same way.
SCHEMA = """
create table if not exists kw_postings (
    term text primary key, docs blob not null, tfs blob not null
) without rowid;
create table if not exists kw_pending (
    term text not null, doc integer not null, tf integer not null,
    primary key (term, doc)
) without rowid;
create table if not exists kw_lengths (page integer primary key, dls blob not null);
"""


# -- encoding -------------------------------------------------------------------------------
_WIDTHS: dict[int, type[np.unsignedinteger]] = {
    1: np.uint8,
    2: np.uint16,
    4: np.uint32,
    8: np.uint64,
}
#: a blob's first byte: the width of its integers, plus ``_RAW`` when they are stored
#: as they are (not zlib'd). Most terms of a memory are in a few rows: zlib's 6 bytes of
#: header and checksum were more than the numbers (LoCoMo conv-5: 1,815 terms, 12,203
#: postings, 59 KB of blobs zlib'd, 24 KB raw), while a common word's long list still
#: compresses several times.
_RAW = 0x80
#: a list of at most this many bytes is stored raw without trying zlib
RAW_MAX = 64


def _pack(values: np.ndarray) -> bytes:
    """Non-negative integers in the narrowest of 8/16/32/64 bits, zlib'd when that is
    smaller (the first byte says which)."""
    top = int(values.max()) if len(values) else 0
    width = 1 if top < 2**8 else 2 if top < 2**16 else 4 if top < 2**32 else 8
    raw = values.astype(_WIDTHS[width]).tobytes()
    if len(raw) > RAW_MAX:
        packed = zlib.compress(raw, 1)
        if len(packed) < len(raw):
            return bytes([width]) + packed
    return bytes([width | _RAW]) + raw


def _unpack(blob: bytes) -> np.ndarray:
    tag = blob[0]
    body = blob[1:] if tag & _RAW else zlib.decompress(blob[1:])
    return np.frombuffer(body, dtype=_WIDTHS[tag & ~_RAW]).astype(np.int64)


def encode(docs: np.ndarray, tfs: np.ndarray) -> tuple[bytes, bytes]:
    """Sorted row ids as gaps, and their term frequencies."""
    gaps = np.diff(docs, prepend=0) if len(docs) else docs
    return _pack(gaps), _pack(tfs)


def decode(docs_blob: bytes, tfs_blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    return np.cumsum(_unpack(docs_blob)), _unpack(tfs_blob)


def in_step(db: Database) -> bool:
    """Whether ``db``'s postings are in step with its chunks, in a layout this reads."""
    return db.scalar("select value from meta where key = ?", (META_KEY,)) in READABLE_LAYOUTS


# -- FTS5's numbers -----------------------------------------------------------------------
def totals(db: Database) -> tuple[int, int] | None:
    """(rows, tokens) from FTS5's ``averages`` record (bm25's N and avgdl·N)."""
    try:
        blob = db.scalar("select block from chunks_fts_data where id = 1")
    except DatabaseError:
        return None
    if not blob:
        return (0, 0)
    rows, pos = read_varint(blob)
    tokens, _ = read_varint(blob, pos)
    return rows, tokens


def idf(rows: int, rows_with: int) -> float:
    """FTS5's idf, floored as ``fts5Bm25Function`` floors it."""
    value = math.log((rows - rows_with + 0.5) / (rows_with + 0.5))
    return IDF_FLOOR if value <= 0.0 else value


def bm25_scores(
    phrases: Sequence[str],
    tfs: dict[str, np.ndarray],
    dls: np.ndarray,
    idfs: dict[str, float],
    avgdl: float,
) -> np.ndarray:
    """bm25 (positive; FTS5's rank is its negation) of rows with these frequencies and
    lengths: ``fts_bm25.bm25_rank``'s operations, elementwise, in the same order."""
    d = dls.astype(np.float64)
    # ``K1 * (1 - B + B * d / avgdl)`` is the same for every phrase: computed once,
    # with the same operations in the same order (the doubles do not change)
    norm = d * B
    norm /= avgdl
    norm += 1 - B
    norm *= K1
    score = np.zeros(len(dls), dtype=np.float64)
    for p in phrases:
        f = tfs[p].astype(np.float64)
        part = f * (K1 + 1.0)
        f += norm
        part /= f
        part *= idfs[p]
        score += part
    return score


class _Posting:
    """One term's postings as a search reads them (pending changes merged in), and
    lazily a table of its frequencies over the id range for large lookups."""

    __slots__ = ("dense", "docs", "tfs")

    def __init__(self, docs: np.ndarray, tfs: np.ndarray):
        self.docs = docs
        self.tfs = tfs
        self.dense: np.ndarray | None = None

    def table(self, size: int) -> np.ndarray:
        """tf by row id over ``[0, size)`` (0 = not in the row): one gather answers
        both "does the row hold the term" and "how often"."""
        if self.dense is None or len(self.dense) < size:
            top = int(self.tfs.max()) if len(self.tfs) else 0
            dense = np.zeros(size, dtype=np.uint16 if top < 2**16 else np.int64)
            dense[self.docs] = self.tfs
            self.dense = dense
        return self.dense


@dataclass
class _Snapshot:
    """What the searches of one state of the index share (``Store._state_key``)."""

    state: object
    generation: str
    totals: tuple[int, int] | None
    postings: OrderedDict[str, _Posting]
    dense_bytes: int = 0
    count: int = 0  # postings held (bounded by ``CACHE_POSTINGS`` like the decoded cache)


#: bytes of id-range tables (``_Posting.table``) kept per index state
DENSE_BYTES = 32 * 2**20


@dataclass(frozen=True)
class RowTerms:
    """What bm25 knows of some rows: the words of a query each holds, with their
    frequencies (a word a row lacks is absent), and each row's length in terms."""

    counts: dict[int, dict[str, int]]
    lengths: dict[int, int]


@dataclass(frozen=True)
class TopK:
    """A ranking from the postings, or why there is none."""

    hits: list[tuple[int, float]] | None  # (row id, FTS5 rank) best first; None: not here
    matched: int = 0  # rows holding every word (AND) or any word (OR)
    reason: str = ""


class KeywordIndex:
    """The postings of one index file, read and kept in step through ``db``."""

    def __init__(self, db: Database, tokenize: Tokenize):
        self.db = db
        self.tokenize = tokenize
        self._cache: OrderedDict[str, tuple[str, np.ndarray, np.ndarray]] = OrderedDict()
        self._cached = 0
        self._lengths: tuple[object, np.ndarray] | None = None
        self._snapshot: _Snapshot | None = None
        self._in_step: tuple[object, bool] | None = None

    # -- state -------------------------------------------------------------------------
    def ready(self, state: object = None) -> bool:
        """Whether the postings are in step (``in_step``); with the store's ``state``
        (which changes at every write), answered once per state: a search asks at
        each use of the postings, and every statement on the search's thread is a
        chance to wait for the GIL behind the query's embedding."""
        if state is not None and self._in_step is not None and self._in_step[0] == state:
            return self._in_step[1]
        got = in_step(self.db)
        self._in_step = None if state is None else (state, got)
        return got

    def _generation(self) -> str:
        return str(self.db.scalar("select value from meta where key = 'keyword_generation'") or "")

    def _set_meta(self, key: str, value: str) -> None:
        self._in_step = None  # this connection's own write does not change the state
        self.db.execute(
            "insert into meta(key, value) values (?, ?) on conflict(key)"
            " do update set value = excluded.value",
            (key, value),
        )

    def mark_stale(self) -> None:
        self._set_meta(META_KEY, "")

    def _bump_generation(self) -> None:
        gen = self._generation()
        self._set_meta("keyword_generation", str(int(gen or 0) + 1))
        self._cache.clear()
        self._cached = 0
        self._snapshot = None

    # -- reading -----------------------------------------------------------------------
    def phrases(self, words: Sequence[str]) -> list[str] | None:
        """Each word as its one FTS5 token; None if a word is several (a phrase)."""
        out = []
        for word in words:
            toks = self.tokenize(word, True)
            if len(toks) != 1:
                return None
            out.append(toks[0])
        return out

    def _snap(self, state: object) -> _Snapshot:
        """Generation, totals and merged postings of ``state``, read once per state
        (a search then runs no statement per word)."""
        snap = self._snapshot
        if snap is None or snap.state != state:
            snap = _Snapshot(state, self._generation(), totals(self.db), OrderedDict())
            self._snapshot = snap
        return snap

    def _posting(self, term: str, snap: _Snapshot) -> _Posting:
        got = snap.postings.get(term)
        if got is not None:
            snap.postings.move_to_end(term)
            return got
        got = _Posting(*self.postings(term, snap.generation))
        stored = self._cache.get(term)
        if stored is not None and stored[1] is not got.docs:
            # merged with pending rows: keep one copy (the stored list is read again
            # after the next write, as a search read it before the snapshots)
            self._cache.pop(term)
            self._cached -= len(stored[1])
        snap.postings[term] = got
        snap.count += len(got.docs)
        while snap.count > CACHE_POSTINGS and len(snap.postings) > 1:
            _, old = snap.postings.popitem(last=False)
            snap.count -= len(old.docs)
            if old.dense is not None:
                snap.dense_bytes -= old.dense.nbytes
        return got

    def _table(self, posting: _Posting, snap: _Snapshot, size: int) -> np.ndarray:
        had = 0 if posting.dense is None else posting.dense.nbytes
        table = posting.table(size)
        snap.dense_bytes += table.nbytes - had
        if snap.dense_bytes > DENSE_BYTES:  # drop the least recently used tables
            for other in list(snap.postings.values()):
                if snap.dense_bytes <= DENSE_BYTES:
                    break
                if other is not posting and other.dense is not None:
                    snap.dense_bytes -= other.dense.nbytes
                    other.dense = None
        return table

    def postings(self, term: str, generation: str) -> tuple[np.ndarray, np.ndarray]:
        """(sorted row ids, term frequencies) of ``term``: the stored list with the
        pending changes merged in."""
        hit = self._cache.get(term)
        if hit is not None and hit[0] == generation:
            self._cache.move_to_end(term)
            docs, tfs = hit[1], hit[2]
        else:
            row = self.db.execute("select docs, tfs from kw_postings where term = ?", (term,))
            if row:
                docs, tfs = decode(row[0][0], row[0][1])
            else:
                docs = tfs = np.empty(0, dtype=np.int64)
            self._remember(term, generation, docs, tfs)
        pend = self.db.execute("select doc, tf from kw_pending where term = ?", (term,))
        if not pend:
            return docs, tfs
        p_docs = np.array([r[0] for r in pend], dtype=np.int64)  # sorted: the primary key
        p_tfs = np.array([r[1] for r in pend], dtype=np.int64)
        if len(docs):
            pos = np.minimum(np.searchsorted(p_docs, docs), len(p_docs) - 1)
            keep = p_docs[pos] != docs
            docs, tfs = docs[keep], tfs[keep]
        live = p_tfs > 0
        docs = np.concatenate([docs, p_docs[live]])
        tfs = np.concatenate([tfs, p_tfs[live]])
        order = np.argsort(docs, kind="stable")
        return docs[order], tfs[order]

    def _remember(self, term: str, generation: str, docs: np.ndarray, tfs: np.ndarray) -> None:
        old = self._cache.pop(term, None)
        if old is not None:
            self._cached -= len(old[1])
        self._cache[term] = (generation, docs, tfs)
        self._cached += len(docs)
        while self._cached > CACHE_POSTINGS and len(self._cache) > 1:
            _, (_, gone, _) = self._cache.popitem(last=False)
            self._cached -= len(gone)

    def lengths(self, state: object) -> np.ndarray:
        """Every row's length in tokens (FTS5's docsize), indexed by row id; -1 = none."""
        if self._lengths is not None and self._lengths[0] == state:
            return self._lengths[1]
        rows = self.db.execute("select page, dls from kw_lengths order by page")
        size = (int(rows[-1][0]) + 1) * LENGTH_PAGE if rows else 0
        out = np.full(size, -1, dtype=np.int64)
        for page, blob in rows:
            start = int(page) * LENGTH_PAGE
            out[start : start + LENGTH_PAGE] = np.frombuffer(blob, dtype=np.int32)
        self._lengths = (state, out)
        return out

    def rows_with(self, term: str, state: object) -> int:
        """How many rows hold ``term`` (bm25's n)."""
        return len(self._posting(term, self._snap(state)).docs)

    # -- ranking -------------------------------------------------------------------------
    def top_k(self, words: Sequence[str], k: int, *, require_all: bool, state: object) -> TopK:
        """FTS5's ``"w1" AND/OR "w2" … ORDER BY rank LIMIT k`` (ties by row id)."""
        phrases = self.phrases(words)
        if phrases is None:
            return TopK(None, reason="a word of several tokens")
        if not phrases or k <= 0:
            return TopK([], 0)
        snap = self._snap(state)
        got = snap.totals
        if got is None:
            return TopK(None, reason="FTS5's averages record is unreadable")
        n_rows, n_tokens = got
        if n_rows <= 0:
            return TopK([], 0)
        avgdl = float(n_tokens) / float(n_rows)
        terms = list(dict.fromkeys(phrases))
        post = {t: self._posting(t, snap) for t in terms}
        lengths = self.lengths(state)
        tfs: dict[str, np.ndarray] = {}
        if require_all:
            if any(len(post[t].docs) == 0 for t in terms):
                return TopK([], 0)
            # from the rarest word: each further word's lookup both filters the
            # candidates and gives their frequencies (no second pass for scoring)
            order = sorted(terms, key=lambda t: len(post[t].docs))
            cands = post[order[0]].docs
            tfs[order[0]] = post[order[0]].tfs
            for t in order[1:]:
                if not len(cands):
                    break
                f = self._tf_of(post[t], cands, snap, len(lengths))
                held = f > 0
                if not held.all():
                    cands = cands[held]
                    f = f[held]
                    tfs = {u: v[held] for u, v in tfs.items()}
                tfs[t] = f
        else:
            cands = _union([post[t].docs for t in terms if len(post[t].docs)])
        if not len(cands):
            return TopK([], 0)
        scores = self._score(cands, phrases, post, n_rows, avgdl, state, snap, tfs)
        if scores is None:
            return TopK(None, reason="a row without a recorded length")
        return TopK(_best(cands, scores, k), len(cands))

    def ranks_of(
        self, words: Sequence[str], ids: Sequence[int], *, require_all: bool, state: object
    ) -> dict[int, float] | None:
        """FTS5's rank of each of ``ids`` that the AND (OR) of ``words`` matches."""
        phrases = self.phrases(words)
        snap = self._snap(state)
        got = snap.totals
        if phrases is None or got is None:
            return None
        n_rows, n_tokens = got
        if not phrases or n_rows <= 0 or not ids:
            return {}
        post = {t: self._posting(t, snap) for t in dict.fromkeys(phrases)}
        cands = np.unique(np.asarray(ids, dtype=np.int64))
        size = len(self.lengths(state))
        held = [self._tf_of(post[t], cands, snap, size) > 0 for t in post]
        mask = np.logical_and.reduce(held) if require_all else np.logical_or.reduce(held)
        cands = cands[mask]
        if not len(cands):
            return {}
        avgdl = float(n_tokens) / n_rows
        scores = self._score(cands, phrases, post, n_rows, avgdl, state, snap, {})
        if scores is None:
            return None
        return {int(c): -1.0 * float(s) for c, s in zip(cands, scores, strict=True)}

    def frequencies(
        self, words: Sequence[str], ids: Sequence[int], *, state: object
    ) -> RowTerms | None:
        """Each of ``ids``'s frequency of each word and its length in terms, from the
        postings (None when a word is several tokens or a row has no recorded length:
        the caller counts the rows' text instead, ``engine.index.unicode61.term_counts``)."""
        phrases = self.phrases(words)
        if phrases is None:
            return None
        cands = np.unique(np.asarray(ids, dtype=np.int64))
        if not len(cands):
            return RowTerms({}, {})
        dls = self._row_lengths(cands, state)
        if dls is None:
            return None
        snap = self._snap(state)
        size = len(self.lengths(state))
        counts: dict[int, dict[str, int]] = {}
        for word, term in zip(words, phrases, strict=True):
            tf = self._tf_of(self._posting(term, snap), cands, snap, size)
            held = tf > 0
            for cid, n in zip(cands[held].tolist(), tf[held].tolist(), strict=True):
                counts.setdefault(cid, {})[word] = n
        return RowTerms(counts, dict(zip(cands.tolist(), dls.tolist(), strict=True)))

    def _row_lengths(self, cands: np.ndarray, state: object) -> np.ndarray | None:
        """The lengths in terms of (sorted, non-empty) ``cands``; None if a row has none
        recorded."""
        lengths = self.lengths(state)
        if int(cands[-1]) >= len(lengths):
            return None
        dls = lengths[cands]
        return None if (dls < 0).any() else dls

    def _tf_of(
        self, posting: _Posting, cands: np.ndarray, snap: _Snapshot, size: int
    ) -> np.ndarray:
        """Each (sorted) candidate's frequency of the term (0 where it does not occur)."""
        docs, tfs = posting.docs, posting.tfs
        if not len(docs) or not len(cands):
            return np.zeros(len(cands), dtype=np.int64)
        if len(cands) > DENSE_FROM:  # many rows: a table over the id range beats bisection
            need = max(size, int(docs[-1]) + 1, int(cands[-1]) + 1)
            out: np.ndarray = self._table(posting, snap, need)[cands]
            return out
        pos = np.minimum(np.searchsorted(docs, cands), len(docs) - 1)
        return np.where(docs[pos] == cands, tfs[pos], 0)

    def _score(
        self,
        cands: np.ndarray,
        phrases: list[str],
        post: dict[str, _Posting],
        n_rows: int,
        avgdl: float,
        state: object,
        snap: _Snapshot,
        known: dict[str, np.ndarray],
    ) -> np.ndarray | None:
        """bm25 of ``cands``; ``known`` holds frequencies the caller already has."""
        dls = self._row_lengths(cands, state)
        if dls is None:
            return None
        size = len(self.lengths(state))
        tfs = {t: known[t] if t in known else self._tf_of(post[t], cands, snap, size) for t in post}
        idfs = {t: idf(n_rows, len(post[t].docs)) for t in post}
        return bm25_scores(phrases, tfs, dls, idfs, avgdl)

    # -- keeping in step ---------------------------------------------------------------------
    def check(self) -> list[str]:
        """Every posting against the row lengths: a row's term frequencies add up to
        its length in tokens, and no posting names a row that has none. One finding
        line per kind of mismatch (``memdeck index --check``)."""
        lengths = self.lengths(("check", self._generation()))
        totals = np.zeros(len(lengths), dtype=np.int64)
        stray = 0
        generation = self._generation()
        terms = self.db.execute("select term from kw_postings union select term from kw_pending")
        for (term,) in terms:
            docs, tfs = self.postings(str(term), generation)
            inside = docs < len(lengths)
            stray += int((~inside).sum())
            np.add.at(totals, docs[inside], tfs[inside])
        known = lengths >= 0
        stray += int((totals[~known] > 0).sum())
        off = int((totals[known] != lengths[known]).sum())
        found = []
        if off:
            found.append(f"the keyword postings of {off} rows do not add up to their lengths")
        if stray:
            found.append(f"{stray} keyword postings name rows the index does not have")
        return found

    def follow(self, removed: Iterable[tuple[int, str]], added: Iterable[tuple[int, str]]) -> None:
        """Record a write's removed and added rows (inside the caller's transaction)."""
        self._snapshot = None
        rows: list[tuple[str, int, int]] = []
        sizes: dict[int, int] = {}
        for cid, text in removed:
            rows.extend((t, cid, 0) for t in set(self.tokenize(text, False)))
            sizes[cid] = -1
        for cid, text in added:
            toks = self.tokenize(text, False)
            rows.extend((t, cid, f) for t, f in Counter(toks).items())
            sizes[cid] = len(toks)
        if rows:
            self.db.executemany(
                "insert or replace into kw_pending(term, doc, tf) values (?, ?, ?)", rows
            )
        self._write_lengths(sizes)

    def _write_lengths(self, sizes: dict[int, int]) -> None:
        pages: dict[int, list[tuple[int, int]]] = {}
        for cid, n in sizes.items():
            pages.setdefault(cid // LENGTH_PAGE, []).append((cid % LENGTH_PAGE, n))
        for page, items in pages.items():
            blob = self.db.scalar("select dls from kw_lengths where page = ?", (page,))
            arr = (
                np.frombuffer(blob, dtype=np.int32).copy()
                if blob
                else np.full(LENGTH_PAGE, -1, dtype=np.int32)
            )
            for slot, n in items:
                arr[slot] = n
            self.db.execute(
                "insert or replace into kw_lengths(page, dls) values (?, ?)", (page, arr.tobytes())
            )

    def compact(self, *, force: bool = False) -> int:
        """Fold ``kw_pending`` into ``kw_postings`` once it passed ``PENDING_MAX`` rows
        (caller holds the writer lock). Returns the terms rewritten."""
        count = int(self.db.scalar("select count(*) from kw_pending") or 0)
        if not count or (count <= PENDING_MAX and not force):
            return 0
        with self.db.transaction():
            gen = self._generation()
            terms = [str(r[0]) for r in self.db.execute("select distinct term from kw_pending")]
            rows, gone = [], []
            for term in terms:
                docs, tfs = self.postings(term, gen)
                if len(docs):
                    rows.append((term, *encode(docs, tfs)))
                else:  # no row holds the term any more
                    gone.append((term,))
            self.db.executemany(
                "insert or replace into kw_postings(term, docs, tfs) values (?, ?, ?)", rows
            )
            self.db.executemany("delete from kw_postings where term = ?", gone)
            self.db.execute("delete from kw_pending")
            self._set_meta(META_KEY, LAYOUT)  # the lists just written are in it
            self._bump_generation()
        return len(terms)

    def rebuild(self) -> int:
        """Every term's postings and every row's length from ``chunks`` (after a cold
        index or a large sync; caller holds the writer lock). Returns the terms.

        The reading and tokenising (most of the time) runs outside any transaction,
        the tables marked stale so searches use FTS5 meanwhile; only the writing of
        the finished lists holds the database's write lock."""
        try:
            return self._rebuild()
        finally:  # the build's small objects, freed (engine.index.heap)
            heap.give_back_free_memory()

    def _rebuild(self) -> int:
        self.mark_stale()
        vocab: dict[str, int] = {}
        segments: list[list[tuple[bytes, bytes]]] = []
        all_ids: list[np.ndarray] = []
        all_dls: list[np.ndarray] = []
        last = -(2**63)
        while True:
            rows = self.db.execute(
                f"select id, text from chunks where id > ? order by id limit {REBUILD_PAGE}",
                (last,),
            )
            if not rows:
                break
            last = rows[-1][0]
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            per_row: list[np.ndarray] = []
            for _, text in rows:  # token strings live for one row only
                toks = self.tokenize(text, False)
                for new in set(toks).difference(vocab):
                    vocab[new] = len(vocab)
                per_row.append(np.fromiter(map(vocab.__getitem__, toks), np.int64, len(toks)))
            dls = np.array([len(t) for t in per_row], dtype=np.int64)
            all_ids.append(ids)
            all_dls.append(dls)
            if not dls.sum():
                continue
            term_ids = np.concatenate(per_row)
            local = np.repeat(np.arange(len(rows), dtype=np.int64), dls)
            key = (term_ids << _LOCAL_BITS) | local
            uniq, counts = np.unique(key, return_counts=True)
            t_of = uniq >> _LOCAL_BITS
            d_of = ids[uniq & ((1 << _LOCAL_BITS) - 1)]
            cuts = np.flatnonzero(np.diff(t_of)) + 1
            starts = np.concatenate([[0], cuts])
            ends = np.concatenate([cuts, [len(uniq)]])
            while len(segments) < len(vocab):
                segments.append([])
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
                segments[int(t_of[s])].append(
                    (
                        zlib.compress(d_of[s:e].tobytes(), 1),
                        zlib.compress(counts[s:e].astype(np.int64).tobytes(), 1),
                    )
                )
        out = []
        for term, j in vocab.items():
            parts = segments[j] if j < len(segments) else []
            if not parts:
                continue
            docs = np.concatenate([_inflate(d) for d, _ in parts])
            tfs = np.concatenate([_inflate(f) for _, f in parts])
            out.append((term, *encode(docs, tfs)))
        with self.db.transaction():
            self.db.execute("delete from kw_postings")
            self.db.execute("delete from kw_pending")
            self.db.execute("delete from kw_lengths")
            self.db.executemany("insert into kw_postings(term, docs, tfs) values (?, ?, ?)", out)
            if all_ids:
                self._write_all_lengths(np.concatenate(all_ids), np.concatenate(all_dls))
            self._set_meta(META_KEY, LAYOUT)
            self._bump_generation()
        return len(out)

    def _write_all_lengths(self, ids: np.ndarray, dls: np.ndarray) -> None:
        size = (int(ids.max()) // LENGTH_PAGE + 1) * LENGTH_PAGE
        dense = np.full(size, -1, dtype=np.int32)
        dense[ids] = dls
        pages = [
            (p, dense[p * LENGTH_PAGE : (p + 1) * LENGTH_PAGE].tobytes())
            for p in range(size // LENGTH_PAGE)
            if (dense[p * LENGTH_PAGE : (p + 1) * LENGTH_PAGE] >= 0).any()
        ]
        self.db.executemany("insert into kw_lengths(page, dls) values (?, ?)", pages)


def _union(lists: list[np.ndarray]) -> np.ndarray:
    """Sorted distinct row ids of sorted ``lists`` (a mask over the id range: no sort)."""
    if not lists:
        return np.empty(0, dtype=np.int64)
    if len(lists) == 1:
        return lists[0]
    mask = np.zeros(max(int(lst[-1]) for lst in lists) + 1, dtype=bool)
    for lst in lists:
        mask[lst] = True
    return np.flatnonzero(mask).astype(np.int64)


def _inflate(blob: bytes) -> np.ndarray:
    return np.frombuffer(zlib.decompress(blob), dtype=np.int64)


def _best(cands: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best (highest score; ties by lower row id) as (id, FTS5 rank)."""
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        sel = np.flatnonzero(scores >= kth)
    else:
        sel = np.arange(len(scores))
    order = sel[np.lexsort((cands[sel], -scores[sel]))][:k]
    return [(int(cands[i]), -1.0 * float(scores[i])) for i in order]
