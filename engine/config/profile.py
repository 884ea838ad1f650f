"""Which ranking profile memdeck uses: its own (``memdeck``) or OpenClaw 2026.9.6's.

The profile is memdeck's choice, not the agent's, so it is not read from
``openclaw.json`` (OpenClaw 2026.9 refuses unknown keys there). In order:
``--profile`` on the command line, ``$MEMDECK_PROFILE``, ``"profile"`` in
memdeck's own ``settings.json``, else ``memdeck``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from engine.config.memdeck_settings import load_memdeck_settings

Profile = Literal["memdeck", "openclaw"]
PROFILES: tuple[Profile, ...] = ("memdeck", "openclaw")
PROFILE_ENV = "MEMDECK_PROFILE"


class ProfileError(ValueError):
    """An unknown profile name, with where it came from."""


def _check(name: str, where: str) -> Profile:
    value = name.strip().lower()
    if value not in PROFILES:
        raise ProfileError(f'{where}: unknown profile "{name}" (expected memdeck or openclaw)')
    return value  # narrowed to Profile by the membership test above


def resolve_profile(
    explicit: str | None = None, env: Mapping[str, str] = os.environ
) -> tuple[Profile, str]:
    """(profile, where it came from) — see the module docstring for the order."""
    if explicit:
        return _check(explicit, "--profile"), "--profile"
    if env.get(PROFILE_ENV, "").strip():
        return _check(env[PROFILE_ENV], f"${PROFILE_ENV}"), f"${PROFILE_ENV}"
    settings = load_memdeck_settings(env)  # a broken file: the app lists its problems
    for section, error in settings.problems:
        if section == "profile":  # a value that is not a name: said, never ignored
            raise ProfileError(str(error))
    if settings.profile is not None:
        return _check(settings.profile, f"{settings.path}: profile"), str(settings.path)
    return "memdeck", "default"
