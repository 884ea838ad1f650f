"""2,000 chunks through the real engine against a server that answers 429 to one
request in five: every chunk ends up embedded, progress reports requests and
retries, and the next syncs re-embed nothing (cache hits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core import Engine
from engine.events import SyncProgress
from tests.engine_fixtures import write
from tests.provider_servers import TEST_KEY as KEY
from tests.provider_servers import ProviderServer, Reply, every_nth

FILES, LINES = 20, 100


def make_notes(root: Path) -> None:
    # chunking.tokens = 20 → 80-char chunks; each line is one chunk
    for f in range(FILES):
        body = "".join(
            f"note {f}-{n} about topic{(f * LINES + n) % 97} item{n}, kept on one line\n"
            for n in range(LINES)
        )
        write(root, f"memory/topics/file-{f:02d}.md", body)


@pytest.mark.slow
def test_2000_chunks_with_429_every_fifth_request(make_settings, workspace_dir) -> None:
    make_notes(workspace_dir)
    with ProviderServer(api_key=KEY, dims=64) as server:
        server.faults = every_nth(5, Reply(429, {"error": {"message": "Rate limit"}}))
        settings = make_settings(
            **{
                "provider": "openai",
                "remote.base_url": server.url + "/v1",
                "remote.api_key": KEY,
                "chunking.tokens": 20,
                "chunking.overlap": 0,
            }
        )
        eng = Engine(settings, env={"MEMDECK_REMOTE_BACKOFF_MS": "1"})
        progress: list[SyncProgress] = []
        eng.bus.subscribe(lambda e: progress.append(e) if isinstance(e, SyncProgress) else None)
        try:
            done = eng.sync()
            assert done.chunks_embedded == FILES * LINES == 2000 and not done.errors
            st = eng.status()
            assert st.chunks == st.embedded_chunks == 2000
            assert st.cache_entries == 2000
            answered = server.embed_requests()
            rejected = len(answered) // 5 + (1 if len(answered) % 5 else 0)
            assert st.provider_detail["retries"] == rejected
            assert st.provider_detail["requests"] == len(answered)
            embeds = [p for p in progress if p.phase == "embed"]
            assert embeds[-1].chunks_embedded == embeds[-1].chunks_total == 2000
            fractions = [p.chunks_embedded / p.chunks_total for p in embeds if p.chunks_total]
            assert all(0 <= f <= 1 for f in fractions)
            # the dimension probe (request 0, rejected once) ran before the embedding calls
            assert embeds[-1].retries == rejected - 1
            assert embeds[-1].requests == len(answered) - 2
            assert any(p.eta_seconds is not None for p in embeds)

            sent = len(server.embed_requests())
            again = eng.sync()
            assert again.chunks_embedded == 0 and again.files_indexed == 0
            rebuilt = eng.sync(force=True)  # a full rebuild is served from the cache
            assert rebuilt.full and rebuilt.chunks_embedded == 0 and rebuilt.cache_hits == 2000
            assert len(server.embed_requests()) == sent
            hit = eng.search("topic63 item42", eng.default_options().with_(min_score=0))
            assert hit.results[0].path == "memory/topics/file-07.md"
        finally:
            eng.close()
