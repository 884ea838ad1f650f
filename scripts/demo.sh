#!/usr/bin/env bash
# Set up what the app needs (scripts/setup.sh python: .venv and the offline MiniLM
# model; not the Node installs, which only the optional qmd backend and the tests
# use), create the demo workspace and open the app on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh python
exec .venv/bin/memdeck demo "$@"
