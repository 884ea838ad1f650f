#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite plus the linter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check engine tui tests
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
