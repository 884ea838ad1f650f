"""A query that names a day finds that day's log by its file name: "november 12" is
``memory/2026-11-12.md`` (``engine.search.words.date_words``), in the breakdown as the
name signal's share, in both modes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.core import Engine
from tests.engine.concept_embedder import ConceptEmbedder

DAYS = ("2026-11-05", "2026-11-12", "2026-11-13", "2026-10-12", "2026-12-01")


@pytest.mark.parametrize("hybrid", [True, False], ids=["hybrid", "keyword-only"])
def test_a_query_naming_a_day_finds_its_log(
    make_engine: Callable[..., Engine], workspace_dir: Path, hybrid: bool
) -> None:
    for day in DAYS:
        (workspace_dir / "memory" / f"{day}.md").write_text(
            f"# {day}\n\n- Standup: reviewed the backlog and the deploy queue.\n"
        )
    engine = make_engine(ConceptEmbedder() if hybrid else None)
    engine.sync()
    queries = [
        ("november 12", "memory/2026-11-12.md"),  # "12" is in every heading: a candidate
        ("standup thursday november 5", "memory/2026-11-05.md"),
    ]
    if hybrid:  # keyword-only, nothing in the text matches "nov 5": no candidate at all
        queries.append(("nov 5", "memory/2026-11-05.md"))
    for query, wanted in queries:
        out = engine.search(query, engine.default_options().with_(min_score=0))
        assert out.results, query
        top = out.results[0]
        assert top.path == wanted, (query, [(c.path, c.score) for c in out.results])
        assert top.name_share > 0 and top.name_bonus > 0, (query, top.name_share)


def test_a_recent_day_named_by_its_distance_from_today(
    make_engine: Callable[..., Engine], workspace_dir: Path
) -> None:
    """ "yesterday", "today" and "last friday" name the logs of those days relative to
    the search's today (a Sunday here): the log of that day first, by its name."""
    import datetime as dt

    today = dt.date(2026, 11, 29)  # a Sunday
    for day in ("2026-11-29", "2026-11-28", "2026-11-27", "2026-11-20", "2026-11-13"):
        (workspace_dir / "memory" / f"{day}.md").write_text(
            f"# {day}\n\n- Standup: reviewed the backlog and the deploy queue.\n"
        )
    engine = make_engine(ConceptEmbedder())
    engine.sync()
    options = engine.default_options().with_(min_score=0)
    for query, wanted in (
        ("yesterday", "memory/2026-11-28.md"),
        ("today", "memory/2026-11-29.md"),
        ("last friday", "memory/2026-11-27.md"),  # not the Fridays of 20 and 13 November
    ):
        out = engine.search(query, options, today=today)
        top = out.results[0]
        assert top.path == wanted, (query, [(c.path, c.score) for c in out.results])
        assert top.name_share == 1.0, (query, top.name_share)
