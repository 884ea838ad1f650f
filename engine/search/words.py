"""Words as a reader matches them: a query's words against a chunk's name and lines.

FTS5 matches tokens exactly (case and accents folded, nothing else), which is what
the keyword side's bm25 is made of. People typing a name are looser: ``sofia`` is
``Sofía``, ``migrations`` is the ``migration`` of a title, ``projects`` the
``projects/`` folder. :func:`fold` is that looser match — case folded, accents
off, one English plural ending off — and it is used where memdeck compares words
itself: the name signal (a query word in the chunk's file name or headings,
:func:`name_words`) and the snippet's choice of lines (``engine.search.snippets``).
The calibrated keyword side counts a word's occurrences in a chunk (its term
frequency) and the chunk's length in terms as bm25 does: FTS5's unicode61 terms
(``engine.index.unicode61``; the keyword postings hold both per row, and
:func:`token_counts` gives the same numbers from the text). Pure functions, no I/O.
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from collections import Counter
from functools import lru_cache

from engine.index.tokens import words_of
from engine.index.unicode61 import term_counts, word_terms
from engine.workspace.dates import MONTH_NAMES, WEEKDAY_NAMES, date_from_path

__all__ = [
    "FUNCTION_WORDS",
    "fold",
    "folded_words",
    "function_word",
    "heading_words",
    "name_words",
    "path_words",
    "token_counts",
    "word_terms",
]

#: the workspace's memory folder: every note is under it, so it names nothing
_ROOT_FOLDER = "memory"

#: English words that carry no topic: articles, pronouns, auxiliaries, prepositions,
#: conjunctions, question words. On the calibrated keyword side each weighs the floor
#: (``scoring.word_weight``): "When is the atlas cut-over" is about atlas and cut-over.
#: By its idf alone, a word a small memory seldom holds ("when", "is") weighed most.
FUNCTION_WORDS = frozenset(
    " ".join(
        (
            "a an and are as at be been by can could did do does for from had has have he her",
            "his how i if in into is it its me my of on or our she so than that the their them",
            "they this to was we were what when where which who whom why will with would you",
            "your kind type any some many much often ever there after before about during since",
        )
    ).split(" ")
)


def function_word(term: str) -> bool:
    """Whether a query term is one of :data:`FUNCTION_WORDS` (any case)."""
    return term.lower() in FUNCTION_WORDS


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """``word`` case folded, without accents and without one plural ending:
    ``Sofía`` → ``sofia``, ``migrations`` → ``migration``, ``stories`` → ``story``,
    ``boxes`` → ``box``; ``status``, ``class`` and ``analysis`` keep their ``s``.
    Both sides of a comparison are folded, so ``Atlas`` and ``atlas`` meet at ``atla``."""
    w = _strip_accents(word.casefold())
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _strip_accents(word: str) -> str:
    if word.isascii():
        return word
    return "".join(
        ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch)
    )


@lru_cache(maxsize=2048)
def token_counts(text: str) -> Counter[str]:
    """How often each FTS5 term occurs in ``text`` (``unicode61.term_counts``): the
    term frequencies and, summed, the length of the calibrated keyword side where
    the keyword postings cannot give them; remembered for the chunks of the last
    searches (a search ranks ~50)."""
    return term_counts(text)


def folded_words(text: str) -> list[str]:
    """The words of ``text`` (runs of letters, digits and ``_``, as a query is split), folded."""
    return [fold(w) for w in words_of(text)]


@lru_cache(maxsize=4096)
def path_words(path: str) -> frozenset[str]:
    """The folded words of a file's path: its folders under ``memory/`` and its name,
    without the extension (``memory/projects/atlas.md`` → ``project``, ``atla``); a
    dated name (a daily log) also says its date as people write it (``date_words``)."""
    parts = path.split("/")
    if len(parts) > 1 and parts[0] == _ROOT_FOLDER:
        parts = parts[1:]
    stem = parts[-1].rsplit(".", 1)[0] if "." in parts[-1] else parts[-1]
    words = {w for part in [*parts[:-1], stem] for w in folded_words(part)}
    day = date_from_path(path)
    return frozenset(words | date_words(day) if day is not None else words)


#: a month's short name, where it is not also an English word ("mar")
_SHORT_MONTHS = {m: m[:3] for m in MONTH_NAMES if m[:3] not in ("mar", "may")}


def date_words(day: dt.date) -> frozenset[str]:
    """How a query names a day, folded: the month (``november``, ``nov``), the day of
    the month without a leading zero (``5``) and the weekday (``friday``), so that
    "november 5" finds ``memory/2026-11-05.md`` by its name."""
    month = MONTH_NAMES[day.month - 1]
    words = (month, _SHORT_MONTHS.get(month, month), str(day.day), WEEKDAY_NAMES[day.weekday()])
    return frozenset(fold(w) for w in words)


@lru_cache(maxsize=4096)
def relative_day_words(path: str, today: dt.date) -> frozenset[str]:
    """How a query names a recent day by its distance from ``today``: the log of
    ``today`` is "today", the day before's "yesterday", and the logs of the six days
    before that are "last" (as in "last friday", its weekday being a name already)."""
    day = date_from_path(path)
    if day is None:
        return frozenset()
    ago = (today - day).days
    if ago == 0:
        return frozenset({"today"})
    if ago == 1:
        return frozenset({"yesterday", "last"})
    return frozenset({"last"}) if 1 < ago <= 7 else frozenset()


def _heading(line: str) -> str | None:
    """The text of a Markdown heading line (``#`` to ``######``), else None."""
    stripped = line.lstrip()
    if not stripped.startswith("#"):
        return None
    hashes = len(stripped) - len(stripped.lstrip("#"))
    rest = stripped[hashes:]
    return rest if hashes <= 6 and (not rest or rest[0].isspace()) else None


def heading_words(text: str, start_line: int = 0) -> tuple[frozenset[str], frozenset[str]]:
    """The folded words of the headings in a chunk's ``text``: (its file's title,
    the other headings). The title is the file's first line when it is a heading,
    so only the chunk that starts the file (``start_line`` 1) has one."""
    title: set[str] = set()
    sections: set[str] = set()
    if "#" not in text:
        return frozenset(), frozenset()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        heading = _heading(line) if "#" in line else None
        if heading is None:
            continue
        first = start_line == 1 and not any(x.strip() for x in lines[:i])
        (title if first else sections).update(folded_words(heading))
    return frozenset(title), frozenset(sections)


@lru_cache(maxsize=2048)
def name_words(path: str, text: str, start_line: int = 0) -> tuple[frozenset[str], frozenset[str]]:
    """What a chunk is called: (the words of its file's path and title, the words of
    its other headings — a section's name, which names a part of the file);
    remembered for the chunks of the last searches, as :func:`token_counts` is (the
    search box ranks mostly the same chunks again at each key)."""
    title, sections = heading_words(text, start_line)
    named = path_words(path) | title
    return named, sections - named
