"""LoCoMo agent-memory retrieval: hit@6 and MRR@6 per search mode and category.

Protocol (../shared/bench/README.md): one workspace per conversation, each
session a block in ``memory/YYYY-MM-DD.md``; every question with evidence is a
``memory_search`` with maxResults 6 and minScore 0; a question is answered at k
when result k's line range contains the line of an evidence turn. Conversations
0–4 are for tuning, 5–9 are reported separately as the held-out check.

Each conversation is embedded once with the real MiniLM GGUF (the index and its
embedding cache live under tests/bench/.cache and are reused by later runs);
each question is retrieved once and then ranked under every mode with
``engine.search.rank.rank``, which is how the TUI re-ranks without re-querying.

Run: ``.venv/bin/python -m tests.bench.locomo`` (``--convs 0-4`` to restrict).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.embeddings.base import EmbeddingProvider
from engine.search.model import SearchOptions
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import common

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TUNE = range(0, 5)
HOLDOUT = range(5, 10)
K = 6
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Question:
    conv: int
    text: str
    category: int
    evidence: list[tuple[str, int]]  # (path, line) of each evidence turn


@dataclass
class Conversation:
    index: int
    files: dict[str, str]  # relative path → text
    lines: dict[str, tuple[str, int]]  # dia_id → (path, line)
    questions: list[Question]
    today: dt.date  # the day after the last session (decay's "today")
    skipped_questions: int


def parse_when(text: str) -> dt.datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023"."""
    return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def build_conversation(index: int, sample: dict[str, Any]) -> Conversation:
    conv = sample["conversation"]
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := re.fullmatch(r"session_(\d+)", key)) and conv[key]
    )
    blocks: list[tuple[dt.date, int, str, list[dict[str, Any]]]] = []
    for number, key in sessions:
        raw_when = conv[f"{key}_date_time"]
        when = parse_when(raw_when)
        clock = raw_when.split(" on ")[0].strip()
        blocks.append((when.date(), number, clock, conv[key]))
    files: dict[str, list[str]] = {}
    lines: dict[str, tuple[str, int]] = {}
    for day, number, clock, turns in blocks:
        rel = f"memory/{day.isoformat()}.md"
        out = files.setdefault(rel, [f"# {day.isoformat()}", ""])
        if len(out) > 2:
            out.append("")
        out.append(f"## Session {number} ({clock})")
        for turn in turns:
            text = " ".join(str(turn.get("text", "")).split())
            line = f"- [{turn['dia_id']}] {turn['speaker']}: {text}"
            if turn.get("blip_caption"):
                line += f" (shares a photo: {' '.join(str(turn['blip_caption']).split())})"
            out.append(line)
            lines[str(turn["dia_id"]).strip()] = (rel, len(out))
    texts = {rel: "\n".join(body) + "\n" for rel, body in files.items()}
    texts["MEMORY.md"] = f"Conversation between {conv['speaker_a']} and {conv['speaker_b']}.\n"
    questions = []
    skipped = 0
    for qa in sample["qa"]:
        if not qa.get("evidence"):
            continue
        ids = []
        for ev in qa["evidence"]:
            ids += [f"D{a}:{b}" for a, b in _EVIDENCE.findall(str(ev))]
        evidence = [lines[i] for i in dict.fromkeys(ids) if i in lines]
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(index, str(qa["question"]), int(qa["category"]), evidence))
    today = max(day for day, *_ in blocks) + dt.timedelta(days=1)
    return Conversation(index, texts, lines, questions, today, skipped)


def first_hit(results: list[Any], evidence: list[tuple[str, int]]) -> int | None:
    """1-based rank of the first result whose line range holds an evidence line."""
    for position, r in enumerate(results, start=1):
        for path, line in evidence:
            if r.path == path and r.start_line <= line <= r.end_line:
                return position
    return None


def summarize(ranks: list[tuple[int, int | None]]) -> dict[str, Any]:
    """ranks: (category, first-hit rank or None) → hit@6/MRR@6 overall and per category."""

    def agg(items: list[int | None]) -> dict[str, float | int]:
        n = len(items)
        hits = sum(1 for r in items if r is not None and r <= K)
        rr = sum(1.0 / r for r in items if r is not None and r <= K)
        return {"n": n, "hit@6": hits / n if n else 0.0, "mrr@6": rr / n if n else 0.0}

    out: dict[str, Any] = {"all": agg([r for _, r in ranks])}
    for cat, name in CATEGORIES.items():
        out[name] = agg([r for c, r in ranks if c == cat])
    return out


def run(convs: list[int], provider: EmbeddingProvider, extra: dict[str, SearchOptions]) -> dict:
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    base = common.default_options(min_score=0.0, max_results=K)
    mode_opts = {**common.modes(base), **extra}
    per_mode: dict[str, dict[int, list[tuple[int, int | None]]]] = {
        m: defaultdict(list) for m in mode_opts
    }
    index_info = {}
    skipped_total = 0
    for ci in convs:
        conv = build_conversation(ci, data[ci])
        skipped_total += conv.skipped_questions
        root = common.CACHE_DIR / "locomo" / f"conv-{ci}"
        ws = root / "ws"
        for rel, text in conv.files.items():
            common.write_if_changed(ws / rel, text)
        engine = common.open_engine(ws, root / "state", provider)
        with common.Stopwatch() as sw:
            done = engine.sync(reason="bench")
        counts = engine.store.counts()
        index_info[ci] = {
            "files": counts["files"],
            "chunks": counts["chunks"],
            "embedded_now": done.chunks_embedded,
            "sync_s": round(sw.seconds, 2),
        }
        common.log(
            f"conv {ci}: {counts['chunks']} chunks ({done.chunks_embedded} embedded now,"
            f" {sw.seconds:.1f} s), {len(conv.questions)} questions"
        )
        for q in conv.questions:
            retrieval = retrieve(engine.store, engine.provider, q.text, base)
            for name, opts in mode_opts.items():
                outcome = rank(retrieval, opts, conv.today)
                per_mode[name][ci].append((q.category, first_hit(outcome.results, q.evidence)))
        engine.close()
    return {"per_mode": per_mode, "index": index_info, "skipped_questions": skipped_total}


def report(per_mode: dict[str, dict[int, list]], convs: list[int]) -> dict[str, Any]:
    halves = {
        "conversations 0-4 (tuning)": [c for c in convs if c in TUNE],
        "conversations 5-9 (held out)": [c for c in convs if c in HOLDOUT],
        "all conversations": convs,
    }
    summary: dict[str, Any] = {}
    tables: dict[str, str] = {}
    for half, members in halves.items():
        if not members:
            continue
        summary[half] = {}
        rows = []
        for mode, by_conv in per_mode.items():
            s = summarize([r for c in members for r in by_conv.get(c, [])])
            summary[half][mode] = s
            rows.append(
                [mode, s["all"]["hit@6"], s["all"]["mrr@6"]]
                + [s[name]["hit@6"] for name in CATEGORIES.values()]
            )
        n = summary[half][next(iter(per_mode))]["all"]["n"]
        tables[half] = common.table(
            ["mode", "hit@6", "MRR@6", *[f"{c} hit@6" for c in CATEGORIES.values()]],
            rows,
            title=f"LoCoMo {half}, {n} questions",
        )
    return {"summary": summary, "tables": tables}


def tuning_variants() -> dict[str, SearchOptions]:
    """Weight variants of the candidate fusions, reported beside the modes (0–4 picks)."""
    base = common.default_options(min_score=0.0, max_results=K)
    out = {}
    for vw in (0.5, 0.3):
        tw = round(1 - vw, 2)
        for fusion, label in (
            ("normalized", "min-max"),
            ("rrf", "RRF"),
            ("geometric", "geometric"),
        ):
            out[f"tune: {label} {vw}/{tw}"] = base.with_(
                fusion=fusion, normalization="minmax", vector_weight=vw, text_weight=tw
            )
    return out


def parse_convs(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return out


def write_conversation_workspace(ci: int, ws: Path) -> None:
    """LoCoMo conversation ``ci``'s memory files written into the workspace ``ws``."""
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    for rel, text in build_conversation(ci, data[ci]).files.items():
        common.write_if_changed(ws / rel, text)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--convs", default="0-9", help="conversations, e.g. 0-4 or 0,3,7")
    ap.add_argument("--no-tuning", action="store_true", help="skip the weight variants")
    args = ap.parse_args(argv)
    convs = parse_convs(args.convs)
    common.data_dir("locomo")
    provider = common.local_provider()
    extra = {} if args.no_tuning else tuning_variants()
    out = run(convs, provider, extra)
    rep = report(out["per_mode"], convs)
    model = Path(str(provider.model)).name
    print(f"model: {model} (llama.cpp, {provider.dims} dims); maxResults {K}, minScore 0")
    common.write_results(
        "locomo",
        {
            "model": model,
            "dims": provider.dims,
            "protocol": "../shared/bench/README.md: maxResults 6, minScore 0, hit if a result's"
            " line range holds an evidence line",
            "default_fusion": common.default_options().fusion,
            "conversations": convs,
            "skipped_questions_without_resolvable_evidence": out["skipped_questions"],
            "index": out["index"],
            **rep,
        },
    )
    provider.close()


if __name__ == "__main__":
    main()
