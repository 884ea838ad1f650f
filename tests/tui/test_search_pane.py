"""Live search driven by Pilot: typing, ranked rows, breakdown, why-not, toggles, open."""

from __future__ import annotations

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static, TabbedContent

from engine.search.explain import formula
from engine.search.rank import rank
from tests.engine_fixtures import write
from tests.tui.conftest import TODAY, drive, search, wait_for
from tui.messages import SearchFinished


def plain(renderable: object, width: int = 220) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_typing_ranks_results_and_explains_the_top_one(hybrid_engine, make_app) -> None:
    app = make_app(hybrid_engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "cat medication")
        pane = app.search_pane
        expected = hybrid_engine.search("cat medication", pane.options, today=TODAY)
        got = pane.outcome
        assert got is not None and got.mode == "hybrid"
        assert [(c.path, c.start_line, round(c.score, 6)) for c in got.results] == [
            (c.path, c.start_line, round(c.score, 6)) for c in expected.results
        ]
        assert got.fusion == "calibrated"
        # cat + methimazole tablet: MEMORY.md is a hit (the daily log's line may rank first)
        assert "MEMORY.md" in [c.path for c in got.results]
        table = pane.query_one("#results", DataTable)
        assert table.row_count == len(expected.results)
        first = [cell.plain for cell in table.get_row_at(0)]
        assert first[0] == "1"
        assert first[1].endswith(f" {expected.results[0].score:.4f}")
        # the columns are the factors the fusion used (best line's cosine, share of
        # the query's idf), not the chunk's raw cosine or the mapped bm25
        top = expected.results[0]
        assert top.parts is not None and top.parts.vector is not None
        assert top.parts.text is not None
        assert first[2].endswith(f" {top.parts.vector:.2f}")
        assert first[3].endswith(f" {top.parts.text:.2f}")
        assert (top.parts.vector, top.parts.text) == (top.vector_component, top.text_component)
        assert first[-1].startswith(f"{expected.results[0].path}:")
        text = plain(pane.query_one("#breakdown-body", Static).content)
        assert formula(expected.results[0]) in text
        assert "FTS list" in text and "vector list (cosine)" in text
        # every candidate list entry of the retrieval is shown (up to 12 rows)
        assert f"{got.retrieval.vector_hits[0][1]:.3f}" in text

    drive(app, go)


def test_why_not_lists_every_dropped_candidate_with_its_reason(hybrid_engine, make_app) -> None:
    app = make_app(hybrid_engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "cat medication")
        pane = app.search_pane
        await pilot.press("f8")
        assert pane.query_one("#detail-tabs", TabbedContent).active == "tab-whynot"
        whynot = pane.query_one("#whynot", DataTable)
        dropped = pane.outcome.dropped
        assert dropped, "the demo has low-scoring vector candidates"
        assert whynot.row_count == len(dropped)
        reasons = [whynot.get_row_at(i)[3].plain for i in range(whynot.row_count)]
        assert reasons == [c.dropped for c in dropped]
        assert all(r.startswith(("score ", "cut: ")) for r in reasons)
        whynot.focus()
        await pilot.pause()
        detail = plain(pane.query_one("#whynot-detail", Static).content)
        assert formula(dropped[0]) in detail and dropped[0].dropped in detail

    drive(app, go)


#: every Store operation a retrieval uses (``engine.search.retrieve.retrieve``)
INDEX_READS = (
    "fts_search",
    "keyword_search",
    "vector_search",
    "fts_ranks_of",
    "can_rank_rows",
    "chunk_rows",
    "chunk_vectors",
    "chunk_hashes",
    "line_vectors",
    "term_doc_counts",
    "fts_row_count",
    "file_mtimes",
    "cache_get",
)


def test_toggles_rerank_the_cached_retrieval_without_querying(
    hybrid_engine, make_app, monkeypatch
) -> None:
    provider = hybrid_engine.provider
    app = make_app(hybrid_engine)
    index_reads: list[str] = []
    searches: list[str] = []

    async def go(pilot: Pilot) -> None:
        await search(pilot, "cat medication")
        pane = app.search_pane
        retrieval = pane.retrieval
        calls = provider.calls
        hybrid_top = pane.outcome.results[0].score
        # from here on, any read of the index or any search is recorded
        store = hybrid_engine.store
        for name in INDEX_READS:
            real = getattr(store, name)

            def spy(*args, _name=name, _real=real, **kwargs):
                index_reads.append(_name)
                return _real(*args, **kwargs)

            monkeypatch.setattr(store, name, spy)
        real_search = hybrid_engine.search

        def search_spy(query, *args, **kwargs):
            searches.append(query)
            return real_search(query, *args, **kwargs)

        monkeypatch.setattr(hybrid_engine, "search", search_spy)

        await pilot.press("f2")  # hybrid → FTS-only
        assert pane.options.mode == "fts" and pane.outcome.mode == "fts"
        fts = rank(retrieval, pane.options, TODAY)
        assert [c.chunk_id for c in pane.outcome.results] == [c.chunk_id for c in fts.results]
        assert all(c.vector_weight == 0.0 for c in pane.outcome.candidates)
        await pilot.press("f2")  # → vector-only
        assert pane.outcome.mode == "vector"
        assert all(c.text_weight == 0.0 for c in pane.outcome.candidates)
        await pilot.press("f2")  # → hybrid again
        assert pane.outcome.results[0].score == hybrid_top

        await pilot.press("f7")  # more vector weight
        assert (pane.options.vector_weight, pane.options.text_weight) == (0.8, 0.2)
        assert pane.outcome.results[0].vector_weight == 0.8
        await pilot.press("f3")  # normalized → weighted
        assert pane.outcome.fusion == "weighted"
        top = pane.outcome.results[0]
        assert top.text_component == top.text_score  # raw scores, no normalisation
        await pilot.press("f4")  # MMR on
        assert pane.options.mmr_enabled
        assert all(c.mmr_position is not None for c in pane.outcome.candidates)
        await pilot.press("f5")  # decay on
        daily = [c for c in pane.outcome.candidates if c.path.startswith("memory/2026")]
        assert daily and all(c.age_days is not None for c in daily)
        ages = {c.path: (c.age_days, round(c.decay_multiplier, 4)) for c in daily}
        assert ages["memory/2026-03-15.md"] == (0.0, 1.0)  # today: no decay
        assert ages["memory/2026-03-06.md"] == (
            9.0,
            round(0.5 ** (9 / 30), 4),
        )
        assert all(c.age_days is None for c in pane.outcome.candidates if c.path == "MEMORY.md")
        # none of this touched the index or the embedder
        assert pane.retrieval is retrieval
        assert provider.calls == calls
        assert hybrid_engine.store is store
        assert index_reads == [] and searches == []
        # the spies do see a real query: the next keystroke searches again
        await pilot.press("s")
        await wait_for(pilot, lambda: pane.outcome.query == "cat medications")
        assert searches == ["cat medications"] and "vector_search" in index_reads
        toggles_text = plain(pane.query_one("#search-toggles", Static).content)
        assert "weighted" in toggles_text and "MMR on" in toggles_text
        assert "decay on 30 d" in toggles_text and "0.80/0.20" in toggles_text

    drive(app, go)


def test_enter_opens_the_hit_in_the_editor_at_its_line(engine_factory, demo_dir, make_app) -> None:
    lines = [f"Line {i}: routine notes about the garden shed and its paint." for i in range(1, 61)]
    lines[49] = "Line 50: the spare key for the shed hides under the blue flowerpot."
    write(demo_dir, "memory/projects/house.md", "\n".join(lines) + "\n")
    engine = engine_factory(None)
    app = make_app(engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "flowerpot")
        hit = app.search_pane.outcome.results[0]
        assert hit.path == "memory/projects/house.md" and hit.start_line > 1
        await pilot.press("enter")
        await pilot.pause()
        editor = app.editor_pane
        assert editor.rel == "memory/projects/house.md"
        assert editor.area.cursor_location == (hit.start_line - 1, 0)
        assert app.query_one("#panes", TabbedContent).active == "pane-editor"
        assert app.focused is editor.area
        assert app.memory_tree.cursor_rel == "memory/projects/house.md"

    drive(app, go)


def test_stale_results_are_ignored_and_the_last_query_wins(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        await pilot.press(*"porto train")
        pane = app.search_pane
        await wait_for(pilot, lambda: pane.outcome and pane.outcome.query == "porto train")
        await pilot.pause(0.2)
        assert pane.outcome.query == "porto train"
        shown = pane.shown
        old = fts_engine.search("porto", pane.options)
        pane.post_message(SearchFinished(pane.generation - 1, old))
        await pilot.pause()
        assert pane.shown == shown and pane.outcome.query == "porto train"
        # clearing the box clears the results
        inp = pane.query_one("#search-input", Input)
        inp.value = ""
        await pilot.pause()
        assert pane.outcome is None and pane.query_one("#results", DataTable).row_count == 0

    drive(app, go)


def test_slash_focuses_search_from_the_tree_and_escape_leaves(fts_engine, make_app) -> None:
    app = make_app(fts_engine)

    async def go(pilot: Pilot) -> None:
        inp = app.search_pane.query_one("#search-input", Input)
        assert app.focused is inp  # the start pane is search
        await pilot.press("escape")  # no results yet → the tree
        assert app.focused is app.memory_tree
        await pilot.press("4")
        assert app.query_one("#panes", TabbedContent).active == "pane-monitor"
        await pilot.press("slash")
        assert app.focused is inp
        assert app.query_one("#panes", TabbedContent).active == "pane-search"
        await pilot.press(*"invoice cron")
        await wait_for(pilot, lambda: app.search_pane.outcome is not None)
        await pilot.press("escape")  # with results → the results table
        assert app.focused is app.search_pane.query_one("#results", DataTable)
        await pilot.press("down", "enter")
        second = app.search_pane.outcome.results[1]
        assert app.editor_pane.rel == second.path

    drive(app, go)


def test_a_refill_of_as_many_rows_is_in_place_and_shows_the_new_ranking(
    hybrid_engine, make_app
) -> None:
    """Typing on with as many results: the rows are rewritten where they are (no new
    layout of the screen) and read exactly as a fresh table would."""
    from tui.widgets.search_pane import result_cells

    app = make_app(hybrid_engine)

    async def go(pilot: Pilot) -> None:
        pane = app.search_pane
        table = pane.query_one("#results", DataTable)
        await search(pilot, "cat")
        first = pane.outcome
        assert first is not None and first.results
        size, updates = table.virtual_size, table._update_count
        # a query with as many results whose cells fit the columns the table has
        for query in ("cat medication", "cat tablet", "cat vet"):
            out = hybrid_engine.search(query, pane.options, today=TODAY)
            if len(out.results) == len(first.results):
                break
        else:
            raise AssertionError("no second query with as many results")
        inp = pane.query_one("#search-input", Input)
        inp.value = query
        await wait_for(pilot, lambda: pane.outcome is not None and pane.outcome.query == query)
        await pilot.pause()
        got = pane.outcome
        assert got is not first
        rows = [[c.plain for c in table.get_row_at(i)] for i in range(table.row_count)]
        want = [
            [c.plain for c in result_cells(r, app.theme_variables, pane.columns)]
            for r in got.results
        ]
        assert rows == want
        assert table._update_count > updates  # cells rewritten ...
        assert table.virtual_size == size  # ... in rows of the same size
        assert pane.highlighted() is got.results[table.cursor_row]

    drive(app, go)


def test_a_rescued_row_says_so(engine_factory, make_app) -> None:
    """With a minScore nothing reaches, the keyword rescue keeps keyword hits: the
    status line says "keyword rescue" and each such row carries "rescued"."""
    from tests.engine.concept_embedder import ConceptEmbedder

    engine = engine_factory(ConceptEmbedder(), **{"query.min_score": 0.99})
    app = make_app(engine)

    async def go(pilot: Pilot) -> None:
        await search(pilot, "methimazole")
        pane = app.search_pane
        out = pane.outcome
        assert out is not None and out.rescue_used and out.results
        assert all(c.rescued and c.score < 0.99 for c in out.results)
        table = pane.query_one("#results", DataTable)
        for row in range(table.row_count):
            location = table.get_row_at(row)[-1].plain
            assert location.endswith(" rescued"), location
        status = plain(pane.query_one("#search-status", Static).content)
        assert "keyword rescue" in status and "minScore 0.99" in status

    drive(app, go)
