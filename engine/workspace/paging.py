"""How ``memory_get`` (and ``memdeck get``) cut a memory file into pages.

The facts follow OpenClaw's memory read: lines are split on ``\\n`` and a final
newline does not make an extra empty line (so an empty file has 0 lines and a
file ending in ``\\n`` has no phantom continuation); ``from`` and ``lines`` are
clamped to at least 1 (``lines: 0`` reads one line); whole lines are packed
into a 12,000-character budget, always at least one; a continuation is offered
only when something is left, and the text then ends with a notice saying how
to continue.

One thing differs, by design: a single line longer than the budget. OpenClaw
cuts it and offers no way to read the rest. Here the page says where the cut
is (``nextChar``: continue the same line with ``from=L, fromChar=C``) and, if
lines follow, ``nextFrom`` is the line after it. Every continuation therefore
moves forward — ``nextFrom > from``, or the same line at a larger character
offset — so an agent that keeps following them reaches the end of the file in
at most ``len(text) / budget + lines`` calls.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_LINES = 120
MAX_CHARS = 12_000


@dataclass(frozen=True)
class Page:
    """One slice of a file, with where to continue (``None``: nothing left there)."""

    text: str  # the slice itself, without the continuation notice
    start: int  # 1-based first line
    start_char: int  # where in the first line the text begins (0 unless continuing a cut line)
    lines: int  # lines shown, a cut line included
    total_lines: int
    next_from: int | None  # first line after this page, when one exists
    next_char: int | None  # the last shown line was cut: continue it at this offset ...
    cut_line: int | None  # ... of this line
    cut_line_chars: int | None  # whose full length is this
    start_line_chars: int = 0  # length of line ``start`` (0 past the end)

    @property
    def truncated(self) -> bool:
        return self.next_from is not None or self.next_char is not None

    @property
    def past_end(self) -> bool:
        """``start`` is beyond the last line (line 1 of an empty file is not)."""
        return self.start > max(1, self.total_lines)

    def notice(self) -> str:
        """The sentence appended to the text when there is more (empty otherwise)."""
        if self.next_char is not None:
            where = (
                f"Line {self.cut_line} is longer than the page: shown up to character "
                f"{self.next_char} of {self.cut_line_chars}. Read on in it with "
                f"from={self.cut_line} fromChar={self.next_char}"
            )
            if self.next_from is not None:
                where += f", or skip to the next line with from={self.next_from}"
            return f"\n\n[{where}.]"
        if self.next_from is not None:
            return f"\n\n[More of this file follows: continue with from={self.next_from}.]"
        return ""


def file_lines(content: str) -> list[str]:
    """The file's lines; a final newline ends the last line rather than adding one."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def read_page(
    content: str,
    from_line: int | None = None,
    lines: int | None = None,
    *,
    from_char: int | None = None,
    max_chars: int = MAX_CHARS,
) -> Page:
    """The page of ``content`` starting at line ``from_line`` (character ``from_char``)."""
    all_lines = file_lines(content)
    start, count, offset, budget = page_request(from_line, lines, from_char, max_chars)
    chosen = all_lines[start - 1 : start - 1 + count]
    first_chars = len(chosen[0]) if chosen else 0
    offset = min(offset, first_chars)  # past the end of the line: its (empty) remainder
    if chosen and offset:
        chosen[0] = chosen[0][offset:]
    return page_of_lines(chosen, start, len(all_lines), offset, first_chars, budget)


def page_request(
    from_line: int | None, lines: int | None, from_char: int | None, max_chars: int
) -> tuple[int, int, int, int]:
    """(start, count, char offset, budget) with the clamps described above."""
    start = max(1, int(from_line)) if from_line is not None else 1
    count = max(1, int(lines)) if lines is not None else DEFAULT_LINES
    return start, count, max(0, int(from_char or 0)), max(1, int(max_chars))


def page_of_lines(
    chosen: list[str], start: int, total: int, offset: int, first_chars: int, budget: int
) -> Page:
    """The page made of ``chosen`` (lines ``start…``, the first already cut at
    ``offset``; any line may be cut to ``budget + 1`` characters, which decides the
    same). ``first_chars`` is the full length of line ``start``. Shared by
    ``read_page`` and the streaming reader (``engine.workspace.streaming``)."""
    if not chosen:
        return Page("", start, offset, 0, total, None, None, None, None)

    if len(chosen[0]) > budget:  # one line alone overflows: cut it, say where
        return Page(
            text=chosen[0][:budget],
            start=start,
            start_char=offset,
            lines=1,
            total_lines=total,
            next_from=start + 1 if start < total else None,
            next_char=offset + budget,
            cut_line=start,
            cut_line_chars=first_chars,
            start_line_chars=first_chars,
        )
    used, size = 0, 0
    for line in chosen:
        grown = size + len(line) + (1 if used else 0)
        if used and grown > budget:
            break
        used, size = used + 1, grown
    after = start + used  # the first line not shown
    return Page(
        text="\n".join(chosen[:used]),
        start=start,
        start_char=offset,
        lines=used,
        total_lines=total,
        next_from=after if after <= total else None,
        next_char=None,
        cut_line=None,
        cut_line_chars=None,
        start_line_chars=first_chars,
    )
