"""``hf:`` model downloads against a real loopback HTTP server: resume, errors, HF_ENDPOINT."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from engine.embeddings.base import ProviderError
from engine.embeddings.hf_download import HfUri, download
from tests.provider_servers import QuietHTTPServer

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []
        self.cut_after: int | None = None  # drop the connection after this many body bytes
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                rng = self.headers.get("Range")
                outer.requests.append((self.path, rng))
                if not self.path.endswith("/resolve/main/sub/model.gguf"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = int(rng.split("=")[1].rstrip("-")) if rng else 0
                body = PAYLOAD[start:]
                self.send_response(206 if rng else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if outer.cut_after is not None:
                    self.wfile.write(body[: outer.cut_after])
                    self.wfile.flush()
                    outer.cut_after = None
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def hf_server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_uri_parsing() -> None:
    hf = HfUri.parse("hf:ggml-org/embeddinggemma-300m-qat-q8_0-GGUF/embeddinggemma.gguf")
    assert (hf.owner, hf.repo, hf.file) == (
        "ggml-org",
        "embeddinggemma-300m-qat-q8_0-GGUF",
        "embeddinggemma.gguf",
    )
    assert hf.url("https://x.test/") == (
        "https://x.test/ggml-org/embeddinggemma-300m-qat-q8_0-GGUF/resolve/main/embeddinggemma.gguf"
    )
    for bad in ("hf:a/b", "hf:a/../c/d", "file:/x", "hf:a//c"):
        with pytest.raises(ProviderError):
            HfUri.parse(bad)


def test_interrupted_download_resumes_with_range(hf_server: _Server, tmp_path: Path) -> None:
    env = {"HF_ENDPOINT": hf_server.url}
    hf_server.cut_after = 300_000
    with pytest.raises(ProviderError, match="next try resumes"):
        download("hf:own/repo/sub/model.gguf", tmp_path, env=env)
    part = tmp_path / "own" / "repo" / "sub" / "model.gguf.part"
    assert part.stat().st_size == 300_000
    assert not (tmp_path / "own" / "repo" / "sub" / "model.gguf").exists()

    seen = []
    path = download("hf:own/repo/sub/model.gguf", tmp_path, env=env, progress=seen.append)
    assert path.read_bytes() == PAYLOAD
    assert not part.exists()
    assert hf_server.requests[-1] == ("/own/repo/resolve/main/sub/model.gguf", "bytes=300000-")
    assert seen[-1].done_bytes == len(PAYLOAD) and seen[-1].resumed_from == 300_000

    # cached: no further request
    n = len(hf_server.requests)
    assert download("hf:own/repo/sub/model.gguf", tmp_path, env=env) == path
    assert len(hf_server.requests) == n


def test_http_error_is_clear(hf_server: _Server, tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="HTTP 404"):
        download("hf:own/repo/missing.gguf", tmp_path, env={"HF_ENDPOINT": hf_server.url})
    assert list(tmp_path.rglob("*.gguf")) == []
