"""The qmd collections memdeck wants, and bringing qmd's list in line with them.

Wanted: the workspace memory files (``includeDefaultMemory``) as three
collections rooted at the workspace — ``memory-root`` (``MEMORY.md``),
``memory-alt`` (``memory.md``) and ``memory-dir`` (``memory/**/*.md``), so their
paths inside qmd are exactly their workspace paths and a missing ``memory/``
folder is not an error — plus one per ``memory.qmd.paths`` entry, plus
``sessions`` (the exported transcripts) when enabled.

qmd's own list is read with ``collection list`` (names and patterns); paths
come from qmd's ``index.yml`` (or ``collection show`` when it is unreadable).
Reconciling removes every collection memdeck does not want — the qmd home is
memdeck's own — and then adds what is missing; a collection whose path or
pattern changed is removed and added again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.qmd.config import QmdSettings
from engine.qmd.runner import QmdError, QmdHome, QmdRunner
from engine.workspace.globs import matches_glob

DEFAULT_MEMORY = (
    ("memory-root", "MEMORY.md"),
    ("memory-alt", "memory.md"),
    ("memory-dir", "memory/**/*.md"),
)
SESSIONS = "sessions"

_LIST_NAME = re.compile(r"^(\S.*?) \(qmd://(.+?)/\)\s*$")
_FIELD = re.compile(r"^\s+(Path|Pattern):\s+(.*?)\s*$")


@dataclass(frozen=True)
class Collection:
    name: str
    path: Path
    pattern: str
    kind: str = "path"  # memory | path | sessions


@dataclass(frozen=True)
class Listed:
    name: str
    pattern: str | None
    path: Path | None = None


@dataclass
class ReconcileReport:
    kept: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def pattern_matches(pattern: str, rel: str) -> bool:
    """True when the collection's mask covers ``rel`` (what qmd itself would index)."""
    return matches_glob(rel, pattern[2:] if pattern.startswith("./") else pattern)


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-.").lower()
    return slug or "notes"


def desired_collections(
    qs: QmdSettings, workspace: Path, sessions_dir: Path | None
) -> tuple[list[Collection], list[str]]:
    """The wanted collections and warnings about configured paths that cannot be used."""
    out: list[Collection] = []
    warnings: list[str] = []
    if qs.include_default_memory:
        if workspace.is_dir():
            out += [Collection(n, workspace, p, "memory") for n, p in DEFAULT_MEMORY]
        else:
            warnings.append(
                f"workspace {workspace} does not exist; memory files not indexed by qmd"
            )
    if sessions_dir is not None:
        out.append(Collection(SESSIONS, sessions_dir, "**/*.md", "sessions"))
    taken = {c.name for c in out}
    seen = {(c.path, c.pattern) for c in out}
    for i, entry in enumerate(qs.paths):
        where = f"memory.qmd.paths[{i}]"
        path, pattern = entry.path, entry.pattern
        if path.is_file():
            path, pattern = path.parent, path.name
        elif not path.is_dir():
            warnings.append(f"{where}: {entry.path} does not exist; collection skipped")
            continue
        if (path, pattern) in seen:
            warnings.append(f"{where}: {entry.path} ({pattern}) is already a collection; skipped")
            continue
        base = entry.name or _slug(entry.path.stem if entry.path.is_file() else entry.path.name)
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        if entry.name and name != entry.name:
            warnings.append(f"{where}: name {entry.name!r} is taken; using {name!r}")
        out.append(Collection(name, path, pattern, "path"))
        taken.add(name)
        seen.add((path, pattern))
    return out, warnings


def parse_collection_list(text: str) -> list[Listed]:
    """Names and patterns from ``qmd collection list`` (text; it has no --json)."""
    listed: list[Listed] = []
    name: str | None = None
    pattern: str | None = None
    for line in text.splitlines():
        m = _LIST_NAME.match(line)
        if m:
            if name is not None:
                listed.append(Listed(name, pattern))
            name, pattern = m[1], None
            continue
        f = _FIELD.match(line)
        if f and name is not None and f[1] == "Pattern":
            pattern = f[2]
    if name is not None:
        listed.append(Listed(name, pattern))
    return listed


def parse_collection_show(text: str) -> tuple[Path | None, str | None]:
    path = pattern = None
    for line in text.splitlines():
        f = _FIELD.match(line)
        if f and f[1] == "Path":
            path = f[2]
        elif f and f[1] == "Pattern":
            pattern = f[2]
    return (Path(path) if path else None), pattern


def read_index_yml(home: QmdHome) -> dict[str, Any]:
    """qmd's config file as a dict ({} when missing or unreadable)."""
    try:
        data = yaml.safe_load(home.index_yml.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def plan(
    desired: Iterable[Collection], listed: Iterable[Listed]
) -> tuple[list[str], list[Collection]]:
    """(names to remove, collections to add) to turn *listed* into *desired* (pure)."""
    want = {c.name: c for c in desired}
    remove: list[str] = []
    have: set[str] = set()
    for item in listed:
        c = want.get(item.name)
        if c is not None and item.pattern == c.pattern and item.path == c.path:
            have.add(item.name)
        else:
            remove.append(item.name)
    return remove, [c for name, c in want.items() if name not in have]


def reconcile(
    runner: QmdRunner,
    desired: list[Collection],
    *,
    command_timeout_s: float,
    update_timeout_s: float,
) -> ReconcileReport:
    """Make qmd's collections exactly *desired*; failures of single adds are reported.

    A failing ``collection list`` raises (qmd is unusable); a failing ``add``
    of one collection is recorded and the others still go ahead.
    """
    run = runner.run(["collection", "list"], timeout_s=command_timeout_s)
    listed = parse_collection_list(run.stdout)
    yml = read_index_yml(runner.home).get("collections") or {}
    resolved: list[Listed] = []
    for item in listed:
        entry = yml.get(item.name) if isinstance(yml, dict) else None
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str):
            shown = runner.run(["collection", "show", item.name], timeout_s=command_timeout_s)
            path, _ = parse_collection_show(shown.stdout)
        resolved.append(Listed(item.name, item.pattern, Path(path) if path else None))
    remove, add = plan(desired, resolved)
    report = ReconcileReport(kept=[i.name for i in resolved if i.name not in remove])
    for name in remove:
        runner.run(["collection", "remove", name], timeout_s=command_timeout_s)
        report.removed.append(name)
    for c in add:
        if c.kind == "sessions":
            c.path.mkdir(parents=True, exist_ok=True)
        try:
            runner.run(
                ["collection", "add", os.fspath(c.path), "--name", c.name, "--mask", c.pattern],
                timeout_s=update_timeout_s,
            )
            report.added.append(c.name)
        except QmdError as exc:
            if exc.kind in ("timeout", "node", "missing"):
                raise
            report.errors.append(f"collection {c.name}: {exc}")
    return report
