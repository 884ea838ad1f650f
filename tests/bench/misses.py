"""Error analysis of the default ranking on LoCoMo: where the misses come from.

Every question of the chosen conversations (default: the tuning half 0–4) is
ranked with the default configuration (minScore 0.35) from the retrievals
``tests.bench.calibrate`` keeps; each miss (no evidence chunk in the top 6) and
each hit below rank 1 gets one *cause*, in this order:

- ``minScore cut``: the ranking holds the evidence in its top 6, the default
  minScore drops it (score < 0.35);
- ``not a candidate``: no chunk holding an evidence turn is in either candidate
  list (24 per side), split by whether the keyword list was short (the AND
  query matched fewer chunks than it may return) and by whether 48 per side
  would have found it;
- ``outranked``: an evidence chunk is a candidate and the chunk it had to beat
  (the 6th result for a miss, the 1st for a low hit) scores higher; split by the
  side whose weighted deficit is larger: ``vector side`` (0.7 × ΔV) or
  ``keyword side`` (0.3 × ΔT), and ``tie`` when the scores are equal.

and descriptive flags, counted over the same questions (a question can carry
several): its LoCoMo category, evidence turns in more than one chunk, the
evidence chunk's best unit not being an evidence turn (V came from another
turn), no content word shared by the question and the evidence turn (the two
say it in different words), a speaker's name in the question, a relative date
in the evidence turn ("yesterday", "last week": the date lives in the file
name), and the beaten chunk being a neighbour of the evidence chunk (same file).

Run: ``.venv/bin/python -m tests.bench.misses [--convs 0-4] [--show N]``.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from typing import Any

import numpy as np

from engine.index.line_vectors import space_key, unit_spans
from engine.index.tokens import query_tokens
from engine.search.model import Candidate
from engine.search.rank import rank
from engine.search.words import FUNCTION_WORDS
from tests.bench import calibrate, common, locomo, offtopic

#: words that carry no content in a question (for the "different words" flag only)
STOPWORDS = FUNCTION_WORDS
RELATIVE_DATE = re.compile(
    r"\b(yesterday|today|tonight|last (?:week|weekend|month|year|night|friday|saturday|sunday"
    r"|monday|tuesday|wednesday|thursday)|next (?:week|month|year)|this (?:week|weekend|month)"
    r"|ago|recently|the other day|tomorrow)\b",
    re.IGNORECASE,
)


def content_words(text: str) -> set[str]:
    return {w.lower() for w in query_tokens(text)} - STOPWORDS


def holds(c: Candidate, evidence: list[tuple[str, int]]) -> bool:
    return any(c.path == p and c.start_line <= line <= c.end_line for p, line in evidence)


def analyse(convs: list[int], show: int) -> dict[str, Any]:
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    provider = common.local_provider()
    opts = common.default_options()
    opts0 = opts.with_(min_score=0.0)
    causes: Counter[str] = Counter()
    flags: Counter[str] = Counter()
    by_outcome: Counter[str] = Counter()
    examples: list[str] = []
    n = 0
    for ci in convs:
        samples, today = calibrate.collect(ci, data, provider, "unicode61")
        conv = locomo.build_conversation(ci, data[ci])
        engine = offtopic.workspace_engine(ci, data, provider)
        store = engine.store
        names = {
            w.lower()
            for key in ("speaker_a", "speaker_b")
            for w in query_tokens(data[ci]["conversation"][key])
        }
        file_lines = {rel: text.split("\n") for rel, text in conv.files.items()}
        key = space_key(provider)
        questions = [s for s in samples if s.kind == "question"]
        for q, s in zip(conv.questions, questions, strict=True):
            n += 1
            r = calibrate.shaped(s, calibrate.Variant())
            out = rank(r, opts, today)
            out0 = rank(r, opts0, today)
            first = locomo.first_hit(out.results, q.evidence)
            first0 = locomo.first_hit(out0.results, q.evidence)
            if first == 1:
                by_outcome["hit at 1"] += 1
                continue
            outcome = "miss" if first is None or first > locomo.K else "hit at 2-6"
            by_outcome[outcome] += 1
            ordered = out0.results + [c for c in out0.dropped if c.dropped != "not kept"]
            ordered.sort(key=lambda c: c.sorted_position)
            ev = [c for c in ordered if holds(c, q.evidence)]
            cause: str
            beaten: Candidate | None = None
            if outcome == "miss" and first0 is not None and first0 <= locomo.K:
                cause = "minScore cut"
            elif not ev:
                wide = calibrate.shaped(s, calibrate.Variant(multiplier=calibrate.MAX_MULTIPLIER))
                ids_wide = {i for i, _ in wide.fts_hits} | {i for i, _ in wide.vector_hits}
                in_wide = any(
                    holds_row(wide.rows[i], q.evidence) for i in ids_wide if i in wide.rows
                )
                short = len(s.retrieval.fts_hits) < opts.candidates
                cause = (
                    "not a candidate"
                    + (" (AND list short)" if short and s.retrieval.fts_operator == "AND" else "")
                    + (", in 48/side" if in_wide else ", not in 48/side")
                )
            else:
                e = ev[0]
                beaten = ordered[locomo.K - 1] if outcome == "miss" else ordered[0]
                if beaten.score == e.score:
                    cause = "outranked: tie"
                else:
                    bv, ev_v = beaten.vector_component or 0.0, e.vector_component or 0.0
                    bt, ev_t = beaten.text_component or 0.0, e.text_component or 0.0
                    dv = e.vector_weight * (bv - ev_v)
                    dt = e.text_weight * (bt - ev_t)
                    cause = "outranked: vector side" if dv >= dt else "outranked: keyword side"
            causes[f"{outcome}: {cause}"] += 1
            # -- flags
            qf: list[str] = [locomo.CATEGORIES[q.category]]
            if len(q.evidence) > 1 and len({p for p, _ in q.evidence}) > 1:
                qf.append("evidence in several files")
            gold_text = [file_lines[p][line - 1] for p, line in q.evidence]
            qwords = content_words(q.text)
            if not any(qwords - names & content_words(t) for t in gold_text):
                qf.append("no content word shared with the evidence turn")
            if qwords & names:
                qf.append("speaker name in question")
            if any(RELATIVE_DATE.search(t) for t in gold_text):
                qf.append("relative date in evidence turn")
            if ev:
                e = ev[0]
                if e.best_line is not None and not any(
                    e.path == p and e.best_line <= line <= (e.best_line_end or e.best_line)
                    for p, line in q.evidence
                ):
                    qf.append("V from another turn of the evidence chunk")
                if beaten is not None and beaten.path == e.path:
                    qf.append("beaten by a chunk of the same file")
            for f in qf:
                flags[f"{outcome}: {f}"] += 1
            if len(examples) < show and outcome == "miss":
                qvec = provider.embed_query(q.text)
                lines = []
                for p, line in q.evidence:
                    lines.append(f"    gold {p}:{line} {file_lines[p][line - 1][:160]}")
                for c in ev[:1]:
                    lines.append(
                        f"    evidence chunk #{c.sorted_position} score {c.score}"
                        f" V {c.vector_component} T {c.text_component} best unit L{c.best_line}"
                    )
                    mats = store.line_vectors(list(store.chunk_hashes([c.chunk_id]).values()), key)
                    mat = next(iter(mats.values()), None)
                    units = unit_spans(c.text)
                    if mat is not None and mat.shape[0] == len(units):
                        sims = mat @ qvec
                        gold = {line for p, line in q.evidence if p == c.path}
                        for i, (a, _, _) in enumerate(units):
                            if c.start_line + a in gold:
                                place = int(np.sum(sims > sims[i])) + 1
                                lines.append(
                                    f"    gold line cosine {sims[i]:.3f}"
                                    f" (unit {place} of {len(units)})"
                                )
                for c in ordered[:3]:
                    best = ""
                    if c.best_line is not None:
                        best = file_lines[c.path][c.best_line - 1][:120]
                    lines.append(
                        f"    #{c.sorted_position} {c.path}:{c.start_line}-{c.end_line} {c.score}"
                        f" V {c.vector_component} T {c.text_component} | {best}"
                    )
                examples.append(
                    f"[conv {ci}] {locomo.CATEGORIES[q.category]} Q: {q.text}\n  cause: {cause};"
                    f" flags: {', '.join(qf[1:])}; fts {s.retrieval.fts_operator}"
                    f" {len(s.retrieval.fts_hits)} hits\n" + "\n".join(lines)
                )
        engine.close()
    provider.close()
    return {"n": n, "outcomes": by_outcome, "causes": causes, "flags": flags, "examples": examples}


def holds_row(row: Any, evidence: list[tuple[str, int]]) -> bool:
    return any(row.path == p and row.start_line <= line <= row.end_line for p, line in evidence)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--convs", default="0-4")
    ap.add_argument("--show", type=int, default=0, help="print this many misses in full")
    args = ap.parse_args(argv)
    convs = locomo.parse_convs(args.convs)
    got = analyse(convs, args.show)
    for e in got["examples"]:
        print(e)
    outcomes = got["outcomes"]
    tables = {}
    for title, counter in (("cause", got["causes"]), ("flag", got["flags"])):
        names = sorted({k.split(": ", 1)[1] for k in counter})
        rows = [
            [name, counter.get(f"miss: {name}", 0), counter.get(f"hit at 2-6: {name}", 0)]
            for name in names
        ]
        tables[title] = common.table(
            [title, f"misses ({outcomes['miss']})", f"hits at 2–6 ({outcomes['hit at 2-6']})"],
            rows,
            title=f"LoCoMo {args.convs}: {got['n']} questions, {outcomes['hit at 1']} hit at 1",
        )
    common.write_results(
        f"misses_{args.convs}",
        {"conversations": convs, "outcomes": dict(outcomes), "tables": tables},
    )


if __name__ == "__main__":
    main()
