"""Copy the snapshot SVGs into docs/screenshots/ for the README.

The README pictures are the snapshot tests' own screenshots (so they can never
drift from what the tests pin). Run after ``pytest tests/tui/test_snapshots.py
--snapshot-update``: ``.venv/bin/python tests/tui/screenshots.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__" / "test_snapshots"
OUT = REPO / "docs" / "screenshots"
SHORT = {"memdeck-dark": "dark", "memdeck-light": "light"}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    copied = 0
    for svg in sorted(SNAPSHOTS.glob("test_screen[[]*[]].svg")):
        inner = svg.stem[len("test_screen[") : -1]  # e.g. "search-memdeck-dark"
        for theme, short in SHORT.items():
            if inner.endswith("-" + theme):
                screen = inner[: -len(theme) - 1]
                shutil.copyfile(svg, OUT / f"{screen}-{short}.svg")
                copied += 1
    print(f"copied {copied} screenshots to {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
