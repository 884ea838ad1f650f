"""Acting on a curation suggestion: move, merge or delete a MEMORY.md entry.

Every action is planned first (:func:`plan_delete`, :func:`plan_merge`,
:func:`plan_move`): a :class:`Plan` holds each file's text as read, with its hash,
and the text it will have, so the change can be shown as a diff before anything is
written. :func:`apply` writes exactly that plan, and only if no file changed on disk
in between (:class:`CurationConflict` otherwise, nothing written); it returns the
plan that undoes it, which :func:`apply` takes the same way.

Only the entry acted on changes. Other entries keep every byte (line endings, a
BOM, trailing spaces): lines are cut out whole, and the one blank line that would
be left doubled is the only other line removed. A merge appends to the kept entry
the sentences of the other that it does not already say. A move appends the entry
to a topic file under ``memory/`` (created with a heading when new), where
``memory_search`` still finds it; optionally a one-line pointer takes its place.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engine.index.tokens import similarity_tokens
from engine.memory.context import MEMORY_NAME
from engine.memory.curation import EntryRef, memory_entries
from engine.memory.dreaming.entries import Entry, normalize_text
from engine.workspace.dates import date_from_path
from engine.workspace.files import Document, ExternalChangeError, Workspace, sha256_bytes

if TYPE_CHECKING:
    from engine.core import Engine

Action = Literal["delete", "merge", "move", "undo"]
BOM = "\ufeff"
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_MARKER = re.compile(r"^(\s*(?:[-*+]|\d{1,3}[.)])\s+)")
_SLUG = re.compile(r"[^a-z0-9]+")


class CurationConflict(RuntimeError):
    """A file changed since the plan was made (or the entry is gone): nothing written."""


@dataclass(frozen=True)
class Change:
    """One file's text before (as read, with its hash) and after."""

    rel: str
    path: Path
    before: Document
    after: str | None  # None: the file is removed (undoing the creation of a topic file)

    def diff(self) -> str:
        old = self.before.text.splitlines(keepends=True) if self.before.exists else []
        new = self.after.splitlines(keepends=True) if self.after is not None else []
        label = f"a/{self.rel}" if self.before.exists else "/dev/null"
        lines = difflib.unified_diff(
            old, new, label, f"b/{self.rel}" if self.after is not None else "/dev/null"
        )
        # a last line without its newline says so on a line of its own, as diff does
        # (glued to the next line, the next file's header read as part of the text)
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        )


@dataclass(frozen=True)
class Plan:
    """What an action will write, file by file; ``title`` says it in words."""

    action: Action
    title: str
    changes: tuple[Change, ...]

    @property
    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(c.path for c in self.changes)


# -- reading and locating ------------------------------------------------------------------
def _read(ws: Workspace, rel: str) -> Document:
    """The file as read, with a BOM put back in its text (``Workspace.read`` drops it,
    and a rewrite must keep the first entry's bytes)."""
    path = ws.root / rel
    doc = ws.read(path)
    if doc.exists and _starts_with_bom(path):
        return Document(doc.path, BOM + doc.text, doc.sha256, doc.exists, doc.decode_error)
    return doc


def _starts_with_bom(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False


def _lines(text: str) -> tuple[str, list[str]]:
    """(a BOM or "", the lines with their endings), split on ``\\n`` only, as the
    entries count them; :func:`_text` puts them back together, BOM first."""
    bom = BOM if text.startswith(BOM) else ""
    body = text[len(bom) :]
    return bom, [p for p in re.split(r"(?<=\n)", body) if p]


def _text(bom: str, lines: Sequence[str]) -> str:
    return bom + "".join(lines)


def _digest(entry: Entry) -> str:
    return hashlib.sha256(entry.text.encode("utf-8", "surrogatepass")).hexdigest()


def locate(text: str, ref: EntryRef) -> Entry:
    """The entry ``ref`` names, in ``text`` as it is now: at its lines, else (lines
    moved) wherever its exact text is; :class:`CurationConflict` when it is gone."""
    entries = memory_entries(text.removeprefix(BOM))
    for e in entries:
        same_lines = (e.start_line, e.end_line) == (ref.start_line, ref.end_line)
        if same_lines and (not ref.digest or _digest(e) == ref.digest):
            return e
    for e in entries:
        if ref.digest and _digest(e) == ref.digest:
            return e
    raise CurationConflict(
        f"{ref.where} is no longer the entry that was suggested (the file changed); "
        "nothing was written"
    )


def _cut(lines: list[str], start: int, end: int) -> list[str]:
    """``lines`` without lines ``start``…``end`` (1-based), and without the blank line
    that would be left doubled (the one after, or before at the end of the file)."""
    before, after = lines[: start - 1], lines[end:]

    def blank(line: str) -> bool:
        return not line.strip()

    if after and blank(after[0]) and (not before or blank(before[-1])):
        after = after[1:]
    elif not after and before and blank(before[-1]):
        before = before[:-1]
    return before + after


# -- the three actions ---------------------------------------------------------------------
def plan_delete(ws: Workspace, ref: EntryRef) -> Plan:
    doc = _read(ws, MEMORY_NAME)
    entry = locate(doc.text, ref)
    bom, lines = _lines(doc.text)
    after = _text(bom, _cut(lines, entry.start_line, entry.end_line))
    return Plan(
        "delete",
        f"Delete {ref.where}",
        (Change(MEMORY_NAME, doc.path, doc, after),),
    )


#: a sentence counts as said when this much of its words are in the kept entry already
SAID_WORDS = 0.8


def new_sentences(keep: str, drop: str) -> list[str]:
    """The sentences of ``drop`` that ``keep`` does not already say, in their order: not
    written in it (case and spacing aside), nor with most of their words in it."""
    said = " ".join(normalize_text(keep).split()).casefold()
    said_words = similarity_tokens(keep)
    out = []
    for sentence in _SENTENCE_END.split(normalize_text(drop)):
        sentence = sentence.strip()
        if not sentence or " ".join(sentence.split()).casefold() in said:
            continue
        words = similarity_tokens(sentence)
        if words and len(words & said_words) / len(words) >= SAID_WORDS:
            continue
        out.append(sentence)
    return out


def plan_merge(ws: Workspace, keep: EntryRef, drop: EntryRef) -> Plan:
    """Keep ``keep`` with what only ``drop`` says appended to its last line; drop ``drop``."""
    doc = _read(ws, MEMORY_NAME)
    kept, dropped = locate(doc.text, keep), locate(doc.text, drop)
    if kept.overlaps(dropped.start_line, dropped.end_line):
        raise CurationConflict("an entry cannot be merged into itself")
    bom, lines = _lines(doc.text)
    extra = new_sentences(kept.text, dropped.text)
    if extra:
        last = lines[kept.end_line - 1]
        body = last.rstrip("\r\n")
        ending = last[len(body) :]
        joiner = "" if body.endswith(" ") else " "
        lines[kept.end_line - 1] = body + joiner + " ".join(extra) + ending
    after = _text(bom, _cut(lines, dropped.start_line, dropped.end_line))
    said = f" (adding {len(extra)} sentence{'s' if len(extra) != 1 else ''})" if extra else ""
    return Plan(
        "merge",
        f"Merge {drop.where} into {keep.where}{said}",
        (Change(MEMORY_NAME, doc.path, doc, after),),
    )


def topic_path(entry: EntryRef) -> str:
    """The default topic file for an entry: its heading as a file name under memory/."""
    slug = _SLUG.sub("-", (entry.heading or "").lower()).strip("-")[:60]
    return f"memory/{slug or 'archive'}.md"


def check_topic(ws: Workspace, rel: str) -> str:
    """``rel`` as a topic file: under memory/, a .md name, not a daily log, not
    MEMORY.md; raises ValueError naming what is wrong."""
    rel = rel.strip().replace("\\", "/").removeprefix("./")
    if not rel.startswith("memory/") or not rel.endswith(".md") or rel == "memory/.md":
        raise ValueError(f"{rel!r}: a topic file is a .md file under memory/")
    if date_from_path(rel) is not None:
        raise ValueError(f"{rel}: that is a daily log's name; daily logs are append-only")
    ws.resolve(rel)  # refuses .. and symlinks
    return rel


def plan_move(ws: Workspace, ref: EntryRef, topic: str, *, pointer: bool = False) -> Plan:
    """Move the entry to ``topic`` (appended; the file is created with a heading when
    new), leaving a one-line pointer in its place when asked."""
    topic = check_topic(ws, topic)
    doc = _read(ws, MEMORY_NAME)
    entry = locate(doc.text, ref)
    bom, lines = _lines(doc.text)
    block = lines[entry.start_line - 1 : entry.end_line]
    moved = "".join(block)
    if not moved.endswith("\n"):
        moved += "\n"
    if pointer:
        marker = _MARKER.match(block[0])
        preview = normalize_text(entry.text)
        preview = preview if len(preview) <= 60 else preview[:59] + "…"
        ending = "\r\n" if lines[entry.end_line - 1].endswith("\r\n") else "\n"
        if not lines[entry.end_line - 1].endswith("\n"):
            ending = ""
        line = f"{marker.group(1) if marker else ''}Moved to {topic}: {preview}{ending}"
        rest = [*lines[: entry.start_line - 1], line, *lines[entry.end_line :]]
    else:
        rest = _cut(lines, entry.start_line, entry.end_line)
    target = _read(ws, topic)
    # the topic file keeps one kind of line end: its own, or (new) the entry's
    if target.exists and target.text:
        nl = "\r\n" if "\r\n" in target.text else "\n"
    else:
        nl = "\r\n" if moved.endswith("\r\n") else "\n"
    moved = moved.replace("\r\n", "\n").replace("\n", nl)
    if target.exists and target.text:
        text = target.text if target.text.endswith("\n") else target.text + nl
        grown = text + ("" if text.endswith(nl + nl) else nl) + moved
    else:
        title = ref.heading or Path(topic).stem.replace("-", " ").capitalize()
        grown = f"# {title}{nl}{nl}{moved}"
    return Plan(
        "move",
        f"Move {ref.where} to {topic}" + (" (a pointer stays)" if pointer else ""),
        (
            Change(MEMORY_NAME, doc.path, doc, _text(bom, rest)),
            Change(topic, target.path, target, grown),
        ),
    )


# -- writing ---------------------------------------------------------------------------------
def _undo_of(plan: Plan) -> Plan:
    changes = []
    for c in plan.changes:
        if c.after is None:  # the file was removed: redoing writes it again
            now = Document(c.path, "", sha256_bytes(b""), exists=False)
        else:
            now = Document(c.path, c.after, sha256_bytes(c.after.encode("utf-8")), exists=True)
        changes.append(Change(c.rel, c.path, now, c.before.text if c.before.exists else None))
    return Plan("undo", f"Undo: {plan.title}", tuple(changes))


def apply(ws: Workspace, plan: Plan) -> Plan:
    """Write ``plan`` if every file is still as it was read; returns its undo.

    Raises :class:`CurationConflict` (and writes nothing) when a file changed on disk
    since the plan was made."""
    for c in plan.changes:
        now = ws.read(c.path)
        if now.exists != c.before.exists or (now.exists and now.sha256 != c.before.sha256):
            raise CurationConflict(
                f"{c.rel} changed on disk since the change was shown; nothing was written "
                "(look again, then retry)"
            )
    done: list[Change] = []
    try:
        for c in plan.changes:
            if c.after is None:
                os.unlink(c.path)
            else:
                ws.save(Document(c.path, c.before.text, c.before.sha256, c.before.exists), c.after)
            done.append(c)
    except (ExternalChangeError, OSError) as exc:
        _roll_back(ws, done)
        raise CurationConflict(f"not written: {exc}") from exc
    return _undo_of(plan)


def _roll_back(ws: Workspace, done: Sequence[Change]) -> None:
    """Put back what a half-written plan wrote (best effort: the first write's file)."""
    for c in reversed(done):
        try:
            if not c.before.exists:
                os.unlink(c.path)
            elif c.after is not None:
                now = ws.read(c.path)
                ws.save(now, c.before.text)
        except OSError:
            pass


def apply_and_index(engine: Engine, plan: Plan) -> Plan:
    """:func:`apply`, then the index follows at once: a sync of the changed files."""
    undo = apply(engine.workspace, plan)
    engine.mark_dirty()
    engine.sync(reason="curate", paths=[str(p) for p in plan.paths])
    return undo


__all__ = [
    "Change",
    "CurationConflict",
    "Plan",
    "apply",
    "apply_and_index",
    "check_topic",
    "locate",
    "new_sentences",
    "plan_delete",
    "plan_merge",
    "plan_move",
    "topic_path",
]
