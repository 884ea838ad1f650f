"""Images and audio in extraPaths embedded by gemini-embedding-2-preview through
the real engine and a loopback Gemini server (multimodal embedding)."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.core import Engine
from tests.engine_fixtures import write
from tests.provider_servers import FAST_ENV as FAST
from tests.provider_servers import ProviderServer

KEY = "gemini-key-654321"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
MP3 = b"ID3\x03\x00" + bytes(300)


@pytest.fixture
def gemini_server() -> Iterator[ProviderServer]:
    with ProviderServer(api_key=KEY) as s:
        yield s


@pytest.fixture
def media(workspace_dir: Path) -> Path:
    write(workspace_dir, "MEMORY.md", "# Memory\n\nDana prefers flat white coffee.\n")
    root = workspace_dir / "media"
    (root / "photos").mkdir(parents=True)
    (root / "photos" / "team-offsite_whiteboard.png").write_bytes(PNG)
    (root / "voice-memo-atlas.mp3").write_bytes(MP3)
    (root / "huge-scan.png").write_bytes(b"\x89PNG" + bytes(5000))
    (root / "notes.md").write_text("# Notes\n\nThe whiteboard photo is from March.\n")
    (root / "readme.txt").write_text("not indexed")
    (workspace_dir / "memory").mkdir(exist_ok=True)
    (workspace_dir / "memory" / "outside-extra.png").write_bytes(PNG)  # memory roots: md only
    os.symlink(root / "voice-memo-atlas.mp3", root / "linked.mp3")
    return root


@pytest.fixture
def build(make_settings, engines) -> Callable[..., Engine]:
    def make(url: str, **ms: Any) -> Engine:
        changes: dict[str, Any] = {
            "provider": "gemini",
            "model": "gemini-embedding-2-preview",
            "output_dimensionality": 768,
            "remote.base_url": url + "/v1beta",
            "remote.api_key": KEY,
            "extra_paths": ("media",),
            "multimodal.enabled": True,
            "multimodal.max_file_bytes": 1000,
            **ms,
        }
        eng = Engine(make_settings(**changes), env=FAST)
        engines.append(eng)
        return eng

    return make


def media_requests(gemini_server: ProviderServer) -> list[Any]:
    return [
        r
        for r in gemini_server.embed_requests()
        if r.path.endswith(":embedContent") and "inlineData" in r.body.decode()
    ]


def test_images_and_audio_are_embedded_from_their_bytes(build, gemini_server, media) -> None:
    eng = build(gemini_server.url)
    st = eng.status()
    assert st.multimodal.active and "image+audio" in st.multimodal.why
    done = eng.sync()
    assert done.chunks_embedded == 4  # MEMORY.md, notes.md, the png, the mp3
    assert eng.status().embedded_chunks == 4 and eng.store.dims == 768
    sent = {}
    for r in media_requests(gemini_server):
        body = r.json
        part = body["content"]["parts"][0]["inlineData"]
        sent[part["mimeType"]] = base64.b64decode(part["data"])
        assert body["taskType"] == "RETRIEVAL_DOCUMENT"
        assert body["outputDimensionality"] == 768
        assert r.path == "/v1beta/models/gemini-embedding-2-preview:embedContent"
    assert sent == {"image/png": PNG, "audio/mpeg": MP3}
    files = eng.store.files()
    assert "media/photos/team-offsite_whiteboard.png" in files
    assert "media/voice-memo-atlas.mp3" in files
    assert "memory/outside-extra.png" not in files and "media/linked.mp3" not in files
    assert "media/readme.txt" not in files
    assert "over multimodal.maxFileBytes (1000)" in eng.status().file_errors["media/huge-scan.png"]
    # the label makes a media file findable by the words of its name
    outcome = eng.search("team offsite", eng.default_options().with_(min_score=0, mode="fts"))
    top = outcome.results[0]
    assert top.path == "media/photos/team-offsite_whiteboard.png"
    assert top.text == "image: team offsite whiteboard (media/photos/team-offsite_whiteboard.png)"
    # unchanged files: nothing is sent again
    before = len(gemini_server.embed_requests())
    assert eng.sync().chunks_embedded == 0
    assert len(gemini_server.embed_requests()) == before


def test_modalities_limit_what_is_indexed(build, gemini_server, media) -> None:
    eng = build(gemini_server.url, **{"multimodal.modalities": ("image",)})
    eng.sync()
    assert [
        r.json["content"]["parts"][0]["inlineData"]["mimeType"]
        for r in media_requests(gemini_server)
    ] == ["image/png"]
    assert "media/voice-memo-atlas.mp3" not in eng.store.files()


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"fallback": "openai"}, 'multimodal needs fallback "none"'),
        ({"model": "gemini-embedding-001"}, "needs gemini-embedding-2-preview"),
        ({"multimodal.enabled": False}, "multimodal.enabled is false"),
    ],
)
def test_multimodal_off_says_why_and_indexes_markdown_only(
    build, gemini_server, media, changes, why
) -> None:
    eng = build(gemini_server.url, **changes)
    st = eng.status()
    assert not st.multimodal.active and why in st.multimodal.why
    eng.sync()
    assert media_requests(gemini_server) == []
    assert sorted(eng.store.files()) == ["MEMORY.md", "media/notes.md"]


def test_pooled_text_chunks_keep_media_vectors_cached(build, gemini_server, media) -> None:
    """With unit vectors on and embedded on their own, text chunks' vectors are pooled
    from them (``engine.index.pooled_chunks``) and never cached; a media file's vector
    is the model's and is: a rebuild sends neither its bytes nor any text again."""
    eng = build(gemini_server.url, **{"store.line_vectors": True})
    assert eng.status().chunk_vectors_pooled
    eng.sync()
    assert len(media_requests(gemini_server)) == 2
    before = len(gemini_server.embed_requests())
    done = eng.sync(force=True)
    assert done.full and done.chunks_embedded == 0
    assert len(gemini_server.embed_requests()) == before
    # the media vectors are float32 (the model's), the pooled ones 8-bit
    sizes = dict(eng.store.db.execute("select path, length(embedding) from chunks"))
    assert sizes["media/voice-memo-atlas.mp3"] == 768 * 4
    assert sizes["MEMORY.md"] == 768 + 4
