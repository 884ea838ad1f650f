#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite plus the linter.
# Both always run, so a lint slip never hides the test results; either failing fails.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit $?
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
tests=$?
.venv/bin/ruff check engine tui tests
lint=$?
echo "memdeck tests: pytest exit $tests, ruff exit $lint" >&2
[ "$tests" -eq 0 ] && [ "$lint" -eq 0 ]
