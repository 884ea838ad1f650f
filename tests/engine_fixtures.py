"""Fixtures for building real engines on temporary workspaces (loaded as a pytest plugin)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config.loader import load_settings
from engine.config.settings import Settings
from engine.core import Engine

FIXED_TODAY = dt.date(2026, 3, 15)


def replace_ms(settings: Settings, **changes: Any) -> Settings:
    """Return settings with ``memory_search`` fields replaced (nested via dotted keys)."""
    ms = settings.memory_search
    for key, value in changes.items():
        parts = key.split(".")
        ms = _replace_path(ms, parts, value)
    return dataclasses.replace(settings, memory_search=ms)


def _replace_path(obj: Any, parts: list[str], value: Any) -> Any:
    if len(parts) == 1:
        return dataclasses.replace(obj, **{parts[0]: value})
    inner = getattr(obj, parts[0])
    return dataclasses.replace(obj, **{parts[0]: _replace_path(inner, parts[1:], value)})


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


@pytest.fixture
def workspace_dir(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    (d / "memory").mkdir(parents=True)
    return d


@pytest.fixture
def make_settings(state_dir: Path, workspace_dir: Path) -> Callable[..., Settings]:
    def make(**ms_changes: Any) -> Settings:
        settings = load_settings(
            workspace=workspace_dir,
            env={"OPENCLAW_STATE_DIR": str(state_dir), "HOME": str(state_dir)},
        )
        return replace_ms(settings, **ms_changes) if ms_changes else settings

    return make


@pytest.fixture
def engines() -> Iterator[list[Engine]]:
    """Engines a test opened; each is closed at teardown, so no index stays open."""
    opened: list[Engine] = []
    yield opened
    for engine in opened:
        engine.close()


@pytest.fixture
def make_engine(
    make_settings: Callable[..., Settings], engines: list[Engine]
) -> Callable[..., Engine]:
    def make(provider: Any = None, **ms_changes: Any) -> Engine:
        engine = Engine(make_settings(**ms_changes), provider=provider)
        engines.append(engine)
        return engine

    return make


#: three short notes the search tests index with the hand-checkable ConceptEmbedder
#: (tests/engine/concept_embedder.py): a cat's medication, a train, a migration
CONCEPT_NOTES = {
    "MEMORY.md": "Miso the cat takes a methimazole tablet every morning.\n",
    "memory/2026-03-14.md": "Booked the train to Porto.\n",
    "memory/2026-02-13.md": "Postgres migration rehearsal went fine.\n",
}


@pytest.fixture
def make_concept_engine(
    make_engine: Callable[..., Engine], workspace_dir: Path
) -> Callable[..., Engine]:
    """An engine with the ConceptEmbedder over ``CONCEPT_NOTES`` plus ``extra``
    ({path: text}), synced."""
    from tests.engine.concept_embedder import ConceptEmbedder

    def make(extra: dict[str, str] | None = None) -> Engine:
        for rel, text in {**CONCEPT_NOTES, **(extra or {})}.items():
            write(workspace_dir, rel, text)
        engine = make_engine(provider=ConceptEmbedder())
        engine.sync()
        return engine

    return make


@pytest.fixture
def concept_engine(make_concept_engine: Callable[..., Engine]) -> Engine:
    """``CONCEPT_NOTES`` indexed with the ConceptEmbedder."""
    return make_concept_engine()


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
