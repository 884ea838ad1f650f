"""Cranfield ad-hoc retrieval: nDCG@10 and recall@100 per search mode.

1,400 aeronautics abstracts become one Markdown file each
(``memory/cranfield/NNNN.md``: the title as a heading, then the abstract); the
225 queries (renumbered 1..225 in file order, as the judgments use) run through
the real pipeline with the real MiniLM GGUF. Grades 1–3 are relevant (gain
4 − grade: 3, 2, 1 — graded nDCG), grade 4, 5 and −1 are not.

A document may span several chunks; a ranking of chunks becomes a ranking of
documents by each document's best chunk. nDCG@10 ranks with maxResults 10 (so 40
candidates per side, as a real search with that maxResults makes); recall@100
ranks with maxResults 100 (200 candidates per side, the engine's cap). Both come
from one retrieval of 200 candidates per side whose prefixes are what the smaller
search would fetch. The files are undated and so evergreen: "+ decay" equals
plain hybrid here by design and is reported only for completeness.

Run: ``.venv/bin/python -m tests.bench.cranfield``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import common

NDCG_K = 10
RECALL_K = 100


def parse_smart(text: str) -> list[dict[str, str]]:
    """SMART records: ``.I id`` then fields ``.T .A .B .W`` each followed by lines."""
    records: list[dict[str, str]] = []
    field = None
    for line in text.splitlines():
        if line.startswith(".I"):
            records.append({"id": line[2:].strip()})
            field = None
        elif re.fullmatch(r"\.[A-Z]", line.strip()):
            field = line.strip()[1]
            records[-1].setdefault(field, "")
        elif field is not None and records:
            records[-1][field] += line + "\n"
    return records


def load(data: Path) -> tuple[dict[str, str], list[tuple[int, str]], dict[int, dict[str, int]]]:
    """(files: rel → text, queries: [(qid, text)], qrels: qid → {doc rel: grade})."""
    docs = parse_smart((data / "cran.all.1400").read_text(encoding="utf-8", errors="replace"))
    files = {}
    for d in docs:
        title = " ".join(d.get("T", "").split()) or f"document {int(d['id'])}"
        body = d.get("W", "").strip()
        files[doc_path(int(d["id"]))] = f"# {title}\n\n{body}\n"
    raw_queries = parse_smart((data / "cran.qry").read_text(encoding="utf-8", errors="replace"))
    queries = [(i, " ".join(q.get("W", "").split())) for i, q in enumerate(raw_queries, start=1)]
    qrels: dict[int, dict[str, int]] = defaultdict(dict)
    for line in (data / "cranqrel").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3:
            qrels[int(parts[0])][doc_path(int(parts[1]))] = int(parts[2])
    return files, queries, qrels


def doc_path(doc_id: int) -> str:
    return f"memory/cranfield/{doc_id:04d}.md"


def gain(grade: int) -> float:
    return float(4 - grade) if 1 <= grade <= 3 else 0.0


def doc_ranking(results: list[Any]) -> list[str]:
    """Chunk results → distinct documents in order of their best chunk."""
    return list(dict.fromkeys(r.path for r in results))


def ndcg(ranking: list[str], judged: dict[str, int], k: int) -> float:
    dcg = sum(gain(judged.get(d, 0)) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted((gain(g) for g in judged.values()), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall(ranking: list[str], judged: dict[str, int], k: int) -> float:
    relevant = {d for d, g in judged.items() if gain(g) > 0}
    return len(relevant & set(ranking[:k])) / len(relevant) if relevant else 0.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.parse_args(argv)
    data = common.data_dir("cranfield")
    provider = common.local_provider()
    files, queries, qrels = load(data)
    root = common.CACHE_DIR / "cranfield"
    for rel, text in files.items():
        common.write_if_changed(root / "ws" / rel, text)
    engine = common.open_engine(root / "ws", root / "state", provider)
    with common.Stopwatch() as sw:
        done = engine.sync(reason="bench")
    counts = engine.store.counts()
    common.log(
        f"cranfield: {counts['files']} files, {counts['chunks']} chunks"
        f" ({done.chunks_embedded} embedded now, {sw.seconds:.1f} s)"
    )
    judged_queries = [(qid, q) for qid, q in queries if any(gain(g) for g in qrels[qid].values())]
    big = common.default_options(min_score=0.0, max_results=RECALL_K)
    small = big.with_(max_results=NDCG_K)
    modes_big = common.modes(big)
    modes_small = common.modes(small)
    scores: dict[str, dict[str, list[float]]] = {
        m: {"ndcg@10": [], "recall@100": []} for m in modes_big
    }
    for qid, text in judged_queries:
        retrieval = retrieve(engine.store, engine.provider, text, big)
        small_retrieval = common.truncate(retrieval, small.candidates)
        for name in modes_big:
            top10 = rank(small_retrieval, modes_small[name]).results
            top100 = rank(retrieval, modes_big[name]).results
            scores[name]["ndcg@10"].append(ndcg(doc_ranking(top10), qrels[qid], NDCG_K))
            scores[name]["recall@100"].append(recall(doc_ranking(top100), qrels[qid], RECALL_K))
    summary = {
        name: {metric: sum(v) / len(v) for metric, v in s.items()} for name, s in scores.items()
    }
    text_table = common.table(
        ["mode", "nDCG@10", "recall@100"],
        [[m, s["ndcg@10"], s["recall@100"]] for m, s in summary.items()],
        title=f"Cranfield, {len(judged_queries)} queries, {counts['chunks']} chunks",
    )
    model = Path(str(provider.model)).name
    print(f"model: {model} (llama.cpp, {provider.dims} dims); minScore 0")
    common.write_results(
        "cranfield",
        {
            "model": model,
            "dims": provider.dims,
            "queries": len(judged_queries),
            "index": {**counts, "embedded_now": done.chunks_embedded, "sync_s": sw.seconds},
            "default_fusion": big.fusion,
            "summary": summary,
            "table": text_table,
        },
    )
    engine.close()
    provider.close()


if __name__ == "__main__":
    main()
