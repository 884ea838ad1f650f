"""The score breakdown of one candidate: formula, parts, and the lists it came from.

Everything printed here is read from the ``Candidate`` and ``SearchOutcome``
objects the search pipeline built while ranking; nothing is recomputed for
display (the formula line is ``explain.formula`` of the candidate).
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from engine.search import explain as ex
from engine.search.model import Candidate, SearchOutcome
from engine.search.scoring import (
    CALIBRATED_TEXT_SCALE,
    GEOMETRIC_FLOOR,
    MISSING_WORD_COST,
    REFERENCE_LENGTH,
    UNIT_TEXT_SCALE,
)
from engine.search.words import function_word
from tui.format import NAME_STYLE, location, score_bar, signed_shift, style_of

LIST_ROWS = 12


def _calibrated_vector(c: Candidate) -> str:
    """Where the calibrated vector factor comes from: the larger of the best unit's
    cosine (a line, or a paragraph of wrapped prose) and the chunk's own, or the
    chunk's when it has no line vectors."""
    line = ex.side_line(c, "vector")
    value = ex.fmt(c.vector_input or 0.0)
    chunk = "–" if c.vector_score is None else ex.fmt(c.vector_score)
    if c.vector_input is None:
        return "no cosine for this chunk → 0"
    unit = ex.best_unit(c.best_line, c.best_line_end)
    if c.feedback_from is not None:
        # the query moved toward the first pass's best chunk: its norm, then the
        # moved cosines, each on a line of its own (80 columns)
        path, first, last = c.feedback_from
        where = (
            f"best {unit} cosine {ex.unit_cosine(c)}{_said_when(c)}, chunk cosine {chunk}"
            if unit is not None
            else f"chunk cosine {chunk} (no line vectors)"
        )
        norm = ex.feedback_line(c)
        shown = [
            f"query moved toward {location(path, first, last)}:",
            f"‖q+βf‖ {norm}" if norm else None,
            ex.moved_step(c),
            line,
        ]
        return "\n       ".join([where, *(str(x) for x in shown if x is not None)])
    where = (
        f"best {unit} cosine {ex.fmt(c.line_cosine or 0.0)} (chunk cosine {chunk})"
        if unit is not None
        else f"chunk cosine {value} (no line vectors)"
    )
    # the arithmetic on a line of its own, as the text side's (80 columns)
    return f"{where}:\n       {line}" if line else where


def _said_when(c: Candidate) -> str:
    """Why the best unit's cosine has τ added: the query asks when, the unit names a time."""
    return f" (asks when; it says “{c.time_words}”)" if c.time_bonus else ""


def _calibrated_text(c: Candidate) -> str:
    """The calibrated text factor's inputs, then its arithmetic on a line of its own."""
    if c.text_words is not None:
        return _words_text(c)
    line = ex.side_line(c, "text")
    if line is None or c.text_ref is None:
        return "no query word to weigh → 0"
    if not c.text_input:
        return f"no query word in this chunk: {line}"
    kappa, idf = c.text_ref
    return f"bm25 −{ex.fmt(c.text_input)}, query Σidf {ex.fmt(idf)}, κ {kappa:g}:\n       {line}"


def _words_text(c: Candidate) -> str:
    """The calibrated text factor word by word: how often the chunk holds each query
    word (– : not at all), each word's weight, then the capped weighted sum."""
    assert c.text_words is not None
    found = ", ".join(f"{w.term} {'–' if w.tf is None else f'×{w.tf}'}" for w in c.text_words)
    weights = ex.word_weight_lines(c)
    shown = [
        " · ".join(
            f"{w.term}{' (a function word)' if function_word(w.term) else ''}: {line}"
            for w, line in zip(c.text_words, weights, strict=False)
        ),
        *[str(line) for line in weights[len(c.text_words) :]],  # the sum of the weights
    ]
    strengths = ex.strength_lines(c)
    held = [w for w in c.text_words if w.tf is not None]
    if strengths:
        shown.append(
            f"strength s = tf×2.2 ÷ (tf + 1.2×(0.25 + 0.75×{c.text_length} words ÷ "
            f"{REFERENCE_LENGTH})): "
            + " · ".join(f"{w.term} {line}" for w, line in zip(held, strengths, strict=False))
        )
    line = ex.words_text_line(c)
    if line is None:
        head = f"no query word in this chunk ({found}) → 0"
        return "\n       ".join([head, "weights " + shown[0], *shown[1:]])
    head = f"query words found ({found}), weights w:"
    rule = (
        f"a missing word costs {MISSING_WORD_COST:g} of its share;"
        f" Σ w×s ÷ (κ {CALIBRATED_TEXT_SCALE:g} × Σ w)"
    )
    shown.append(f"{rule}: {line}")
    unit, larger = ex.unit_text_line(c), ex.text_max_line(c)
    if unit is not None and larger is not None:
        where = ex.best_unit(c.best_line, c.best_line_end)
        shown.append(
            f"where the words sit, its best {where} holds {', '.join(c.unit_terms)}"
            f" (÷ κu {UNIT_TEXT_SCALE:g}): {unit}"
        )
        shown.append(f"the larger of the two: {larger}")
    return "\n       ".join([head, *shown])


def _name_row(c: Candidate, s_name: str) -> Text:
    """The calibrated fusion's name signal: which query words the chunk's file path
    and headings hold, the share N, and what it added to the score."""
    row = Text("name   ", style=f"bold {s_name}")
    share = ex.name_share_line(c)
    if share is None:
        return row.append("no query word in its file name or headings → +0", style="dim")
    where = []
    if c.name_terms:
        where.append(f"file name or title holds {', '.join(c.name_terms)}")
    if c.name_section_terms:
        where.append(f"a section heading holds {', '.join(c.name_section_terms)}")
    row.append(f"+{ex.fmt(c.name_bonus)}  ", style="bold")
    row.append("; ".join(where) + f" → N {share}")
    bonus = ex.name_line(c)
    if bonus is not None:
        row.append(f"\n       base + g×N×(1 − base): {bonus}")
    return row


def _component_note(c: Candidate, outcome: SearchOutcome, side: str) -> str:
    """How a side's score became the component that is fused: the arithmetic
    (``engine.search.explain``) with the numbers the ranking used."""
    line = ex.side_line(c, side, outcome.options.rrf_k)
    value = c.vector_input if side == "vector" else c.text_input
    if c.fusion == "geometric":
        what = "cosine (≥ 0)" if side == "vector" else "−bm25"
        if line is None:
            return "no candidate has any signal on this side → neutral 1"
        return f"{what} {ex.fmt(value or 0.0)} ÷ the best candidate's: {line}"
    if c.fusion == "rrf":
        return f"RRF: {line}" if line else ""
    if c.fusion == "normalized":
        n = sum(
            1
            for other in outcome.candidates
            if (other.vector_score if side == "vector" else other.text_score) is not None
        )
        how = "z-score" if c.normalization == "zscore" else "min-max"
        if line is not None and line.expression == "1":
            return f"{how} over {n}: all equal → {line}"
        return f"{how} over {n}: {line}" if line else ""
    return "used as is"


def explain(
    c: Candidate, outcome: SearchOutcome, variables: Mapping[str, str], width: int = 84
) -> Text:
    """The breakdown panel's content for candidate ``c``."""
    s_final = style_of(variables, "score-final", "bold")
    s_vec = style_of(variables, "score-vector")
    s_text = style_of(variables, "score-text")
    s_decay = style_of(variables, "score-decay")
    s_mmr = style_of(variables, "score-mmr")
    s_drop = style_of(variables, "score-dropped", "dim")
    opts = outcome.options
    lines: list[Text] = []

    head = Text()
    if c.final_rank is not None:
        head.append(f"#{c.final_rank} ", style=f"bold {s_final}")
    else:
        head.append("dropped ", style=f"bold {s_drop}")
    head.append(location(c.path, c.start_line, c.end_line), style="bold")
    where = []
    if c.fts_position is not None:
        where.append(f"FTS #{c.fts_position}")
    if c.vector_position is not None:
        where.append(f"vector #{c.vector_position}")
    head.append("   from " + (" + ".join(where) if where else "no list"), style="dim")
    lines.append(head)

    formula = Text("score  ", style="bold")
    formula.append(ex.formula(c), style=s_final)
    lines.append(formula)
    mode_note = {
        "hybrid": f"hybrid · fusion {outcome.fusion}",
        "fts": "FTS-only: the text score alone",
        "vector": "vector-only: the cosine alone",
    }[outcome.mode]
    lines.append(Text(f"       {mode_note}", style="dim italic"))

    lines.append(_bar(c, s_vec, s_text, s_final))

    geometric = c.fusion == "geometric"
    # these fusions score every candidate on both sides, listed or not
    both = c.fusion in ("geometric", "calibrated")
    parts = c.parts

    def weighted(text: Text, weight: float, component: float | None, used: float | None) -> None:
        """``weight × factor`` (or ``factor^weight``) with the factor the fusion used."""
        if geometric:
            shown = "1 (no signal)" if component is None else ex.fmt(used or 0.0)
            text.append(shown, style="bold")
            text.append(f"^{ex.fmt(weight, 3)}", style="dim")
            if component is not None and component < GEOMETRIC_FLOOR:
                text.append(f" ({ex.fmt(component)} floored at {GEOMETRIC_FLOOR:g})", style="dim")
        else:
            text.append(f"{ex.fmt(weight, 3)} × ", style="dim")
            text.append(ex.fmt(used or 0.0), style="bold")

    unused = {"fts": "not used: FTS-only", "vector": "not used: vector-only"}.get(outcome.mode)
    vec = Text("vector ", style=f"bold {s_vec}")
    v_used = None if parts is None else parts.vector
    t_used = None if parts is None else parts.text
    if v_used is None and c.vector_weight == 0.0:
        vec.append(f"–  {unused or 'weight 0'}", style=s_drop)
    elif c.vector_score is None and not both:
        vec.append(f"{ex.fmt(c.vector_weight, 3)} × 0  not in the vector list", style=s_drop)
    elif c.fusion == "calibrated":
        weighted(vec, c.vector_weight, c.vector_component, v_used)
        vec.append(f"  {_calibrated_vector(c)}")
    elif c.vector_score is None:
        weighted(vec, c.vector_weight, c.vector_component, v_used)
        vec.append("  no cosine for this chunk", style=s_drop)
        vec.append(f" → {_component_note(c, outcome, 'vector')}", style="dim")
    else:
        weighted(vec, c.vector_weight, c.vector_component, v_used)
        vec.append(f"  cosine {ex.fmt(c.vector_score)}")
        vec.append(f" → {_component_note(c, outcome, 'vector')}", style="dim")
    lines.append(vec)

    txt = Text("text   ", style=f"bold {s_text}")
    if t_used is None and c.text_weight == 0.0:
        txt.append(f"–  {unused or 'weight 0'}", style=s_drop)
    elif c.text_score is None and not both:
        txt.append(f"{ex.fmt(c.text_weight, 3)} × 0  not in the FTS list", style=s_drop)
    elif c.fusion == "calibrated":
        weighted(txt, c.text_weight, c.text_component, t_used)
        txt.append(f"  {_calibrated_text(c)}")
    elif c.text_score is None:
        weighted(txt, c.text_weight, c.text_component, t_used)
        txt.append("  no query word in this chunk", style=s_drop)
        txt.append(f" → {_component_note(c, outcome, 'text')}", style="dim")
    else:
        weighted(txt, c.text_weight, c.text_component, t_used)
        mapped = ex.text_map_line(c)
        txt.append(f"  bm25 {ex.fmt(c.bm25_rank or 0.0)}")
        if mapped is not None and not both:
            txt.append(f" → −r/(1−r): {mapped}")
        txt.append(f" → {_component_note(c, outcome, 'text')}", style="dim")
    lines.append(txt)
    if c.name_share is not None:  # the calibrated default, hybrid or keyword-only
        lines.append(_name_row(c, s_final))

    dec = Text("decay  ", style=f"bold {s_decay}")
    if not opts.decay_enabled:
        dec.append("off", style=s_drop)
    elif c.age_days is None:
        dec.append("evergreen file (MEMORY.md or undated note) → ×1")
    else:
        line = ex.decay_line(c, opts.half_life_days)
        dec.append(
            f"age {c.age_days:g} d, half-life {opts.half_life_days:g} d → ×"
            + (str(line) if line else "1")
        )
    lines.append(dec)

    mmr = Text("MMR    ", style=f"bold {s_mmr}")
    if c.mmr_position is None:
        mmr.append("off" if not opts.mmr_enabled else "not re-ranked", style=s_drop)
    else:
        line = ex.mmr_line(c, opts.mmr_lambda)
        mmr.append(
            f"#{c.sorted_position} → #{c.mmr_position} ({signed_shift(c.mmr_shift)})"
            "  λ×relevance − (1−λ)×max-sim: " + (str(line) if line else "–")
        )
    lines.append(mmr)

    cut = Text("cut    ", style="bold")
    min_score = ex.threshold(opts.min_score)
    if c.final_rank is not None:
        if c.rescued:
            cut.append(
                f"{ex.fmt(c.score)} < minScore {min_score}, kept by the keyword rescue"
                f" (≥ min(minScore, textWeight): min({min_score}, {ex.fmt(c.text_weight, 3)})"
                f" = {ex.fmt(min(opts.min_score, c.text_weight))})",
                style=s_text,
            )
            cut.append(f" → rank {c.final_rank} of {len(outcome.results)}")
        else:
            cut.append(
                f"{ex.fmt(c.score)} ≥ minScore {min_score} → kept, rank {c.final_rank}"
                f" of {len(outcome.results)} (maxResults {opts.max_results})"
            )
    else:
        cut.append(c.dropped or "dropped", style=s_drop)
    lines.append(cut)
    lines.append(Text(""))
    lines.append(candidate_lists(outcome, c.chunk_id, variables, width))
    return Text("\n").join(lines)


def _bar(c: Candidate, s_vec: str, s_text: str, s_final: str) -> Text:
    """The score bar as the results table draws it, then its segments as numbers
    (``explain.bar_line``: they add up to the score) and what they are."""
    out = Text("bar    ", style="bold")
    line = ex.bar_line(c)
    if line is None or c.parts is None:
        return out.append("–", style="dim")
    out.append_text(score_bar(c.parts, s_vec, s_text))
    out.append(" ")
    styles = (["dim"] if c.fusion == "geometric" else []) + [s_vec, s_text, NAME_STYLE]
    # the expression's numbers in their segment's colour; the text is str(line)
    for i, piece in enumerate(line.expression.split(" ")):
        if i:
            out.append(" ")
        if piece in ("+", "−"):
            out.append(piece)
        else:
            out.append(piece, style=styles.pop(0) if styles else "")
    out.append(f" = {line.result}", style=s_final)
    out.append(f"  {ex.bar_legend(c)}", style="dim")
    return out


def _list_lines(
    title: str,
    title_style: str,
    value_head: str,
    hits: list[tuple[int, float]],
    outcome: SearchOutcome,
    selected: int | None,
    empty: str,
    loc_width: int,
) -> list[Text]:
    """One candidate list as fixed-width lines (plain Text: cheap to lay out)."""
    r = outcome.retrieval
    lines = [Text(title, style=title_style)]
    lines.append(Text(f"{'#':>2}  {'location':<{loc_width}} {value_head:>7}", style="bold"))
    for pos, (cid, value) in enumerate(hits[:LIST_ROWS], start=1):
        row = r.rows.get(cid)
        where = location(row.path, row.start_line, row.end_line) if row else f"chunk {cid}"
        if len(where) > loc_width:
            where = "…" + where[-(loc_width - 1) :]
        style = "reverse" if cid == selected else ""
        lines.append(Text(f"{pos:>2}  {where:<{loc_width}} {value:>7.3f}", style=style))
    if len(hits) > LIST_ROWS:
        lines.append(Text(f"    … {len(hits) - LIST_ROWS} more", style="dim"))
    if not hits:
        lines.append(Text(f"    {empty}", style="dim"))
    return lines


def candidate_lists(
    outcome: SearchOutcome,
    selected: int | None,
    variables: Mapping[str, str],
    width: int = 84,
) -> Text:
    """The two candidate lists side by side (in ``width`` cells), the selected
    chunk highlighted."""
    r = outcome.retrieval
    loc_width = max(16, (width - 3) // 2 - 12)
    op = r.fts_operator or ""
    fts_title = f"FTS list ({op})" if op else "FTS list"
    if r.bm25_idf_scale != 1.0:
        fts_title += f", common words: bm25 ×{r.bm25_idf_scale:.3g}"
    if outcome.mode == "vector":
        fts_title += " — unused here"
    vec_title = "vector list (cosine)"
    if outcome.mode == "fts":
        vec_title += " — unused here"
    left = _list_lines(
        fts_title,
        f"bold {style_of(variables, 'score-text')}",
        "bm25",
        r.fts_hits,
        outcome,
        selected,
        "no FTS hits" if r.fts_available else "FTS5 unavailable",
        loc_width,
    )
    why = r.vector_error or ("no embeddings (FTS-only)" if not r.vector_available else "none")
    right = _list_lines(
        vec_title,
        f"bold {style_of(variables, 'score-vector')}",
        "cos",
        r.vector_hits,
        outcome,
        selected,
        why,
        loc_width,
    )
    width = 2 + 2 + loc_width + 1 + 7
    out = Text()
    for i in range(max(len(left), len(right))):
        if i:
            out.append("\n")
        a = left[i] if i < len(left) else Text("")
        a = a.copy()
        a.pad_right(width - a.cell_len)
        out.append_text(a)
        if i < len(right):
            out.append("   ")
            out.append_text(right[i])
    return out


class BreakdownView(VerticalScroll):
    """Scrollable holder of the breakdown of the highlighted result."""

    def compose(self) -> ComposeResult:
        yield Static(
            Text("Type a query: the breakdown of the highlighted result appears here."),
            id="breakdown-body",
        )

    def show(self, renderable: RenderableType) -> None:
        """Show ``renderable``. The screen's layout is redone only when the body's
        height changes: a reflow of the whole screen on every keystroke is a good
        part of what made typing slow. For ``Text`` the height is known
        by wrapping it at the body's width, as the body will."""
        body = self.query_one("#breakdown-body", Static)
        size = body.content_size
        same = size.width > 0 and self._height_of(renderable, size.width) == size.height
        body.update(renderable, layout=not same)

    def _height_of(self, renderable: RenderableType, width: int) -> int | None:
        """Lines ``renderable`` takes at ``width`` cells; None when unknown."""
        if not isinstance(renderable, Text):
            return None
        return len(renderable.wrap(self.app.console, width))
