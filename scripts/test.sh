#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the whole test suite, the linter, the import-layer
# contracts (lint-imports, [tool.importlinter] in pyproject.toml) and the type checker
# (mypy, [tool.mypy]). All four always run, so one slip never hides the other results;
# any failing fails. Arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit $?
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
tests=$?
.venv/bin/ruff check engine tui tests
lint=$?
.venv/bin/lint-imports
imports=$?
.venv/bin/mypy
types=$?
echo "memdeck tests: pytest exit $tests, ruff exit $lint, lint-imports exit $imports, mypy exit $types" >&2
[ "$tests" -eq 0 ] && [ "$lint" -eq 0 ] && [ "$imports" -eq 0 ] && [ "$types" -eq 0 ]
