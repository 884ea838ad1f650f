"""What to watch for index-relevant file changes, and the watcher that does it.

Directories are watched one by one, non-recursively, from a :class:`WatchPlan`
rebuilt whenever a directory appears or vanishes. That is how symlinked
directories and ignored trees (``.git``, ``node_modules``…) are never watched —
a recursive OS watch would descend into both — and how watching survives
``memory/`` being created after start, deleted or renamed. A cheap poll of the
few anchor paths (workspace root, ``memory/``, extra paths, transcripts folder,
extra trees) catches what no event can report, such as the workspace root itself
appearing.

:class:`DirectoryWatcher` runs that loop and reports "something relevant
changed" to a callback; deciding *when* to act on it is
:mod:`engine.index.schedule`'s job. The sync service uses both for the builtin
index, and covers the qmd sidecar's collection folders in the same plan, so one
watcher serves both indexes.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import watchfiles

from engine.workspace.files import IGNORED_DIRS, MEMORY_DIR, ROOT_MEMORY_FILES, Workspace

#: watchfiles' own batching, kept short: the real debounce is the schedule's.
_RAW_DEBOUNCE_MS = 200
_RAW_STEP_MS = 30
#: How often the watch loop returns to Python without changes (stop, plan checks).
_TICK_MS = 200

_MEDIA_SUFFIXES = frozenset(
    [
        ".jpg",
        ".jpeg",
        ".png",
        ".webp",
        ".gif",
        ".heic",
        ".heif",
        ".mp3",
        ".wav",
        ".ogg",
        ".opus",
        ".m4a",
        ".aac",
        ".flac",
    ]
)


def _lstat_kind(path: Path) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode))


def _real_dirs(top: Path) -> list[Path]:
    """``top`` and every directory below it, never through a symlink or an ignored dir."""
    out: list[Path] = []
    for dirpath, dirnames, _ in os.walk(top, followlinks=False):
        out.append(Path(dirpath))
        dirnames[:] = [
            d for d in dirnames if d not in IGNORED_DIRS and _lstat_kind(Path(dirpath) / d) == "dir"
        ]
    return out


def _no_symlink_between(path: Path, top: Path) -> bool:
    """True when neither ``path`` nor a parent of it below ``top`` is a symlink."""
    if _lstat_kind(path) == "link":
        return False
    for parent in path.parents:
        if parent == top or not parent.is_relative_to(top):
            break
        if _lstat_kind(parent) == "link":
            return False
    return True


@dataclass(frozen=True)
class WatchPlan:
    """The directories to watch and how to tell which of their changes matter."""

    dirs: frozenset[Path]  # watched non-recursively
    trees: tuple[Path, ...]  # memory/ and extra dirs: matching files anywhere below count
    files: frozenset[Path]  # single files that count (MEMORY.md, memory.md, extra files)
    roots: frozenset[Path]  # paths whose appearance/disappearance changes the plan
    sessions: Path | None  # transcripts folder (``*.jsonl``), when session memory is on
    media: bool  # multimodal: media files in extra dirs count too
    signature: tuple[object, ...]
    anchors: tuple[Path, ...] = ()  # the paths ``signature`` identifies

    def stale(self) -> bool:
        """True when an anchor appeared, vanished or was replaced since planning."""
        return tuple(_identity(p) for p in self.anchors) != self.signature

    def classify(self, change: watchfiles.Change, path: str) -> tuple[bool, bool]:
        """(does this change affect the index?, must the plan be rebuilt?)."""
        p = Path(path)
        if p in self.dirs:
            moved = change != watchfiles.Change.modified
            return moved, moved
        if p in self.files:
            return True, False
        if p in self.roots:
            return True, True
        parent = p.parent
        if parent not in self.dirs:
            return False, False
        name = p.name
        if self.sessions is not None and parent == self.sessions:
            return name.endswith(".jsonl"), False
        tree = next((t for t in self.trees if parent == t or parent.is_relative_to(t)), None)
        if tree is None or name in IGNORED_DIRS:
            return False, False
        kind = _lstat_kind(p)
        if kind == "link":
            return False, False
        if kind == "dir":
            return True, True
        lower = name.lower()
        if lower.endswith(".md"):
            return True, False
        if self.media and tree != self.trees[0] and Path(lower).suffix in _MEDIA_SUFFIXES:
            return True, False
        return False, False


def _anchors(
    workspace: Workspace, transcripts: Path | None, trees: Sequence[Path] = ()
) -> list[Path]:
    anchors = [workspace.root, workspace.root / MEMORY_DIR, *workspace.extra_paths, *trees]
    if transcripts is not None:
        anchors.append(transcripts)
    return anchors


def plan_signature(
    workspace: Workspace, transcripts: Path | None, trees: Sequence[Path] = ()
) -> tuple[object, ...]:
    """Identity (device, inode, type) of each anchor path: changes when one appears,
    vanishes or is replaced, which no event from inside it can tell us."""
    return tuple(_identity(p) for p in _anchors(workspace, transcripts, trees))


def build_watch_plan(
    workspace: Workspace,
    transcripts: Path | None = None,
    *,
    media: bool = False,
    more_trees: Sequence[Path] = (),
) -> WatchPlan:
    """Which directories to watch right now, given what exists on disk.

    ``more_trees`` are more folders whose Markdown files count, outside the workspace's
    own (the qmd sidecar's ``memory.qmd.paths`` collections); like extra paths
    they are watched folder by folder, never through a symlink.
    """
    signature = plan_signature(workspace, transcripts, more_trees)
    root = workspace.root
    dirs: set[Path] = set()
    trees: list[Path] = []
    files: set[Path] = {root / name for name in ROOT_MEMORY_FILES}
    roots: set[Path] = {root / MEMORY_DIR}
    if _lstat_kind(root) == "dir":
        dirs.add(root)
    mem = root / MEMORY_DIR
    trees.append(mem)
    if _lstat_kind(mem) == "dir":
        dirs.update(_real_dirs(mem))
    for extra in workspace.extra_paths:
        roots.add(extra)
        kind = _lstat_kind(extra)
        if kind is None or not _no_symlink_between(extra, root):
            continue
        if kind == "dir":
            trees.append(extra)
            dirs.update(_real_dirs(extra))
        elif kind == "file":
            files.add(extra)
            if _lstat_kind(extra.parent) == "dir":
                dirs.add(extra.parent)
    for tree in more_trees:
        roots.add(tree)
        if _lstat_kind(tree) == "dir" and not any(tree.is_relative_to(t) for t in trees):
            trees.append(tree)
            dirs.update(_real_dirs(tree))
    if transcripts is not None and _lstat_kind(transcripts) == "dir":
        dirs.add(transcripts)
        roots.add(transcripts)
    return WatchPlan(
        dirs=frozenset(dirs),
        trees=tuple(trees),
        files=frozenset(files),
        roots=frozenset(roots),
        sessions=transcripts,
        media=media,
        signature=signature,
        anchors=tuple(_anchors(workspace, transcripts, more_trees)),
    )


def _classify_all(
    plan: WatchPlan, changes: Iterable[tuple[watchfiles.Change, str]]
) -> tuple[bool, bool, frozenset[Path] | None]:
    """(relevant?, re-plan?, the changed files — None when a folder changed, so
    that only a full listing can tell which files did)."""
    relevant = replan = False
    files: set[Path] | None = set()
    for change, path in changes:
        r, p = plan.classify(change, path)
        relevant = relevant or r
        replan = replan or p
        if r and files is not None:
            if p or Path(path) in plan.dirs:
                files = None
            else:
                files.add(Path(path))
    return relevant, replan, (None if files is None else frozenset(files))


#: ``(watching, watched directory count, error)`` as the watcher's state changes.
WatchStateListener = Callable[[bool, int, str | None], None]


class DirectoryWatcher:
    """Watches the folders of a plan until ``stop`` is set; call :meth:`run` on a thread.

    ``on_change`` is called (on the watcher's thread) for every batch of relevant
    changes with the set of files that changed (None when a folder appeared,
    vanished or moved: then no list of files is complete), and with None once
    after each re-plan, since changes between the old watch's
    end and the new one's start have no event. ``armed`` is set once the OS
    watches are in place (or nothing exists to watch yet): changes from then on
    are seen. A watch backend failure (inotify limits, permissions) falls back to
    polling and is reported through ``on_state``.
    """

    def __init__(
        self,
        plan: Callable[[], WatchPlan],
        on_change: Callable[[frozenset[Path] | None], None],
        *,
        stop: threading.Event,
        armed: threading.Event | None = None,
        on_state: WatchStateListener | None = None,
        poll_interval: float = 1.0,
        force_polling: bool | None = None,
    ):
        self.plan = plan
        self.on_change = on_change
        self.stop = stop
        self.armed = armed if armed is not None else threading.Event()
        self.on_state = on_state or (lambda watching, dirs, error: None)
        self.poll_interval = poll_interval
        self.force_polling = force_polling
        self.error: str | None = None

    def run(self) -> None:
        first = True
        polling = self.force_polling
        try:
            while not self.stop.is_set():
                try:
                    plan = self.plan()
                except OSError as exc:
                    self._state(False, 0, f"cannot list watched folders: {exc}")
                    self.stop.wait(self.poll_interval)
                    continue
                if not first:
                    # Changes between the old watch's end and the new one's start have
                    # no event: the run this schedules rescans them.
                    self.on_change(None)
                first = False
                if not plan.dirs:
                    self._state(False, 0, None)
                    self.armed.set()  # nothing exists to watch yet; the poll covers it
                    self._wait_until_stale(plan)
                    continue
                try:
                    self._state(True, len(plan.dirs), None)
                    self._watch(plan, polling)
                except FileNotFoundError:
                    pass  # a folder vanished between planning and watching: plan again
                except Exception as exc:  # inotify limits, permissions, backend errors
                    error = f"{type(exc).__name__}: {exc}"
                    if not polling:
                        polling = True
                        error += " (falling back to polling)"
                    self._state(False, 0, error)
                    self.stop.wait(self.poll_interval)
        finally:
            self.armed.set()
            self._state(False, 0, self.error)

    def _state(self, watching: bool, dirs: int, error: str | None) -> None:
        self.error = error
        self.on_state(watching, dirs, error)

    def _wait_until_stale(self, plan: WatchPlan) -> None:
        while not self.stop.wait(self.poll_interval):
            if plan.stale():
                return

    def _watch(self, plan: WatchPlan, polling: bool | None) -> None:
        next_check = time.monotonic() + self.poll_interval
        for changes in watchfiles.watch(
            *sorted(plan.dirs),
            watch_filter=None,
            debounce=_RAW_DEBOUNCE_MS,
            step=_RAW_STEP_MS,
            stop_event=self.stop,
            rust_timeout=_TICK_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            recursive=False,
            force_polling=polling,
            ignore_permission_denied=True,
        ):
            self.armed.set()  # the first yield comes after the OS watches are in place
            relevant, replan, files = _classify_all(plan, changes)
            if relevant:
                self.on_change(files)
            if replan or self.stop.is_set():
                return
            now = time.monotonic()
            if now >= next_check:
                next_check = now + self.poll_interval
                if plan.stale():
                    return
