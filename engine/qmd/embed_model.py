"""Pointing qmd's embedder at a local GGUF instead of a HuggingFace download.

qmd's ``embed``, ``vsearch`` and ``query`` load GGUF models named in the
``models`` block of ``$XDG_CONFIG_HOME/qmd/index.yml``; the defaults are
``hf:`` URIs fetched on first use, which offline hangs for minutes. An
absolute file path there is used as is, so memdeck writes the path of its own
local model (``memdeck model import``) into ``models.embed``. qmd keeps the
rest of the file (collections, other models) when it rewrites it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from engine.embeddings.registry import default_model_path
from engine.qmd.runner import QmdHome
from engine.workspace.files import atomic_write


def memdeck_embed_model(env: Mapping[str, str] = os.environ) -> Path | None:
    """memdeck's registered local GGUF (all-MiniLM-L6-v2 after set-up), if present."""
    try:
        return default_model_path(env)
    except Exception:  # a broken registry means "no local model", not a crash
        return None


def set_embed_model(home: QmdHome, gguf: Path) -> bool:
    """Write ``models.embed: <absolute gguf path>``; True when the file changed.

    An unreadable or non-mapping ``index.yml`` is replaced: memdeck owns this
    qmd home, and qmd's collections are reconciled from memdeck's settings.
    """
    value = str(Path(gguf).resolve())
    try:
        data = yaml.safe_load(home.index_yml.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = None
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict):
        data = {}
    models = data.get("models")
    if not isinstance(models, dict):
        models = {}
    if models.get("embed") == value:
        return False
    models["embed"] = value
    data["models"] = models
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    atomic_write(home.index_yml, text.encode("utf-8"))
    return True
