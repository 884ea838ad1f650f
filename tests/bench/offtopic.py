"""Off-topic queries: does a search return nothing when nothing in memory is about it?

Protocol (../shared/bench/README.md, "Off-topic queries"): the first 60 Cranfield
queries (aeronautics) and 20 nonsense strings run against each LoCoMo workspace
(two people chatting about their lives) with the default configuration,
including the default minScore. Reported: the share of queries that return any
result, per mode and fusion, for conversations 0–4 (tuning) and 5–9 (held out).
Each query is retrieved once and ranked under every mode, as the TUI re-ranks.

Run: ``.venv/bin/python -m tests.bench.offtopic`` (``--convs 5-9`` to restrict).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.config.settings import FtsTokenizer
from engine.core import Engine
from engine.embeddings.base import EmbeddingProvider
from engine.search.model import SearchOptions
from engine.search.rank import rank
from engine.search.retrieve import retrieve
from tests.bench import common, cranfield, locomo

CRANFIELD_QUERIES = 60
#: strings with no word of English (or of the conversations): nothing can be about them
NONSENSE = (
    "zzqx blorf",
    "qwv plimbat snorgle",
    "xkcdq vrrp mnbv",
    "florbish wuggle tamp",
    "jjkq zzt prr",
    "glarb fnordle quux",
    "vlemp trask oogum",
    "snizzle brapp kt",
    "wubwub zonkle plix",
    "mrrg hkkt fwee",
    "ploobish dravv",
    "yxyx qoqo",
    "grmbl sprk tnnk",
    "frabjous vorpal wabe",
    "blicket daxen tomav",
    "zibble zabble zorp",
    "kwnq pflt rrax",
    "ubbo sathla xr",
    "trillp gnop wex",
    "hmmf bzzt droolk",
)


def workspace_engine(
    ci: int, data: list[Any], provider: EmbeddingProvider, fts_tokenizer: FtsTokenizer | None = None
) -> Engine:
    """The LoCoMo benchmark's workspace for conversation ``ci`` (its cached index)."""
    conv = locomo.build_conversation(ci, data[ci])
    root = common.CACHE_DIR / "locomo" / f"conv-{ci}"
    for rel, text in conv.files.items():
        common.write_if_changed(root / "ws" / rel, text)
    engine = common.open_engine(root / "ws", root / "state", provider, fts_tokenizer)
    engine.sync(reason="bench")
    return engine


def queries() -> list[tuple[str, str]]:
    """(kind, text): the first 60 Cranfield queries, then the nonsense strings."""
    _, cq, _ = cranfield.load(common.data_dir("cranfield"))
    return [("cranfield", text) for _, text in cq[:CRANFIELD_QUERIES]] + [
        ("nonsense", text) for text in NONSENSE
    ]


def mode_options(base: SearchOptions) -> dict[str, SearchOptions]:
    """Every mode and fusion, at the default minScore."""
    return common.modes(base)


def run(
    convs: list[int], provider: EmbeddingProvider
) -> dict[str, dict[int, dict[str, list[bool]]]]:
    """mode → conversation → kind → [returned anything] per query."""
    data = json.loads((common.data_dir("locomo") / "locomo10.json").read_text())
    base = common.default_options()
    opts = mode_options(base)
    out: dict[str, dict[int, dict[str, list[bool]]]] = {m: {} for m in opts}
    qs = queries()
    for ci in convs:
        engine = workspace_engine(ci, data, provider)
        for kind, text in qs:
            retrieval = retrieve(engine.store, engine.provider, text, base)
            for name, o in opts.items():
                got = bool(rank(retrieval, o).results)
                out[name].setdefault(ci, {}).setdefault(kind, []).append(got)
        common.log(f"conv {ci}: {len(qs)} off-topic queries")
        engine.close()
    return out


def shares(
    per_mode: dict[str, dict[int, dict[str, list[bool]]]], members: list[int]
) -> dict[str, dict[str, float]]:
    """mode → kind → share of queries returning any result over ``members``."""
    out: dict[str, dict[str, float]] = {}
    for mode, by_conv in per_mode.items():
        out[mode] = {}
        for kind in ("cranfield", "nonsense"):
            flags = [f for c in members for f in by_conv.get(c, {}).get(kind, [])]
            out[mode][kind] = sum(flags) / len(flags) if flags else 0.0
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--convs", default="0-9", help="conversations, e.g. 5-9")
    args = ap.parse_args(argv)
    convs = locomo.parse_convs(args.convs)
    provider = common.local_provider()
    per_mode = run(convs, provider)
    summary: dict[str, Any] = {}
    tables = {}
    base = common.default_options()
    for half, members in (
        ("conversations 0-4 (tuning)", [c for c in convs if c in locomo.TUNE]),
        ("conversations 5-9 (held out)", [c for c in convs if c in locomo.HOLDOUT]),
    ):
        if not members:
            continue
        s = shares(per_mode, members)
        summary[half] = s
        tables[half] = common.table(
            ["mode", "Cranfield queries returning anything", "nonsense returning anything"],
            [[m, v["cranfield"], v["nonsense"]] for m, v in s.items()],
            title=f"Off-topic queries on LoCoMo {half}, minScore {base.min_score}",
        )
    model = Path(str(provider.model)).name
    common.write_results(
        "offtopic",
        {
            "model": model,
            "min_score": base.min_score,
            "default_fusion": base.fusion,
            "conversations": convs,
            "queries": {"cranfield": CRANFIELD_QUERIES, "nonsense": len(NONSENSE)},
            "summary": summary,
            "tables": tables,
        },
    )
    provider.close()


if __name__ == "__main__":
    main()
