"""Which MEMORY.md entries deserve a second look, and the evidence for each.

``MEMORY.md`` is given to the agent every turn (:mod:`engine.memory.context`), so
every entry in it costs tokens on every turn, and past OpenClaw's budget some are
never seen at all. An *entry* is a top-level list item with its continuation lines,
or a paragraph, under its heading (the cut :func:`engine.memory.dreaming.entries.
split_entries` makes). Four kinds of suggestion, each with what it rests on:

* ``duplicate``: two entries that say nearly the same thing, by their words (Jaccard
  of their word sets, or the ratio of matching characters) or, when the engine has
  an embedding provider, by their vectors' cosine;
* ``daily-log``: an entry that repeats a line of a daily log word for word (case,
  spacing and list markers aside): the daily log keeps it searchable;
* ``not-recalled``: an entry no search returned in the last N days (the recall log,
  :func:`engine.memory.recall.load_events`), said only when searches were recorded;
* ``unseen``: an entry in the lines the agent never sees (past the budget).

Nothing here writes; :mod:`engine.memory.curation_actions` makes the changes.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from engine.index.chunking import chunk_markdown
from engine.index.line_vectors import space_key, unit_spans
from engine.memory.context import MEMORY_NAME, ContextReport, context_report, with_memory_text
from engine.memory.dreaming.entries import (
    Entry,
    normalize_text,
    split_entries,
    without_comments,
)
from engine.memory.recall import load_events
from engine.records import JsonRecord

if TYPE_CHECKING:
    from engine.core import Engine

DEFAULT_DAYS = 30
#: two entries whose word sets overlap this much (Jaccard) are near-duplicates
WORD_OVERLAP = 0.6
#: ... or when this much of the shorter one's words are in the longer (it says little
#: more than the other: a merge candidate), for entries of at least CONTAINED_WORDS
WORD_CONTAINMENT = 0.85
CONTAINED_WORDS = 5
#: ... or whose characters match this much (difflib's ratio, case and spacing aside)
CHAR_RATIO = 0.85
#: ... or whose vectors are this close (cosine)
VECTOR_COSINE = 0.92
#: entries shorter than this many distinct words are compared by characters only
MIN_WORDS = 3
PREVIEW_CHARS = 160

Kind = Literal["duplicate", "daily-log", "not-recalled", "unseen"]
KIND_ORDER: tuple[Kind, ...] = ("duplicate", "daily-log", "unseen", "not-recalled")
_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")


@dataclass(frozen=True)
class EntryRef(JsonRecord):
    """One entry: where it is and the start of what it says."""

    JSON_NAMES: ClassVar = {"start_line": "startLine", "end_line": "endLine"}
    JSON_HIDDEN: ClassVar = frozenset({"digest"})

    path: str
    start_line: int
    end_line: int
    text: str  # the first PREVIEW_CHARS characters, on one line
    heading: str | None
    #: sha256 of the entry's exact text: an action refuses an entry that changed
    digest: str = ""

    @classmethod
    def of(cls, entry: Entry) -> EntryRef:
        preview = normalize_text(entry.text)
        if len(preview) > PREVIEW_CHARS:
            preview = preview[: PREVIEW_CHARS - 1] + "…"
        digest = hashlib.sha256(entry.text.encode("utf-8", "surrogatepass")).hexdigest()
        return cls(entry.path, entry.start_line, entry.end_line, preview, entry.heading, digest)

    @property
    def where(self) -> str:
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass(frozen=True)
class Suggestion(JsonRecord):
    """An entry worth a second look, why, and what can be done about it."""

    OMIT_WHEN_NONE: ClassVar = frozenset({"other", "score"})

    kind: Kind
    entry: EntryRef
    evidence: str
    #: the actions that fit: ``merge`` (duplicates), ``delete``, ``move``
    actions: tuple[str, ...]
    #: the other entry of a duplicate pair, or the daily-log line repeated
    other: EntryRef | None = None
    score: float | None = None

    @property
    def key(self) -> str:
        other = f":{self.other.start_line}" if self.other is not None else ""
        return f"{self.kind}:{self.entry.start_line}{other}"


@dataclass(frozen=True)
class Suggestions(JsonRecord):
    """Every suggestion for one MEMORY.md, and what the search for them used."""

    JSON_NAMES: ClassVar = {
        "entry_count": "entries",
        "searches_in_window": "searchesInWindow",
        "compared_by": "comparedBy",
    }
    JSON_HIDDEN: ClassVar = frozenset({"entries_found", "context"})

    path: str
    entry_count: int
    days: int
    #: how duplicates were compared: "words" or "words and vectors (<provider>)"
    compared_by: str
    searches_in_window: int
    suggestions: tuple[Suggestion, ...]
    notes: tuple[str, ...] = ()
    entries_found: tuple[Entry, ...] = field(default=(), compare=False)
    context: ContextReport | None = field(default=None, compare=False)


# -- entries -------------------------------------------------------------------------------
def memory_entries(text: str) -> list[Entry]:
    """MEMORY.md's entries: every list item and paragraph, however short."""
    return split_entries(text, path=MEMORY_NAME, source="memory", day=None, min_words=1)


def _plain(text: str) -> str:
    """An entry or a log line as compared: no list marker, no HTML comment (an
    ``<!-- importance: N -->``), one space, case folded."""
    text = without_comments(text)
    lines = [
        _MARKER.sub("", ln, count=1) if i == 0 else ln for i, ln in enumerate(text.split("\n"))
    ]
    return " ".join(" ".join(lines).split()).casefold().rstrip(".!?;:, ")


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


# -- the four kinds ------------------------------------------------------------------------
def _word_overlap(entries: Sequence[Entry]) -> np.ndarray:
    """The Jaccard of every two entries' word sets, as one matrix product."""
    vocabulary: dict[str, int] = {}
    rows = [[vocabulary.setdefault(w, len(vocabulary)) for w in e.words] for e in entries]
    x = np.zeros((len(entries), max(1, len(vocabulary))), dtype=np.float32)
    for i, cols in enumerate(rows):
        x[i, cols] = 1.0
    inter = x @ x.T
    sizes = x.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - inter
    jaccard: np.ndarray = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    return jaccard


def _containment(entries: Sequence[Entry], i: int, j: int) -> float:
    """The share of the shorter entry's words found in the other (0 below
    :data:`CONTAINED_WORDS` words)."""
    a, b = entries[i].words, entries[j].words
    small = min(len(a), len(b))
    return len(a & b) / small if small >= CONTAINED_WORDS else 0.0


def _char_ratio(a: str, b: str) -> float:
    """difflib's ratio, skipped (0) when its cheap upper bounds already fall short."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < CHAR_RATIO or matcher.quick_ratio() < CHAR_RATIO:
        return 0.0
    return matcher.ratio()


def near_duplicates(
    entries: Sequence[Entry], vectors: np.ndarray | None = None
) -> list[Suggestion]:
    """Entries that say nearly the same thing as an earlier one: each later entry once,
    with the earlier entry closest to it."""
    plain = [_plain(e.text) for e in entries]
    words = _word_overlap(entries) if entries else np.zeros((0, 0))
    sims = vectors @ vectors.T if vectors is not None and len(entries) > 1 else None
    out: list[Suggestion] = []
    for j in range(len(entries)):
        best: Suggestion | None = None
        for i in range(j):
            a, b = entries[i], entries[j]
            short = min(len(a.words), len(b.words)) < MIN_WORDS
            overlap = 0.0 if short else float(words[i, j])
            cosine = float(sims[i, j]) if sims is not None else None
            why: list[str] = []
            if overlap >= WORD_OVERLAP:
                why.append(f"{overlap:.0%} of their words in common")
            contained = _containment(entries, i, j) if not short and overlap >= 0.3 else 0.0
            if overlap < WORD_OVERLAP and contained >= WORD_CONTAINMENT:
                why.append(f"{contained:.0%} of the shorter one's words are in the other")
            ratio = _char_ratio(plain[i], plain[j]) if short or words[i, j] >= 0.45 else 0.0
            if ratio >= CHAR_RATIO:
                why.append(f"{ratio:.0%} of their characters match")
            if cosine is not None and cosine >= VECTOR_COSINE:
                why.append(f"vector cosine {cosine:.2f}")
            if not why:
                continue
            score = round(max(overlap, contained, ratio, cosine or 0.0), 4)
            if best is None or (best.score or 0.0) < score:
                best = Suggestion(
                    "duplicate",
                    EntryRef.of(b),
                    f"near-duplicate of lines {a.start_line}–{a.end_line}: " + "; ".join(why),
                    ("merge", "delete", "move"),
                    other=EntryRef.of(a),
                    score=score,
                )
        if best is not None:
            out.append(best)
    return out


def repeated_daily_lines(
    entries: Sequence[Entry], logs: Sequence[tuple[str, str]]
) -> list[Suggestion]:
    """Entries a daily log already holds word for word (``logs``: (path, text))."""
    wanted: dict[str, list[Entry]] = {}
    for e in entries:
        key = _plain(e.text)
        if len(key.split()) >= 2:
            wanted.setdefault(key, []).append(e)
    out: list[Suggestion] = []
    seen: set[int] = set()
    for path, text in sorted(logs):
        for number, line in enumerate(text.split("\n"), start=1):
            for e in wanted.get(_plain(line), ()):
                if id(e) in seen:
                    continue
                seen.add(id(e))
                log = EntryRef(path, number, number, _plain(line)[:PREVIEW_CHARS], None)
                out.append(
                    Suggestion(
                        "daily-log",
                        EntryRef.of(e),
                        f"repeats {path}#L{number} word for word; the daily log keeps it "
                        "searchable",
                        ("delete", "move"),
                        other=log,
                    )
                )
    return out


@dataclass(frozen=True)
class Recalled:
    """MEMORY.md's results in the recall window, placed in the file as it is now."""

    #: line ranges of the file as it is now that searches returned
    hits: tuple[tuple[int, int], ...] = ()
    #: searches recorded in the window (all files)
    searches: int = 0
    #: results recorded before MEMORY.md's last change whose lines cannot be placed in
    #: the edited file (the chunk was re-cut): they are not counted for any entry
    unplaced: int = 0
    #: when MEMORY.md last changed (unix time), when that left results unplaced
    changed_at: float | None = None


def unrecalled(entries: Sequence[Entry], recalled: Recalled, days: int) -> list[Suggestion]:
    """Entries no search returned in the window. When results from before MEMORY.md's
    last change cannot be placed in the edited file, the claim is only about the
    searches since that change, and says so."""
    if recalled.unplaced and recalled.changed_at is not None:
        when = dt.datetime.fromtimestamp(recalled.changed_at).astimezone()
        why = (
            f"no search returned it since MEMORY.md changed ({when:%Y-%m-%d %H:%M});"
            f" {recalled.unplaced:,} result{'' if recalled.unplaced == 1 else 's'} of earlier"
            " searches cannot be placed in the edited file"
        )
    else:
        why = (
            f"no search in the last {days} days returned it ({recalled.searches:,} searches"
            " recorded)"
        )
    out: list[Suggestion] = []
    for e in entries:
        if any(e.overlaps(start, end) for start, end in recalled.hits):
            continue
        out.append(Suggestion("not-recalled", EntryRef.of(e), why, ("move", "delete")))
    return out


def in_unseen_lines(entries: Sequence[Entry], report: ContextReport) -> list[Suggestion]:
    """Entries the agent does not get whole: in the lines it never sees, or cut."""
    memory = report.memory
    if memory is None or not (memory.hidden or memory.cut_lines):
        return []
    why = ", ".join("max/file" if c == "per-file-limit" else "max/total" for c in memory.causes)
    out: list[Suggestion] = []
    for e in entries:
        hidden = [r for r in memory.hidden if e.overlaps(r.start_line, r.end_line)]
        cut = [n for n in memory.cut_lines if e.start_line <= n <= e.end_line]
        if not hidden and not cut:
            continue
        if (
            hidden
            and not cut
            and all(r.start_line <= e.start_line and e.end_line <= r.end_line for r in hidden)
        ):
            where = f"in {hidden[0]}, which never reach the agent"
        else:
            parts = [str(r) for r in hidden] + [f"line {n} (cut)" for n in cut]
            where = f"only partly seen by the agent ({', '.join(parts)})"
        out.append(
            Suggestion(
                "unseen",
                EntryRef.of(e),
                f"{where} ({why}): move it to a topic file, where memory_search still finds it",
                ("move", "delete"),
            )
        )
    return out


# -- all of it for an engine -------------------------------------------------------------
#: at most this many entries without a stored line vector are embedded for a comparison
EMBED_AT_MOST = 64


def _line_vectors(engine: Engine, text: str) -> dict[int, np.ndarray]:
    """line number → the unit vector the index stores for it (line vectors, kept for
    the calibrated fusion), for the chunks of ``text`` the index holds as they are."""
    provider = engine.provider
    assert provider is not None
    ms = engine.ms
    chunks = chunk_markdown(text, ms.chunking.tokens, ms.chunking.overlap)
    with engine.pinned_store() as store:
        mats = store.line_vectors([c.hash for c in chunks], space_key(provider))
    out: dict[int, np.ndarray] = {}
    for c in chunks:
        mat = mats.get(c.hash)
        spans = unit_spans(c.text)
        if mat is None or mat.shape[0] != len(spans):
            continue
        for (first, last, _), vec in zip(spans, mat, strict=True):
            for line in range(c.start_line + first, c.start_line + last + 1):
                out.setdefault(line, np.asarray(vec, dtype=np.float32))
    return out


def _vectors(engine: Engine, entries: Sequence[Entry], text: str) -> tuple[np.ndarray | None, str]:
    """A unit vector per entry: the mean of its lines' stored vectors, else (for at most
    :data:`EMBED_AT_MOST` entries) embedded by the engine's provider; an entry left
    without one compares by its words only."""
    provider = engine.provider
    if provider is None or len(entries) < 2:
        return None, "words"
    try:
        lines = _line_vectors(engine, text)
        rows: list[np.ndarray | None] = []
        for e in entries:
            found = [lines[n] for n in range(e.start_line, e.end_line + 1) if n in lines]
            rows.append(np.mean(found, axis=0) if found else None)
        missing = [i for i, r in enumerate(rows) if r is None][:EMBED_AT_MOST]
        if missing:
            embedded = provider.embed_documents([entries[i].text for i in missing])
            for k, i in enumerate(missing):
                rows[i] = np.asarray(embedded[k], dtype=np.float32)
        dims = next((r.shape[0] for r in rows if r is not None), 0)
        matrix = np.vstack(
            [r if r is not None and r.shape == (dims,) else np.zeros(dims) for r in rows]
        ).astype(np.float32)
    except Exception as exc:  # a provider failure costs the vectors, not the answer
        return None, f"words (vectors failed: {type(exc).__name__}: {exc})"
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms, f"words and vectors ({provider.id})"


def suggest(
    engine: Engine,
    *,
    days: int = DEFAULT_DAYS,
    text: str | None = None,
    now: float | None = None,
    vectors: bool = True,
) -> Suggestions:
    """The suggestions for the engine's MEMORY.md (``text``: an unsaved buffer instead)."""
    ws = engine.workspace
    path = ws.root / MEMORY_NAME
    notes: list[str] = []
    on_disk = ws.read(path).text if path.exists() else ""
    text = on_disk if text is None else text
    entries = memory_entries(text)
    matrix, compared_by = _vectors(engine, entries, text) if vectors else (None, "words")
    found = near_duplicates(entries, matrix)
    logs = [
        (f.rel, ws.read(f.abs).text)
        for f in ws.list_files()
        if f.kind == "daily" and f.size <= 2 * 1024 * 1024
    ]
    found += repeated_daily_lines(entries, logs)
    report = context_report(engine.settings)
    if text != on_disk:
        report = with_memory_text(report, text, ws.root)
    found += in_unseen_lines(entries, report)
    now = time.time() if now is None else now
    recalled = _recalled(engine, now - days * 86_400, now)
    searches = recalled.searches
    if searches:
        found += unrecalled(entries, recalled, days)
    else:
        notes.append(f"no search recorded in the last {days} days: recall is not judged")
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    found.sort(key=lambda s: (order[s.kind], s.entry.start_line))
    return Suggestions(
        path=MEMORY_NAME,
        entry_count=len(entries),
        days=days,
        compared_by=compared_by,
        searches_in_window=searches,
        suggestions=tuple(found),
        notes=tuple(notes),
        entries_found=tuple(entries),
        context=report,
    )


def _recalled(engine: Engine, since: float, until: float) -> Recalled:
    """MEMORY.md's results in the window, placed in the file as it is now.

    A result recorded after the file's last change names its lines as they are. One
    recorded before names the lines of an older file: it is placed by its chunk,
    when the index (in step with the file) still holds that very chunk, else left
    unplaced rather than pinned on whatever entry moved into those lines."""
    try:
        with engine.pinned_store() as store:
            events = load_events(store, since=since, until=until)
            mine = [e for e in events if e.path == MEMORY_NAME]
            changed = _mtime(engine.workspace.root / MEMORY_NAME)
            older = [e for e in mine if changed is not None and e.at < changed]
            indexed = store.files([MEMORY_NAME]).get(MEMORY_NAME)
            in_step = (
                indexed is not None and changed is not None and abs(indexed.mtime - changed) < 1e-6
            )
            ids = [e.chunk_id for e in older if e.chunk_id is not None] if in_step else []
            rows = store.chunk_rows(ids) if ids else {}
            hashes = store.chunk_hashes(ids) if ids else {}
    except Exception:  # no index yet, or one that cannot be read: nothing recorded
        return Recalled()
    hits: list[tuple[int, int]] = []
    unplaced = 0
    for e in mine:
        if changed is None or e.at >= changed:
            hits.append((e.start_line, e.end_line))
            continue
        row = rows.get(e.chunk_id) if e.chunk_id is not None else None
        if row is not None and row.path == MEMORY_NAME and hashes.get(row.id) == e.chunk_hash:
            hits.append((row.start_line, row.end_line))
        else:
            unplaced += 1
    return Recalled(
        hits=tuple(hits),
        searches=len({(e.at, e.query_key) for e in events}),
        unplaced=unplaced,
        changed_at=changed if unplaced else None,
    )


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def render_suggestions(found: Suggestions) -> str:
    """The text form of ``memdeck curate``."""
    lines = [
        f"{found.path}: {found.entry_count} entries, {len(found.suggestions)} suggestions "
        f"(duplicates by {found.compared_by}; recall over {found.days} days)"
    ]
    for s in found.suggestions:
        lines.append("")
        lines.append(f"{s.kind:<13}{s.entry.where}  {s.entry.text}")
        lines.append(f"{'':<13}{s.evidence}")
        if s.other is not None and s.kind == "duplicate":
            lines.append(f"{'':<13}other: {s.other.where}  {s.other.text}")
        lines.append(f"{'':<13}actions: {', '.join(s.actions)}")
    lines += [f"note: {note}" for note in found.notes]
    return "\n".join(lines)


__all__ = [
    "DEFAULT_DAYS",
    "EntryRef",
    "Suggestion",
    "Suggestions",
    "memory_entries",
    "near_duplicates",
    "render_suggestions",
    "repeated_daily_lines",
    "suggest",
    "unrecalled",
]
