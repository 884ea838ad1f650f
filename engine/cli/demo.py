"""A small, realistic demo workspace so a new user sees every feature at once.

Dates are relative to ``today`` so the daily logs look current (and temporal
decay has something to do); tests pass a fixed ``today`` for stable output.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

MEMORY_MD = """# MEMORY

Curated long-term memory for the assistant of Dana Okafor. Evergreen facts only;
day-to-day notes live in memory/YYYY-MM-DD.md.

## People
- Dana Okafor — product engineer in Lisbon, prefers short answers with code first.
- Ravi (Dana's manager) runs the Tuesday planning meeting; send him the weekly summary.
- Inês — Dana's partner; allergic to penicillin.

## Preferences
- Editor: Neovim with the gruvbox theme; terminal is WezTerm.
- Coffee: flat white, no sugar. Dislikes meetings before 10:00.
- Writes commit messages in the imperative mood and squashes before merging.

## Household
- The cat Miso takes half a methimazole tablet every morning with food (thyroid).
- Recycling goes out on Wednesday evenings; glass on the first Friday of the month.

## Projects
- **Atlas**: migrating the billing service from Postgres 13 to 16; cut-over planned
  after the March freeze. Owner of the rollback runbook: Dana.
- **Lighthouse**: internal search for support tickets; uses BM25 plus embeddings.

## Decisions
- 2025-11: chose SQLite + sqlite-vec for local memory search over a hosted vector DB.
- Keep API keys in 1Password, never in dotfiles.
"""

DAILY = [
    (
        13,
        """## 09:12
Kick-off for the Atlas migration. Agreed to rehearse the cut-over on staging twice.
pg_upgrade dry run took 41 minutes on the staging snapshot.

## 16:40
Ravi asked for a rollback plan that fits in one page.
""",
    ),
    (
        11,
        """## 10:05
Dentist appointment moved to next Thursday 15:30.

## 14:20
Lighthouse: BM25 alone misses paraphrased tickets ("card declined" vs "payment refused").
Trying hybrid ranking with a small embedding model.
""",
    ),
    (
        9,
        """## 08:55
Miso refused breakfast; hid the tablet in tuna instead. Worked.

## 13:30
Read about reciprocal rank fusion (k=60). Simple and robust when score scales differ.
""",
    ),
    (
        6,
        """## 11:00
Atlas staging rehearsal #1: replication lag peaked at 3.2 s during the switch.
Need to pause the invoice cron before cut-over.

## 17:45
Booked train to Porto for the 14th, 08:04 departure, seat 42.
""",
    ),
    (
        4,
        """## 09:30
Weekly summary sent to Ravi. Highlights: Atlas rehearsal, Lighthouse prototype.

## 15:10
Inês reminded me: pick up the prescription refill on Friday.
""",
    ),
    (
        2,
        """## 10:20
Lighthouse prototype: hybrid search with min-max normalisation beat raw weighted sum
on our 200 labelled tickets (hit@5 0.81 vs 0.74).

## 18:05
Bought oat milk and coffee beans (Ethiopia Guji).
""",
    ),
    (
        1,
        """## 09:00
Atlas staging rehearsal #2: no lag spikes after pausing the invoice cron. Ready for prod.

## 12:30
Lunch with the platform team; they want sqlite-vec numbers for 100k vectors.
""",
    ),
    (
        0,
        """## 08:40
Plan for today: write the Atlas cut-over checklist, review Lighthouse PR #87.
""",
    ),
]

NOTES = {
    "memory/projects/atlas.md": """# Atlas — billing migration

## Cut-over checklist
1. Announce the maintenance window in #billing 24 h ahead.
2. Pause the invoice cron job.
3. Run pg_upgrade with --link on the replica, then promote.
4. Smoke-test: create, pay and refund a test invoice.
5. Resume the cron; watch error rates for 30 minutes.

## Rollback
Keep the old primary read-only for 48 h. Rollback = repoint PgBouncer to it.
""",
    "memory/gtd/NEXT.md": """# Next actions

- [ ] Atlas: one-page rollback plan for Ravi
- [ ] Lighthouse: label 100 more tickets for evaluation
- [ ] Renew passport (expires in June)
- [x] Book Porto train
""",
}


def default_demo_dir() -> Path:
    from engine.embeddings.registry import models_dir

    return models_dir().parent / "demo-workspace"


def create_demo_workspace(target: Path, today: dt.date | None = None) -> bool:
    """Write the demo files into ``target`` unless it already holds a MEMORY.md.

    Returns True when files were written. Existing files are never overwritten.
    """
    target = Path(target)
    if (target / "MEMORY.md").exists():
        return False
    today = today or dt.date.today()
    (target / "memory").mkdir(parents=True, exist_ok=True)
    (target / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    for days_ago, body in DAILY:
        day = today - dt.timedelta(days=days_ago)
        path = target / "memory" / f"{day.isoformat()}.md"
        if not path.exists():
            path.write_text(f"# {day.isoformat()}\n\n{body}", encoding="utf-8")
    for rel, body in NOTES.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(body, encoding="utf-8")
    return True
