"""Property: every number the ranking displays is the arithmetic that ranked.

Real material: LoCoMo conversation 1 (the benchmark's workspace builder), indexed
by the real indexer and store (SQLite, FTS5, sqlite-vec, line vectors) with the
deterministic feature-hashing embedder of the benchmarks (``HashEmbedder``: a
stand-in for the model that keeps the test well under a minute). Each question
is retrieved once and ranked under every mode and fusion, with MMR, decay and
odd weights — the re-ranking the TUI's toggles do.

For every (query, candidate) pair (of the candidates cut below maxResults, the
``CUT_CHECKED`` nearest the cut), the *printed text* is read back, not the
objects behind it:

- the TUI breakdown: every ``expression = number`` in it is parsed and evaluated
  from the numbers it prints and must give the number it prints (to the printed
  precision); each arithmetic line of ``engine.search.explain`` must be among
  them; the cut line's comparison with minScore must hold for its printed numbers;
- the results table row: its vector/text columns are the factors the breakdown
  prints (to the column's 2 decimals), its score is the breakdown's score, and
  the score bar's coloured cells are the printed bar segments, which add up to
  the score;
- the why-not row: its score is the breakdown's, and its reason holds;
- ``memdeck search --explain``: each printed arithmetic line evaluates to what it
  prints, and its ``used:`` factors are the TUI's.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
from pathlib import Path

import pytest
from rich.text import Text

from engine.cli.search_command import _explain_lines
from engine.config.settings import FUSIONS
from engine.core import Engine
from engine.search import explain
from engine.search.intent import asks_when
from engine.search.model import Candidate, SearchOptions, SearchOutcome
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from engine.searchers import search_answer
from tests.bench import locomo, names_data
from tests.bench.common import bench_settings
from tests.bench.synthetic import HashEmbedder
from tui.format import FULL, NAME_STYLE, SCORE_BAR
from tui.widgets.breakdown import explain as breakdown
from tui.widgets.search_pane import result_cells, whynot_cells

DATA = Path(
    os.environ.get(
        "MEMDECK_BENCH_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "bench"
    )
)
if not (DATA / "locomo" / "locomo10.json").is_file():
    # a worktree beside the main checkout (…/wt/<name>) shares its data
    DATA = Path(__file__).resolve().parents[4] / "shared" / "bench"
QUESTIONS = 5
#: ... and the first questions of it that ask when (``engine.search.intent``: the units
#: that name a time get τ added to their cosine, printed in the arithmetic)
WHEN_QUESTIONS = 2
#: queries of each names workspace (tests/bench/data/names, the demo)
NAMES_QUERIES = 8
#: candidates cut for ranking below maxResults whose breakdown is read back, per
#: ranking: the ones nearest the cut. Two thirds of all candidates are such, and their
#: breakdowns are the ranked ones' lines with the same cut line (read back in full for
#: these; each ranking's other cut candidates are still checked for their reason).
CUT_CHECKED = 4
#: distinct styles, so the bar's cells can be told apart by side
STYLES = {
    "score-vector": "blue",
    "score-text": "green",
    "score-final": "red",
    "score-decay": "cyan",
    "score-mmr": "magenta",
    "score-dropped": "yellow",
}
NUMBER = r"−?\d+(?:\.\d+)?"
_RESULT = re.compile(rf" = ({NUMBER})")


@pytest.fixture(scope="module")
def conversation_engine(tmp_path_factory):
    source = DATA / "locomo" / "locomo10.json"
    if not source.is_file():
        pytest.skip(f"LoCoMo data absent at {source} (set MEMDECK_BENCH_DATA)")
    conv = locomo.build_conversation(1, json.loads(source.read_text())[1])
    engine = _engine(tmp_path_factory.mktemp("locomo1"), conv.files)
    yield engine, conv
    engine.close()


@pytest.fixture(scope="module")
def names_engines(tmp_path_factory):
    """The names benchmark's hand-written workspaces and the demo's: queries that are a
    name or a few words, which the calibrated fusion's name signal answers."""
    cases = []
    for ws in [*names_data.hand_written(), names_data.demo_workspace()]:
        engine = _engine(tmp_path_factory.mktemp(ws.name), ws.files)
        cases.append((engine, [q.text for q in ws.queries][:NAMES_QUERIES], ws.today))
    yield cases
    for engine, _, _ in cases:
        engine.close()


def _engine(root: Path, files: dict[str, str]) -> Engine:
    for rel, text in files.items():
        (root / "ws" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "ws" / rel).write_text(text, encoding="utf-8")
    settings = bench_settings(root / "ws", root / "state")
    ms = settings.memory_search
    # line vectors are on by default for the local model only; the calibrated
    # fusion's best-line side is what this test must see
    ms = dataclasses.replace(ms, store=dataclasses.replace(ms.store, line_vectors=True))
    engine = Engine(dataclasses.replace(settings, memory_search=ms), provider=HashEmbedder())
    engine.sync()
    return engine


def _variants(base: SearchOptions) -> list[SearchOptions]:
    out = [base.with_(mode="fts"), base.with_(mode="vector")]
    for fusion in FUSIONS:
        norms = ("minmax", "zscore") if fusion == "normalized" else ("minmax",)
        for norm in norms:
            out.append(base.with_(fusion=fusion, normalization=norm))
    # the stages that add lines of their own, and weight pairs the toggles reach
    out += [
        base.with_(mmr_enabled=True, mmr_lambda=0.65),
        base.with_(fusion="weighted", mmr_enabled=True, decay_enabled=True, half_life_days=45),
        base.with_(fusion="geometric", decay_enabled=True),
        base.with_(fusion="rrf", decay_enabled=True, half_life_days=10),
        base.with_(fusion="rrf", rrf_k=10, vector_weight=0.4, text_weight=0.6),
        base.with_(decay_enabled=True),
        base.with_(fusion="normalized", vector_weight=1, text_weight=2),
        base.with_(fusion="geometric", vector_weight=1.0, text_weight=0.0),
        base.with_(vector_weight=0.0, text_weight=1.0),
        # the single-side modes under the stages too (≥ 1,000 pairs each)
        base.with_(mode="fts", decay_enabled=True),
        base.with_(mode="fts", mmr_enabled=True, mmr_lambda=0.5),
        base.with_(mode="fts", mmr_enabled=True, decay_enabled=True),
        base.with_(mode="vector", decay_enabled=True, half_life_days=20),
        base.with_(mode="vector", mmr_enabled=True, mmr_similarity="cosine"),
        base.with_(mode="vector", mmr_enabled=True, decay_enabled=True),
        base.with_(min_score=0.35, max_results=4),  # the default cut: some kept, some not
        base.with_(feedback_weight=0.0),  # calibrated without the feedback
        base.with_(feedback_weight=0.8, decay_enabled=True),
        # nothing reaches 0.95, so keyword hits ≥ min(minScore, textWeight) are rescued
        base.with_(fusion="weighted", min_score=0.95),
    ]
    return out


# -- reading printed text back -------------------------------------------------------
def formulas_in(text: str) -> list[explain.Line]:
    """Every ``expression = number`` printed in ``text``.

    The expression is the longest stretch of the line before `` = `` that parses
    as arithmetic (``explain.evaluate``): labels, colons and arrows end it.
    """
    found = []
    for row in text.splitlines():
        for m in _RESULT.finditer(row):
            left = row[: m.start()]
            for k in range(len(left)):
                if k and left[k - 1] not in " (:;→×":
                    continue
                expr = left[k:].strip()
                if not expr:
                    break
                if not _is_arithmetic(expr):
                    continue
                found.append(explain.Line(expr, m.group(1)))
                break
    return found


@functools.lru_cache(maxsize=1 << 16)
def _is_arithmetic(expr: str) -> bool:
    """``expr`` parses and evaluates (``explain.evaluate``); remembered, as the same
    labels and sums recur in every breakdown."""
    try:
        explain.evaluate(expr)
    except (ValueError, ZeroDivisionError, OverflowError):
        return False
    return True


def printed(text: str) -> float:
    return float(text.replace("−", "-"))


def side_shown(side_line: str) -> tuple[str, float]:
    """(factor, weight) a breakdown's ``vector``/``text`` line shows: ``0.700 × 0.4649``
    (a sum), ``0.4649^0.700`` (a product), ``1 (no signal)^0.700`` or ``–`` (unused)."""
    body = side_line.split(" ", 1)[1].strip()
    if body.startswith("–"):
        return "–", 0.0
    if m := re.match(rf"1 \(no signal\)\^({NUMBER})", body):
        return "1", printed(m.group(1))
    if m := re.match(rf"({NUMBER})\^({NUMBER})", body):
        return m.group(1), printed(m.group(2))
    m = re.match(rf"({NUMBER}) × ({NUMBER})", body)
    assert m, side_line
    return m.group(2), printed(m.group(1))


def bar_cells_by_style(cell: Text) -> dict[str, int]:
    """How many full cells of each style the score column's bar draws."""
    counts: dict[str, int] = {}
    for i, ch in enumerate(cell.plain[:SCORE_BAR]):
        if ch != FULL:
            continue
        styles = [str(s.style) for s in cell.spans if s.start <= i < s.end]
        key = styles[-1] if styles else ""
        counts[key] = counts.get(key, 0) + 1
    return counts


def expected_bar(parts: list[tuple[float, str]]) -> dict[str, int]:
    """The cells ``tui.format.stacked_bar`` gives segments of these printed sizes."""
    out: dict[str, int] = {}
    used, acc = 0, 0.0
    for value, style in parts:
        acc += value
        end = min(SCORE_BAR, round(acc * SCORE_BAR))
        if end > used:
            out[style] = out.get(style, 0) + end - used
            used = end
    return out


def check_breakdown(c: Candidate, outcome: SearchOutcome) -> dict[str, str]:
    """Read ``c``'s TUI breakdown back; returns the numbers other views must match."""
    options = outcome.options
    text = breakdown(c, outcome, STYLES).plain
    shown = formulas_in(text)
    for line in shown:
        assert explain.agrees(line), (str(line), text)
    expressions = {line.expression for line in shown}
    for line in explain.all_lines(c, options):
        assert str(line) in text and line.expression in expressions, (str(line), text)
    rows = {row.split(" ", 1)[0]: row for row in text.splitlines() if row.strip()}
    score_row = rows["score"]
    score = _RESULT.findall(score_row)[-1]
    assert score == explain.fmt(c.score)
    # the cut line's comparison, from its printed numbers
    cut = rows["cut"]
    min_score = explain.threshold(options.min_score)
    if c.final_rank is not None and not c.rescued:
        assert cut.startswith(f"cut    {score} ≥ minScore {min_score}")
        assert printed(score) >= printed(min_score)
    elif c.rescued and c.final_rank is not None:
        assert cut.startswith(f"cut    {score} < minScore {min_score}, kept by the keyword rescue")
        floor = _RESULT.search(cut)
        assert floor is not None and printed(score) >= printed(floor.group(1)) - 1e-9, cut
        assert printed(score) < printed(min_score)
    elif c.dropped and c.dropped.startswith("score "):
        assert cut == f"cut    score {score} < minScore {min_score}", cut
        assert printed(score) < printed(min_score)
    # the bar: its printed segments add up to the score (they are a formula line)
    bar_row = rows["bar"]
    bar = _RESULT.search(bar_row)
    assert bar is not None and bar.group(1) == score, bar_row
    sums = [line for line in formulas_in(bar_row) if line.result == score]
    assert len(sums) == 1, bar_row
    tokens = sums[0].expression.split(" ")
    segments = [printed(tokens[0])] + [
        printed(x) * (-1 if sign == "−" else 1)
        for sign, x in zip(tokens[1::2], tokens[2::2], strict=True)
    ]
    if c.fusion != "geometric":
        segments.insert(0, 0.0)
    # the calibrated fusion's name part: a fourth segment, what the name row added
    name_row = rows.get("name")
    named = re.match(rf"name +\+({NUMBER}) ", name_row) if name_row else None
    bonus = printed(named.group(1)) if named else 0.0
    assert len(segments) == (4 if bonus else 3), (bar_row, name_row)
    # each segment is what the legend says, from the printed factors and weights
    (vf, vw), (tf, tw) = side_shown(rows["vector"]), side_shown(rows["text"])
    # the score row's steps: the fusion; the name's part; the decay, "fused × factor"
    steps = score_row.split("; ")
    last = re.fullmatch(rf"({NUMBER}) × ({NUMBER}) = ({NUMBER})", steps[-1].strip())
    decay = printed(last.group(2)) if last and len(steps) > 1 else 1.0
    if bonus:
        step = re.fullmatch(
            rf"({NUMBER}) \+ ({NUMBER})×({NUMBER})×\(1 − ({NUMBER})\) = ({NUMBER})",
            steps[1].strip(),
        )
        assert step and step.group(1) == step.group(4), score_row
        base, fused = printed(step.group(1)), printed(step.group(5))
        assert bonus == pytest.approx(fused - base, abs=1e-9), (name_row, score_row)
        assert segments[3] == pytest.approx(bonus * decay, abs=2e-4), bar_row
    factors = [0.0 if f == "–" else printed(f) for f in (vf, tf)]
    if c.fusion == "geometric":
        scored = [w for f, w in ((vf, vw), (tf, tw)) if f not in ("–", "1")]
        floor = min(printed(score), 0.05 ** sum(scored) * decay)
        logs = [
            0.0 if f in ("–", "1") else w * math.log(x / 0.05)
            for f, w, x in ((vf, vw, factors[0]), (tf, tw, factors[1]))
        ]
        if sum(logs) > 0:
            assert segments[0] == pytest.approx(floor, abs=1e-4), bar_row
            want_v = (printed(score) - segments[0]) * logs[0] / sum(logs)
            assert segments[1] == pytest.approx(want_v, abs=1e-4), (bar_row, logs)
    else:
        assert segments[1] == pytest.approx(vw * factors[0] * decay, abs=2e-4), bar_row
        assert segments[2] == pytest.approx(tw * factors[1] * decay, abs=2e-4), bar_row
    return {
        "score": score,
        "vector": vf,
        "text": tf,
        "floor": explain.fmt(segments[0]),
        "bar_vector": explain.fmt(segments[1]),
        "bar_text": explain.fmt(segments[2]),
        "bar_name": explain.fmt(segments[3] if len(segments) > 3 else 0.0),
    }


def check_row(c: Candidate, numbers: dict[str, str]) -> None:
    """The results table row agrees with the breakdown's printed numbers."""
    cells = result_cells(c, STYLES)
    score_cell = cells[1]
    assert score_cell.plain.split()[-1] == numbers["score"]
    for cell, side in ((cells[2], "vector"), (cells[3], "text")):
        value = cell.plain.split()[-1]
        factor = numbers[side]
        assert value == ("–" if factor == "–" else f"{printed(factor):.2f}"), (side, numbers)
    want = expected_bar(
        [
            (printed(numbers["floor"]), "dim"),
            (printed(numbers["bar_vector"]), "blue"),
            (printed(numbers["bar_text"]), "green"),
            (printed(numbers["bar_name"]), NAME_STYLE),
        ]
    )
    assert bar_cells_by_style(score_cell) == want, (numbers, score_cell.plain)
    filled = sum(want.values())
    if min(printed(numbers[k]) for k in ("floor", "bar_vector", "bar_text", "bar_name")) >= 0:
        assert abs(filled - min(SCORE_BAR, printed(numbers["score"]) * SCORE_BAR)) <= 0.5 + 1e-9


def check_whynot(c: Candidate, numbers: dict[str, str], options: SearchOptions) -> None:
    location, score, _lists, reason = (cell.plain for cell in whynot_cells(c, STYLES))
    assert location.startswith(f"{c.path}:")
    assert score == numbers["score"]
    m = re.fullmatch(rf"score ({NUMBER}) < minScore (\S+)", reason)
    if m:
        assert m.group(1) == numbers["score"] and printed(m.group(1)) < printed(m.group(2))
        assert m.group(2) == explain.threshold(options.min_score)
    else:
        assert reason == f"cut: beyond maxResults {options.max_results}", reason
        assert printed(numbers["score"]) >= options.min_score or c.rescued


def check_cli(item: dict[str, object], numbers: dict[str, str]) -> None:
    """``memdeck search --explain``'s lines for one result, read back."""
    lines = _explain_lines(item["breakdown"])  # type: ignore[arg-type]
    text = "\n".join(lines)
    shown = formulas_in(text)
    assert shown, text
    for line in shown:
        assert explain.agrees(line), (str(line), text)
    arithmetic = item["breakdown"]["arithmetic"]  # type: ignore[index]
    assert {str(x) for x in shown} >= set(arithmetic), (arithmetic, text)
    used = re.search(rf"used: vector ({NUMBER}|-) \(.*\) · text ({NUMBER}|-) \(", text)
    assert used, text
    for got, side in ((used.group(1), "vector"), (used.group(2), "text")):
        factor = numbers[side]
        assert got == ("-" if factor == "–" else explain.fmt(printed(factor))), (side, text)


@pytest.mark.slow
def test_every_printed_number_is_the_arithmetic(conversation_engine, names_engines) -> None:
    engine, conv = conversation_engine
    base = engine.default_options().with_(min_score=0.0)
    variants = _variants(base)
    pairs = 0
    kinds: set[tuple[str, str]] = set()
    per_kind: dict[tuple[str, str], int] = {}
    rescued = dropped_below = cut_beyond = best_lines = floored = moved = named = worded = 0
    timed = 0
    when = [q.text for q in conv.questions if asks_when(q.text)][:WHEN_QUESTIONS]
    questions = [q.text for q in conv.questions[:QUESTIONS]] + when
    cases = [(engine, questions, conv.today), *names_engines]
    for engine, text, today in ((e, t, d) for e, texts, d in cases for t in texts):
        retrieval = retrieve(engine.store, engine.provider, text, base)
        for options in variants:
            outcome = rank(retrieval, options, today)
            kind = (outcome.mode, outcome.fusion)
            kinds.add(kind)
            payload = search_answer(engine, outcome, explain=True).to_json()
            cut_seen = 0
            kept = sum(c.final_rank is not None for c in outcome.candidates)
            for c in outcome.candidates:
                if c.final_rank is None and c.dropped and c.dropped.startswith("cut: "):
                    cut_seen += 1
                    if cut_seen > CUT_CHECKED:
                        # its reason holds: maxResults results were kept before it
                        assert kept == options.max_results, (kept, c.dropped)
                        assert c.dropped == f"cut: beyond maxResults {options.max_results}"
                        continue
                pairs += 1
                per_kind[kind] = per_kind.get(kind, 0) + 1
                best_lines += c.best_line is not None
                moved += c.feedback_norm is not None
                named += c.name_bonus > 0
                worded += c.text_words is not None and c.fusion == "calibrated"
                timed += c.time_bonus > 0
                if c.fusion == "geometric":
                    sides = (c.vector_component, c.text_component)
                    floored += any(x is not None and x < 0.05 for x in sides)
                assert c.parts is not None
                parts = c.parts.bar_total
                assert parts == pytest.approx(c.score, abs=1e-9), (options.fusion, c)
                numbers = check_breakdown(c, outcome)
                if c.final_rank is not None:
                    check_row(c, numbers)
                    check_cli(payload["results"][c.final_rank - 1], numbers)
                    rescued += c.rescued
                else:
                    check_whynot(c, numbers, options)
                    dropped_below += bool(c.dropped and c.dropped.startswith("score "))
                    cut_beyond += bool(c.dropped and c.dropped.startswith("cut: "))
            # --explain/--json carry each candidate's arithmetic and parts, dropped too
            for item, c in zip(payload["explain"]["dropped"], outcome.dropped, strict=True):
                assert item["arithmetic"] == [str(x) for x in explain.all_lines(c, options)]
                assert item["parts"] == dataclasses.asdict(c.parts)
    assert pairs >= 1000, pairs
    fusions = {f for m, f in kinds if m == "hybrid"}
    assert {m for m, _ in kinds} == {"hybrid", "fts", "vector"} and fusions == set(FUSIONS)
    assert min(per_kind.values()) >= 700, per_kind
    assert rescued and dropped_below and cut_beyond, (rescued, dropped_below, cut_beyond)
    # the odd cases were met: the calibrated best line and feedback, a geometric floor
    assert best_lines and floored and moved >= 1000, (best_lines, floored, moved)
    # the calibrated fusion's word-by-word text side and its name signal
    assert worded >= 1000 and named >= 150, (worded, named)
    # ... and a question about when: its timed units, in both passes
    assert timed >= 100, timed
    print(
        f"{pairs} pairs",
        per_kind,
        (rescued, dropped_below, cut_beyond, best_lines, floored, moved, named, worded, timed),
    )
