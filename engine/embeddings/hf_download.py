"""Fetching a GGUF named by an ``hf:<owner>/<repo>/<file>`` URI, resumably.

The file is streamed into ``<name>.part`` beside its final place; an
interrupted download continues from the bytes already there with an HTTP
``Range`` request, and only a complete file is renamed into place, so the
provider never loads a truncated model. ``HF_ENDPOINT`` replaces the host
(mirrors, and the loopback server of the tests).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from engine.embeddings.base import ProviderError

DEFAULT_ENDPOINT = "https://huggingface.co"


@dataclass(frozen=True)
class HfUri:
    owner: str
    repo: str
    file: str

    @classmethod
    def parse(cls, uri: str) -> HfUri:
        if not uri.startswith("hf:"):
            raise ProviderError(f"not an hf: URI: {uri!r}")
        parts = uri[3:].strip("/").split("/")
        if len(parts) < 3 or any(not p or p in (".", "..") for p in parts):
            raise ProviderError(f"hf: URI must be hf:<owner>/<repo>/<file>, got {uri!r}")
        return cls(parts[0], parts[1], "/".join(parts[2:]))

    def url(self, endpoint: str) -> str:
        return f"{endpoint.rstrip('/')}/{self.owner}/{self.repo}/resolve/main/{self.file}"

    def local_path(self, cache_dir: Path) -> Path:
        return cache_dir / self.owner / self.repo / self.file


@dataclass(frozen=True)
class DownloadProgress:
    done_bytes: int
    total_bytes: int | None
    resumed_from: int


def download(
    uri: str,
    cache_dir: Path,
    *,
    env: Mapping[str, str] = os.environ,
    progress: Callable[[DownloadProgress], None] | None = None,
    timeout: float = 30.0,
) -> Path:
    """Return the cached file for ``uri``, downloading (or resuming) it first if needed."""
    hf = HfUri.parse(uri)
    target = hf.local_path(Path(cache_dir))
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    have = part.stat().st_size if part.is_file() else 0
    url = hf.url(env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
    headers = {"Range": f"bytes={have}-"} if have else {}
    token = env.get("HF_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with httpx.stream(
            "GET", url, headers=headers, follow_redirects=True, timeout=timeout
        ) as resp:
            if resp.status_code == 416 and have:
                # The part file already holds every byte the server has.
                os.replace(part, target)
                return target
            if resp.status_code not in (200, 206):
                raise ProviderError(
                    f"downloading {uri} failed: HTTP {resp.status_code} from {url}",
                    status=resp.status_code,
                )
            if resp.status_code == 200:
                have = 0  # the server ignored Range: start over
            length = resp.headers.get("content-length")
            total = have + int(length) if length and length.isdigit() else None
            resumed_from = have
            with part.open("ab" if have else "wb") as fh:
                for block in resp.iter_bytes():  # as received, so a drop keeps every byte
                    fh.write(block)
                    have += len(block)
                    if progress:
                        progress(DownloadProgress(have, total, resumed_from))
    except httpx.HTTPError as exc:
        raise ProviderError(
            f"downloading {uri} from {url} was interrupted ({type(exc).__name__}: {exc}); "
            f"{have} bytes kept in {part.name}, the next try resumes",
            retryable=True,
        ) from exc
    if total is not None and have != total:
        raise ProviderError(
            f"downloading {uri}: got {have} of {total} bytes; the next try resumes", retryable=True
        )
    os.replace(part, target)
    return target
