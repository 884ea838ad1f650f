"""Where OpenClaw and memdeck keep their files on disk.

Every function takes the environment as an argument instead of reading
``os.environ`` behind the caller's back, so tests (and a CLI that was handed a
different environment) resolve paths without touching the real home directory.
``~`` is expanded against ``env["HOME"]`` for the same reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

STATE_DIR_ENV = "OPENCLAW_STATE_DIR"
CONFIG_PATH_ENV = "OPENCLAW_CONFIG_PATH"
MEMDECK_HOME_ENV = "MEMDECK_HOME"
CONFIG_FILENAME = "openclaw.json"


def env_value(env: Mapping[str, str], name: str) -> str | None:
    """An environment variable, treating a blank value as unset (as shells often leave them)."""
    value = env.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def home_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The user's home: ``$HOME`` from *env* when set, so a test's env dict is honoured."""
    home = env_value(env, "HOME")
    return Path(home) if home else Path.home()


def expand_user(path: str | Path, env: Mapping[str, str] = os.environ) -> Path:
    """Expand a leading ``~`` (or ``~/``) against *env*'s home; ``~user`` uses the system."""
    text = str(path)
    if text == "~":
        return home_dir(env)
    if text.startswith("~/") or text.startswith("~" + os.sep):
        return home_dir(env) / text[2:]
    if text.startswith("~"):
        return Path(os.path.expanduser(text))
    return Path(text)


def _absolute(path: Path) -> Path:
    """Absolute and lexically normalised, without resolving symlinks the user chose."""
    return Path(os.path.abspath(path))


def state_dir(env: Mapping[str, str] = os.environ) -> Path:
    """OpenClaw's state directory.

    ``$OPENCLAW_STATE_DIR`` wins. Otherwise ``~/.openclaw``, except that an
    install from before the rename keeps working: when only ``~/.moltbot`` exists
    we use it, exactly as OpenClaw itself does.
    """
    override = env_value(env, STATE_DIR_ENV)
    if override:
        return _absolute(expand_user(override, env))
    home = home_dir(env)
    current = home / ".openclaw"
    legacy = home / ".moltbot"
    if legacy.is_dir() and not current.exists():
        return legacy
    return current


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    """The ``openclaw.json`` to read: ``$OPENCLAW_CONFIG_PATH``, else the state dir's."""
    override = env_value(env, CONFIG_PATH_ENV)
    if override:
        return _absolute(expand_user(override, env))
    return state_dir(env) / CONFIG_FILENAME


def memdeck_home(env: Mapping[str, str] = os.environ) -> Path:
    """memdeck's own settings directory (theme, keymap, layout).

    Kept apart from ``openclaw.json`` so memdeck never writes keys OpenClaw's
    schema would reject. ``$MEMDECK_HOME``, else ``$XDG_CONFIG_HOME/memdeck``,
    else ``~/.config/memdeck``.
    """
    override = env_value(env, MEMDECK_HOME_ENV)
    if override:
        return _absolute(expand_user(override, env))
    xdg = env_value(env, "XDG_CONFIG_HOME")
    if xdg:
        return _absolute(expand_user(xdg, env)) / "memdeck"
    return home_dir(env) / ".config" / "memdeck"


def sessions_dir(state: Path, agent_id: str) -> Path:
    """Where an agent's session transcripts (``*.jsonl`` + ``sessions.json``) live."""
    return state / "agents" / agent_id / "sessions"


def data_dir(env: Mapping[str, str] = os.environ) -> Path:
    """memdeck's data directory (imported models, downloaded GGUFs, the demo workspace).

    ``$MEMDECK_DATA_DIR``, else ``$XDG_DATA_HOME/memdeck``, else
    ``~/.local/share/memdeck``: data that can be rebuilt, kept out of the
    settings directory so a settings backup stays small.
    """
    override = env_value(env, "MEMDECK_DATA_DIR")
    if override:
        return _absolute(expand_user(override, env))
    xdg = env_value(env, "XDG_DATA_HOME")
    if xdg:
        return _absolute(expand_user(xdg, env)) / "memdeck"
    return home_dir(env) / ".local" / "share" / "memdeck"
