#!/usr/bin/env bash
# Set up (scripts/setup.sh), create the demo workspace and open the app on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/memdeck demo "$@"
