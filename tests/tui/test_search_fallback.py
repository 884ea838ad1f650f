"""The search pane's keyword-only line at 80×24 and 160×45.

A search that asked for vectors and answered keyword-only says so on its own
line — mode, fallback and the reason the CLI's ``--json`` gives as ``reason`` —
wrapped, so the reason stays readable in an 80-column terminal where the pane
is narrow. Two real causes: an embedding endpoint that went down after the
index was built (a loopback server answering 503), and the first search of a
new workspace while its vectors are still being built.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from engine.core import Engine
from engine.embeddings.base import ProgressCallback
from engine.searchers import keyword_only_reason
from tests.engine.concept_embedder import ConceptEmbedder
from tests.provider_servers import FAST_ENV, ProviderServer, Reply, always, write_notes
from tests.tui.conftest import ready, search, wait_for
from tui.app import MemdeckApp
from tui.settings import UISettings

KEY = "sk-tui-fallback-123456"


def plain(renderable: object, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text().rstrip("\n").split("\n")


class GatedEmbedder(ConceptEmbedder):
    """The concept embedder whose document batches wait for ``gate``: the first
    index of a workspace stays "being built" for as long as a test needs."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        self.gate.wait(60)
        return super().embed_documents(texts, progress)


def run_at(app: MemdeckApp, size: tuple[int, int], scenario: Callable[[Pilot], Any]) -> None:
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await ready(pilot)
            await scenario(pilot)

    asyncio.run(main())


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_a_provider_down_says_keyword_only_with_the_whole_reason(
    make_settings: Callable[..., Any],
    workspace_dir: Path,
    make_app: Callable[..., MemdeckApp],
    size: tuple[int, int],
) -> None:
    write_notes(workspace_dir)
    with ProviderServer(api_key=KEY, dims=16) as server:
        settings = make_settings(
            **{"provider": "openai", "remote.base_url": server.url + "/v1", "remote.api_key": KEY}
        )
        engine = Engine(settings, env={**FAST_ENV, "MEMDECK_REMOTE_RETRIES": "1"})
        try:
            engine.sync()
            assert engine.search("flat white").mode == "hybrid"  # vectors work first
            server.faults = always(Reply(503, {"error": {"message": "upstream is down"}}))
            app = make_app(engine)

            async def go(pilot: Pilot) -> None:
                await search(pilot, "flat white")
                pane = app.search_pane
                out = pane.outcome
                assert out is not None and out.mode == "fts"
                assert [c.path for c in out.results] == ["MEMORY.md"]  # reads go on
                reason = keyword_only_reason(engine, out)
                assert reason is not None and "503" in reason and "upstream is down" in reason
                line = pane.query_one("#search-fallback", Static)
                assert line.display
                region = line.content_region
                shown = plain(line.content, region.width)
                # every wrapped line of it is on screen: nothing is cut off
                assert len(shown) <= region.height, (shown, region)
                text = " ".join(" ".join(ln.split()) for ln in shown)
                assert text == " ".join(f"keyword-only (hybrid → fts): {reason}".split())
                status = plain(pane.query_one("#search-status", Static).content, 400)[0]
                assert "vector side failed" not in status and "unavailable" not in status
                # the endpoint answers again: the line goes away with the next search
                server.faults = None
                await pilot.press("backspace")
                await wait_for(
                    pilot, lambda: pane.outcome is not out and pane.outcome.mode == "hybrid"
                )
                await wait_for(pilot, lambda: not line.display)

            run_at(app, size, go)
        finally:
            engine.close()


async def _first_search(pilot: Pilot) -> None:
    await ready(pilot)
    await search(pilot, "cat medication")
    out = pilot.app.search_pane.outcome
    assert out is not None and out.mode == "fts"
    assert "vectors are still being built" in (out.retrieval.vector_error or "")
    # the first index started and is held at its first batch: a stable picture
    await wait_for(pilot, lambda: pilot.app.syncing is not None)
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_snapshot_keyword_only_while_vectors_are_built(
    engine_factory: Callable[..., Engine],
    make_app: Callable[..., MemdeckApp],
    snap_compare: Callable[..., bool],
    size: tuple[int, int],
) -> None:
    provider = GatedEmbedder()
    engine = engine_factory(provider, sync=False)
    app = make_app(engine, ui_settings=UISettings(theme="memdeck-dark"))
    try:
        assert snap_compare(app, terminal_size=size, run_before=_first_search)
    finally:
        provider.gate.set()  # let the first index finish so the engine closes
