"""The score breakdown as arithmetic a reader can redo by hand.

Every line here is printed from the numbers the ranking stored on a
``Candidate`` (``engine.search.rank``); nothing is recomputed. Because
the ranking rounds each intermediate number to the printed precision as it
produces it (``scoring.quantize``), a line such as ``0.700×0.5123 + 0.300×0.4411
= 0.4909`` evaluated with the numbers it shows gives the number it shows.
:func:`evaluate` does exactly that, and the property test in
``tests/integration/test_explain_arithmetic.py`` runs it over real LoCoMo rankings.

Notation: ``×`` ``÷`` ``−`` ``^`` as usual, ``max(a, b)``, ``exp``, ``ln``,
``Φ`` (standard normal CDF) and ``σ`` (logistic function).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass

from engine.search import scoring
from engine.search.model import Candidate, QueryWord, SearchOptions
from engine.search.words import function_word

__all__ = [
    "Line",
    "all_lines",
    "bar_legend",
    "bar_line",
    "best_unit",
    "candidate_json",
    "evaluate",
    "fmt",
    "formula",
    "name_line",
    "name_share_line",
    "score_lines",
    "side_line",
    "strength_lines",
    "text_map_line",
    "text_max_line",
    "threshold",
    "unit_text_line",
    "word_weight_lines",
    "words_text_line",
]


@dataclass(frozen=True)
class Line:
    """``expression = result``: arithmetic on printed numbers and its printed value."""

    expression: str
    result: str

    def __str__(self) -> str:
        return f"{self.expression} = {self.result}"


def fmt(value: float, digits: int = scoring.DIGITS) -> str:
    """A number as the breakdown prints it (fixed decimals, ``−`` for minus)."""
    text = f"{value:.{digits}f}"
    if text.startswith("-"):
        text = "−" + text[1:]
        if float(text[1:]) == 0.0:
            text = text[1:]
    return text


def _w(weight: float) -> str:
    return fmt(weight, scoring.WEIGHT_DIGITS)


def _exact(value: float) -> str:
    """A setting (λ, half-life, k) printed so that it reads back as the same float."""
    text = repr(float(value))
    if text.endswith(".0"):
        text = text[:-2]
    return text.replace("-", "−")


def best_unit(first: int | None, last: int | None) -> str | None:
    """Where the calibrated vector side's cosine comes from: ``line L4``, or
    ``paragraph L4–9`` for wrapped prose embedded as one unit; None: the chunk."""
    if first is None:
        return None
    return f"line L{first}" if last is None or last == first else f"paragraph L{first}–{last}"


def threshold(value: float) -> str:
    """A setting such as minScore: two decimals, more only when it has more."""
    two = f"{value:.2f}"
    return two if float(two) == value else _exact(value)


# -- the score line ---------------------------------------------------------------
def _geometric_factor(component: float | None, weight: float) -> str:
    if component is None:
        return f"1^{_w(weight)}"
    if component < scoring.GEOMETRIC_FLOOR:
        return f"max({scoring.GEOMETRIC_FLOOR:g}, {fmt(component)})^{_w(weight)}"
    return f"{fmt(component)}^{_w(weight)}"


def fusion_line(c: Candidate) -> Line:
    """How the two components became ``fused_score``."""
    if c.fusion == "geometric":
        expr = (
            f"{_geometric_factor(c.vector_component, c.vector_weight)}"
            f" × {_geometric_factor(c.text_component, c.text_weight)}"
        )
    else:
        vc = 0.0 if c.vector_component is None else c.vector_component
        tc = 0.0 if c.text_component is None else c.text_component
        expr = f"{_w(c.vector_weight)}×{fmt(vc)} + {_w(c.text_weight)}×{fmt(tc)}"
    return Line(expr, fmt(c.fused_score if c.name_base is None else c.name_base))


def name_line(c: Candidate) -> Line | None:
    """The calibrated fusion's name signal added to the fusion: ``base + g×N×(1 − base)``."""
    if c.name_base is None or c.name_share is None:
        return None
    base = fmt(c.name_base)
    g = _exact(c.name_weight)
    if c.name_query_words > scoring.NAME_QUERY_WORDS:  # scoring.name_weight_for
        g = f"{g}×{scoring.NAME_QUERY_WORDS}÷{c.name_query_words}"
    return Line(f"{base} + {g}×{fmt(c.name_share)}×(1 − {base})", fmt(c.fused_score))


def name_share_line(c: Candidate) -> Line | None:
    """The name share N: the weights of the query words the chunk's file path or
    title holds, plus ``SECTION_SHARE`` of those only a section heading holds, over
    the query's weight."""
    if c.name_share is None or not (c.name_terms or c.name_section_terms):
        return None
    weights = _term_weights(c)
    if weights is None:
        return None
    section = _exact(scoring.SECTION_SHARE)
    parts = [fmt(weights[t]) for t in c.name_terms]
    parts += [f"{section}×{fmt(weights[t])}" for t in c.name_section_terms]
    total = c.text_weight_sum if c.text_weight_sum is not None else float(len(weights))
    return Line(f"({' + '.join(parts)}) ÷ {fmt(total)}", fmt(c.name_share))


def _term_weights(c: Candidate) -> dict[str, float] | None:
    """Each query term's weight as the calibrated fusion used it (1 each without
    per-word numbers)."""
    if c.text_words is not None:
        return {w.term: w.weight for w in c.text_words}
    terms = dict.fromkeys(c.name_terms + c.name_section_terms)
    return {t: 1.0 for t in terms} if terms else None


def word_weight_lines(c: Candidate) -> list[Line]:
    """Each query word's weight, ``ln((N − n + 0.5) ÷ (n + 0.5))`` (floored; a function
    word: the floor), then their sum."""
    if c.text_words is None or c.text_rows is None or c.text_weight_sum is None:
        return []
    floor = scoring.WORD_WEIGHT_FLOOR
    lines = []
    for w in c.text_words:
        if function_word(w.term):  # no topic: the floor (the TUI says why)
            lines.append(Line(f"{floor:g}", fmt(w.weight)))
            continue
        expr = f"ln(({c.text_rows} − {w.docs} + 0.5) ÷ ({w.docs} + 0.5))"
        if scoring.word_weight(w.docs, c.text_rows) == floor:
            expr = f"max({floor:g}, {expr})"
        lines.append(Line(expr, fmt(w.weight)))
    if len(c.text_words) > 1:
        lines.append(Line(" + ".join(fmt(w.weight) for w in c.text_words), fmt(c.text_weight_sum)))
    return lines


def strength_lines(c: Candidate) -> list[Line]:
    """Each query word the chunk holds: its strength ``tf×2.2 ÷ (tf + 1.2×(0.25 +
    0.75×dl ÷ L))`` (``scoring.tf_strength``)."""
    if c.text_words is None or c.text_length is None:
        return []
    k1, b = scoring.BM25_K1, scoring.BM25_B
    norm = f"({_exact(1 - b)} + {_exact(b)}×{c.text_length} ÷ {scoring.REFERENCE_LENGTH})"
    return [
        Line(f"{w.tf}×{_exact(k1 + 1)} ÷ ({w.tf} + {_exact(k1)}×{norm})", fmt(w.strength))
        for w in c.text_words
        if w.tf is not None and w.strength is not None
    ]


def words_text_line(c: Candidate) -> Line | None:
    """The calibrated text side of the chunk, word by word (``scoring.calibrated_words_text``):
    ``min(1 − c×Σ w(missing) ÷ Σ w, Σ w×s ÷ (κ × Σ w))``; None when the chunk holds no
    query word (0)."""
    if c.text_words is None or c.text_weight_sum is None or c.text_component is None:
        return None
    found = [w for w in c.text_words if w.strength is not None and w.strength > 0]
    if not found:
        return None
    matched = " + ".join(f"{fmt(w.weight)}×{fmt(w.strength or 0.0)}" for w in found)
    kappa = _exact(scoring.CALIBRATED_TEXT_SCALE)
    result = c.text_chunk if c.text_chunk is not None else c.text_component
    total = fmt(c.text_weight_sum)
    return Line(f"min({_missing_cap(c, found)}, ({matched}) ÷ ({kappa} × {total}))", fmt(result))


def unit_text_line(c: Candidate) -> Line | None:
    """The text side of the chunk's best unit alone (``scoring.unit_words_text``):
    ``min(1 − c×Σ w(missing) ÷ Σ w, Σ w(held) ÷ (κu × Σ w))``; None: the unit holds
    no query word."""
    if c.text_unit is None or c.text_words is None or c.text_weight_sum is None:
        return None
    held = [w for w in c.text_words if w.term in c.unit_terms]
    parts = " + ".join(fmt(w.weight) for w in held)
    kappa = _exact(scoring.UNIT_TEXT_SCALE)
    return Line(
        f"min({_missing_cap(c, held)}, ({parts}) ÷ ({kappa} × {fmt(c.text_weight_sum)}))",
        fmt(c.text_unit),
    )


def text_max_line(c: Candidate) -> Line | None:
    """The calibrated text side: the larger of the chunk's and its best unit's."""
    if c.text_unit is None or c.text_chunk is None or c.text_component is None:
        return None
    return Line(f"max({fmt(c.text_chunk)}, {fmt(c.text_unit)})", fmt(c.text_component))


def _missing_cap(c: Candidate, found: list[QueryWord]) -> str:
    """``1``, or ``1 − c×Σ w(missing) ÷ Σ w`` for the query words not in ``found``."""
    assert c.text_words is not None and c.text_weight_sum is not None
    missing = [fmt(w.weight) for w in c.text_words if w not in found]
    if not missing:
        return "1"
    lost = missing[0] if len(missing) == 1 else f"({' + '.join(missing)})"
    return f"1 − {_exact(scoring.MISSING_WORD_COST)}×{lost} ÷ {fmt(c.text_weight_sum)}"


def score_lines(c: Candidate) -> list[Line]:
    """The fusion, the name signal when it adds anything, then the decay factor when one applies."""
    lines = [fusion_line(c)]
    named = name_line(c)
    if named is not None:
        lines.append(named)
    if c.decay_multiplier != 1.0:
        lines.append(Line(f"{fmt(c.fused_score)} × {fmt(c.decay_multiplier)}", fmt(c.score)))
    return lines


def formula(c: Candidate) -> str:
    """The arithmetic of ``c``'s score, with its real numbers, on one line."""
    return "; ".join(str(line) for line in score_lines(c))


def _plain(value: object) -> object:
    """``dataclasses.asdict``'s data without its deep copies: the leaves of a
    candidate are numbers, strings and None, shared as they are (a search with
    ``--explain`` turns every candidate, dropped ones too, into this)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    make = getattr(value, "_make", None)  # a NamedTuple
    if isinstance(value, tuple) and make is not None:
        return make(_plain(x) for x in value)
    if isinstance(value, tuple | list):
        return type(value)(_plain(x) for x in value)
    if isinstance(value, dict):
        return {k: _plain(x) for k, x in value.items()}
    return value


def candidate_json(c: Candidate, options: SearchOptions | None = None) -> dict[str, object]:
    """``c`` as JSON-able data with its ``formula``; with the ``options`` it was
    ranked under, also ``arithmetic``: every line of its breakdown (:func:`all_lines`)."""
    d = {f.name: _plain(getattr(c, f.name)) for f in fields(c) if f.name != "text"}
    d["mmr_shift"] = c.mmr_shift
    d["formula"] = formula(c)
    if options is not None:
        d["arithmetic"] = [str(line) for line in all_lines(c, options)]
    return d


def decay_line(c: Candidate, half_life_days: float) -> Line | None:
    """``exp(−ln(2)÷halfLife×age)`` with the candidate's age, or None (no decay)."""
    if c.age_days is None or (c.decay_multiplier == 1.0 and c.age_days == 0):
        return None
    return Line(
        f"exp(−ln(2)÷{_exact(half_life_days)}×{_exact(c.age_days)})", fmt(c.decay_multiplier)
    )


def mmr_line(c: Candidate, lambda_: float) -> Line | None:
    """The MMR value that won this candidate its position."""
    if c.mmr_score is None or c.mmr_relevance is None or c.mmr_max_similarity is None:
        return None
    lam = _exact(min(1.0, max(0.0, lambda_)))
    return Line(
        f"{lam}×{fmt(c.mmr_relevance)} − (1−{lam})×{fmt(c.mmr_max_similarity)}",
        fmt(c.mmr_score),
    )


def bar_line(c: Candidate) -> Line | None:
    """The score bar's segments (``Candidate.parts``) adding up to the score:
    ``vector + text`` for a weighted sum, ``floor + vector + text`` for a product."""
    p = c.parts
    if p is None:
        return None
    terms = [p.bar_vector, p.bar_text]
    if c.fusion == "geometric":
        terms.insert(0, p.bar_floor)
    if p.bar_name:
        terms.append(p.bar_name)
    expr = fmt(terms[0])
    for t in terms[1:]:
        expr += f" − {fmt(-t)}" if t < 0 else f" + {fmt(t)}"
    return Line(expr, fmt(c.score))


def bar_legend(c: Candidate) -> str:
    """What each term of :func:`bar_line` is, in a few words."""
    if c.fusion == "geometric":
        return "floor + each side's share of ln(score ÷ floor) (a product)"
    name = " + the name's part" if c.parts is not None and c.parts.bar_name else ""
    if c.decay_multiplier != 1.0:
        return f"w × factor × decay per side{name}{' × decay' if name else ''}"
    return f"w × factor per side{name}"


# -- each side ----------------------------------------------------------------------
def text_map_line(c: Candidate) -> Line | None:
    """bm25 rank → text score (docs/architecture.md "Scoring"), with the candidate's rank."""
    r = c.bm25_rank
    if r is None or c.text_score is None:
        return None
    if not math.isfinite(r):
        return None
    if r < 0:
        return Line(f"{fmt(-r)}÷(1+{fmt(-r)})", fmt(c.text_score))
    return Line(f"1÷(1+{fmt(r)})", fmt(c.text_score))


def side_line(c: Candidate, side: str, rrf_k: int = scoring.RRF_K) -> Line | None:
    """The arithmetic from one side's score to its component, or None when the
    component *is* the side's score (``weighted``) or the side has none."""
    comp = c.vector_component if side == "vector" else c.text_component
    ref = c.vector_ref if side == "vector" else c.text_ref
    value = c.vector_input if side == "vector" else c.text_input
    if comp is None:
        return None
    if c.fusion == "rrf":
        pos = c.vector_position if side == "vector" else c.fts_position
        return Line(f"(1÷({rrf_k}+{pos}))÷(1÷({rrf_k}+1))", fmt(comp))
    if value is None:
        return None
    if c.fusion == "calibrated":
        if side == "vector" and c.feedback_norm is not None:
            moved = moved_line(c)
            if moved is None:
                return None
            if ref is None or ref == (0.0, 1.0):
                if 0.0 <= value <= 1.0:
                    return Line(moved.expression, fmt(comp))
                return Line(f"min(1, max(0, {moved.expression}))", fmt(comp))
            zero, one = _exact(ref[0]), _exact(ref[1])
            return Line(f"min(1, max(0, ({fmt(value)} − {zero}) ÷ ({one} − {zero})))", fmt(comp))
        if side == "vector":
            # the best unit's cosine against the chunk's own, when there are both
            both = c.line_cosine is not None and c.vector_score is not None
            cos = f"max({fmt(c.line_cosine or 0.0)}, {fmt(c.vector_score or 0.0)})"
            if ref is None or ref == (0.0, 1.0):
                if both:
                    return Line(
                        f"max(0, {fmt(c.line_cosine or 0.0)}, {fmt(c.vector_score or 0.0)})",
                        fmt(comp),
                    )
                return Line(f"max(0, {fmt(value)})", fmt(comp)) if value < 0 else None
            zero, one = _exact(ref[0]), _exact(ref[1])
            x = cos if both else fmt(value)
            return Line(f"min(1, max(0, ({x} − {zero}) ÷ ({one} − {zero})))", fmt(comp))
        if c.text_words is not None:
            return text_max_line(c) or words_text_line(c)
        if ref is None:
            return None
        return Line(f"min(1, {fmt(value)} ÷ ({_exact(ref[0])} × {fmt(ref[1])}))", fmt(comp))
    if c.fusion == "geometric":
        if ref is None:
            return None
        return Line(f"{fmt(value)} ÷ {fmt(ref[0])}", fmt(comp))
    if c.fusion == "normalized":
        if ref is None:
            return Line("1", fmt(comp))
        a, b = ref
        if c.normalization == "zscore":
            return Line(f"Φ(({fmt(value)} − {fmt(a)}) ÷ {fmt(b)})", fmt(comp))
        return Line(f"({fmt(value)} − {fmt(a)}) ÷ ({fmt(b)} − {fmt(a)})", fmt(comp))
    return None


def feedback_line(c: Candidate) -> Line | None:
    """``‖q + β·f‖`` of the calibrated fusion's feedback from ``cos(q, f)``, or None."""
    if c.feedback_norm is None or c.feedback_weight is None or c.feedback_query_cosine is None:
        return None
    beta = _exact(c.feedback_weight)
    return Line(
        f"(1 + {beta}^2 + 2×{beta}×{fmt(c.feedback_query_cosine)})^0.5", fmt(c.feedback_norm)
    )


def unit_cosine(c: Candidate) -> str:
    """The best unit's cosine as the vector side takes it: ``cos(q, u)``, plus τ when
    the query asks when and the unit names a time (``engine.search.intent``)."""
    cos = fmt(c.line_cosine or 0.0)
    return f"{cos} + {_exact(c.time_bonus)}" if c.time_bonus else cos


def moved_terms(c: Candidate) -> list[str]:
    """``cos(q, x) + β×cos(f, x)`` for the best unit (with τ, :func:`unit_cosine`) and
    for the chunk (the calibrated fusion's feedback; each is divided by ``‖q + β·f‖``)."""
    if c.feedback_norm is None or c.feedback_weight is None:
        return []
    beta = _exact(c.feedback_weight)
    terms = []
    if c.line_cosine is not None and c.feedback_line_cosine is not None:
        terms.append(f"{unit_cosine(c)} + {beta}×{fmt(c.feedback_line_cosine)}")
    if c.vector_score is not None and c.feedback_chunk_cosine is not None:
        terms.append(f"{fmt(c.vector_score)} + {beta}×{fmt(c.feedback_chunk_cosine)}")
    return terms


def moved_line(c: Candidate) -> Line | None:
    """The vector side's input with feedback: the moved query's best cosine, or None."""
    terms = moved_terms(c)
    if not terms or c.vector_input is None or c.feedback_norm is None:
        return None
    norm = fmt(c.feedback_norm)
    expr = f"({terms[0]}) ÷ {norm}" if len(terms) == 1 else f"max({', '.join(terms)}) ÷ {norm}"
    return Line(expr, fmt(c.vector_input))


def moved_step(c: Candidate) -> Line | None:
    """:func:`moved_line` when it is a line of its own: with a cosine calibration
    other than the identity, the vector side's line maps the moved cosine's result."""
    if c.vector_ref is None or c.vector_ref == (0.0, 1.0):
        return None
    return moved_line(c)


def all_lines(c: Candidate, options: SearchOptions) -> list[Line]:
    """Every arithmetic line a breakdown of ``c`` prints (TUI, ``--explain``)."""
    lines = list(score_lines(c))
    bar = bar_line(c)
    if bar is not None:
        lines.append(bar)
    feedback = feedback_line(c)
    if feedback is not None:
        lines.append(feedback)
        step = moved_step(c)
        if step is not None:
            lines.append(step)
    vector = side_line(c, "vector", options.rrf_k)
    if vector is not None:
        lines.append(vector)
    lines += word_weight_lines(c) + strength_lines(c)
    if c.fusion == "calibrated" and c.text_unit is not None:  # the chunk's, the unit's, max
        lines += [x for x in (words_text_line(c), unit_text_line(c)) if x is not None]
    text = side_line(c, "text", options.rrf_k)
    if text is not None:
        lines.append(text)
    share = name_share_line(c)
    extra = [share, decay_line(c, options.half_life_days), mmr_line(c, options.mmr_lambda)]
    if c.fusion not in ("geometric", "calibrated"):
        # these fusions use −bm25 itself, not the mapped text score
        extra.append(text_map_line(c))
    return lines + [line for line in extra if line is not None]


# -- checking ---------------------------------------------------------------------
def _max(*xs: float) -> float:
    return max(xs)


def _min(*xs: float) -> float:
    return min(xs)


def _sigma(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


_FUNCS: dict[str, Callable[..., float]] = {
    "max": _max,
    "min": _min,
    "exp": math.exp,
    "ln": math.log,
    "Phi": scoring.normal_cdf,
    "sigma": _sigma,
}
_SYMBOLS = {"×": "*", "÷": "/", "−": "-", "^": "**", "Φ": "Phi", "σ": "sigma"}


def evaluate(expression: str) -> float:
    """The value of a printed expression, computed from the printed numbers only.

    Only numbers, the four operations, powers and the functions of the module
    notation are accepted; anything else raises ``ValueError``.
    """
    text = expression
    for sym, py in _SYMBOLS.items():
        text = text.replace(sym, py)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an expression: {expression!r}") from exc

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            if type(node.op) in ops:
                return ops[type(node.op)]
            if isinstance(node.op, ast.Div):
                return a / b
            if isinstance(node.op, ast.Pow):
                return float(a**b)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
            and not node.keywords
        ):
            return float(_FUNCS[node.func.id](*(ev(a) for a in node.args)))
        raise ValueError(f"unsupported in {expression!r}: {ast.dump(node)}")

    return ev(tree)


def agrees(line: Line) -> bool:
    """Does ``line.expression``, evaluated, print as ``line.result``?"""
    digits = len(line.result.split(".")[1]) if "." in line.result else 0
    return fmt(evaluate(line.expression), digits) == line.result
