"""OpenClaw 2026.9.6's hybrid memory_search against the ``openclaw`` profile, on LoCoMo.

Both embed through one loopback server speaking OpenAI's ``/v1/embeddings``
(deterministic bags of hashed words, ``--dims`` wide); OpenClaw indexes with
``openclaw memory index`` and answers with its CLI's ``memory search --json``;
memdeck answers with ``Engine.search_openclaw`` in the same state folder
(tests/openclaw/hybrid_harness.py). Per conversation the clock is pinned to the
day after its last session (the benchmark protocol's "today"), and every
question is asked at minScore 0 (the protocol), 0.35 (the default) and 0.6
(most of the list comes from the top-up). Reported: identical result lists
(path, lines), scores within 1e-6, the same top result, and how many answers
the top-up and the minScore floor shaped.

Run: ``.venv/bin/python -m tests.bench.openclaw_hybrid`` (``--convs 0,3,7``,
``--questions 30``, ``--sparse`` for vectors where texts sharing no word score
exactly 0, which is when OpenClaw tops a hybrid list up; needs the OpenClaw
install, else SKIP).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.bench import common
from tests.openclaw.corpus import locomo_questions, locomo_workspaces
from tests.openclaw.hybrid_harness import HybridCase, run_hybrid
from tests.openclaw.reference import PREFIX, VERSION, Reference

MIN_SCORES = (0.0, 0.35, 0.6)


def day_after_last_session(files: dict[str, str]) -> int:
    """The protocol's "today": the day after the last ``memory/YYYY-MM-DD.md``."""
    last = max(m[1] for rel in files if (m := re.fullmatch(r"memory/(\d{4}-\d{2}-\d{2})\.md", rel)))
    day = dt.datetime.fromisoformat(last).replace(tzinfo=dt.UTC) + dt.timedelta(days=1)
    return int(day.timestamp() * 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--convs", default="0,3,7")
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument(
        "--sparse",
        action="store_true",
        help="texts sharing no word embed orthogonally (score 0): the top-up happens",
    )
    args = parser.parse_args(argv)
    ref = Reference(PREFIX)
    stamp = PREFIX / ".stamp"
    if not (ref.launcher.exists() and stamp.exists() and VERSION in stamp.read_text()):
        print(f"SKIP: OpenClaw {VERSION} is not installed (bash scripts/install_openclaw.sh)")
        return 0
    workspaces = locomo_workspaces()
    cases = [
        HybridCase(
            f"locomo-{n}",
            workspaces[n],
            locomo_questions(n)[: args.questions],
            day_after_last_session(workspaces[n]),
        )
        for n in (int(x) for x in args.convs.split(","))
    ]
    home = Path(tempfile.mkdtemp(prefix="memdeck-openclaw-hybrid-"))
    t0 = time.perf_counter()
    try:
        run = run_hybrid(ref, home, cases, MIN_SCORES, dims=args.dims, sparse=args.sparse)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    seconds = time.perf_counter() - t0
    per_min_score = {}
    for m in MIN_SCORES:
        part = [c for c in run.comparisons if c.min_score == m]
        per_min_score[str(m)] = {
            "queries": len(part),
            "same_lists": sum(c.same_list for c in part),
            "same_scores": sum(c.same_scores for c in part),
            "same_top1": sum(c.same_top for c in part),
            "with_top_up": sum(c.topped_up > 0 for c in part),
            "floor_dropped": sum(c.floor for c in part),
        }
    summary = run.summary()
    vectors = "sparse" if args.sparse else "dense"
    print(
        f"OpenClaw {VERSION} hybrid vs memdeck --profile openclaw, convs {args.convs}, "
        f"{args.questions} questions each, {vectors} vectors, dims {args.dims}: {seconds:.0f} s"
    )
    for m, row in per_min_score.items():
        print(f"  minScore {m}: " + ", ".join(f"{k} {v}" for k, v in row.items()))
    print("  overall: " + ", ".join(f"{k} {v}" for k, v in summary.items()))
    if run.diffs():
        print("first differences:\n" + run.diffs())
    common.write_results(
        "openclaw_hybrid_sparse" if args.sparse else "openclaw_hybrid",
        {
            "vectors": vectors,
            "convs": args.convs,
            "questions": args.questions,
            "dims": args.dims,
            "seconds": round(seconds, 1),
            "summary": summary,
            "per_min_score": per_min_score,
            "embed_requests": run.embed_requests,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
