"""Images and audio in extraPaths, embedded by Gemini Embedding 2.

Only files under ``extraPaths`` count (the memory roots stay Markdown-only),
only the listed formats, only up to ``multimodal.maxFileBytes``, and only when
the provider can embed them (``gemini-embedding-2-preview``) with
``fallback: "none"`` — a fallback could not embed the same files, so a switch
would silently drop them from the index.

Each file becomes one chunk: its vector comes from the file's bytes, its text
is a label made of the path's words so keyword search finds it by name.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.config.settings import MemorySearchSettings

IMAGE_TYPES: dict[str, str] = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".heic": "image/heic",
    ".heif": "image/heif",
}
AUDIO_TYPES: dict[str, str] = {
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".ogg": "audio/ogg",
    ".opus": "audio/opus",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    ".flac": "audio/flac",
}
MODALITY_TYPES = {"image": IMAGE_TYPES, "audio": AUDIO_TYPES}


def media_types(modalities: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Suffix → MIME type for the enabled modalities."""
    out: dict[str, str] = {}
    for modality in modalities:
        out.update(MODALITY_TYPES.get(modality, {}))
    return out


def modality_of(mime: str) -> str:
    return mime.split("/", 1)[0]


def media_label(rel: str, mime: str) -> str:
    """The searchable text of a media chunk: ``image: team offsite whiteboard (…/x.png)``."""
    words = " ".join(re.findall(r"[^\W_]+", Path(rel).stem))
    return f"{modality_of(mime)}: {words} ({rel})"


def multimodal_scope(ms: MemorySearchSettings, provider: object | None) -> tuple[bool, str]:
    """Whether media files are indexed with this provider, and why (for status)."""
    mm = ms.multimodal
    if not mm.enabled:
        return False, "multimodal.enabled is false"
    if not ms.extra_paths:
        return False, "multimodal indexing only covers extraPaths, and none are configured"
    if ms.fallback != "none":
        return False, f'multimodal needs fallback "none" (it is "{ms.fallback}")'
    if provider is None or not getattr(provider, "multimodal_capable", False):
        what = f"{getattr(provider, 'id', 'none')}/{getattr(provider, 'model', '-')}"
        return False, f"multimodal needs gemini-embedding-2-preview (provider is {what})"
    kinds = "+".join(mm.modalities)
    return True, f"{kinds} files in extraPaths up to {mm.max_file_bytes} bytes"
