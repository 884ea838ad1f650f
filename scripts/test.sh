#!/usr/bin/env bash
# Set up (scripts/setup.sh, its Node part beside the rest), then the whole test suite
# in two tiers, the linter, the import-layer contracts (lint-imports,
# [tool.importlinter] in pyproject.toml) and the type checker (mypy, [tool.mypy]).
#
# 1. the fast tier (pytest --tier fast: no PostgreSQL, model, OpenClaw, process or slow
#    test; tests/tiers.py) in one process, its output shown as it runs, so a plain
#    failure shows within a minute or two; ruff, lint-imports and mypy beside it, printed
#    once it is done;
# 2. the rest of the suite (pytest --tier rest) on three pytest-xdist workers
#    (MEMDECK_TEST_JOBS), started at the same time: the fast tier is one process and
#    the checks take a quarter of its time, so a core stood idle for a minute and a
#    half; a third worker keeps both cores busy while another waits on a process or
#    a timer (the rest tier alone: 8.5 min on two workers, 7.5 on three, 2 cores);
#    the rest's output follows the fast tier's (from its log, then live).
# Every step always runs, so one slip never hides the other results; any failing fails.
# Arguments go to both pytest runs; a tier the arguments leave empty is no failure
# (pytest exit 5).
set -uo pipefail
cd "$(dirname "$0")/.."

xdist=(-n "${MEMDECK_TEST_JOBS:-3}" --dist loadgroup)
checks=$(mktemp -d)
rest_pid=
node_pid=
# an interrupted run does not leave the rest tier or the Node installs running
trap 'for p in $rest_pid $node_pid; do kill "$p" 2>/dev/null; done; rm -rf "$checks"' EXIT

# Set-up: qmd and OpenClaw (npm; only the rest tier uses them) install in the
# background while the Python part is set up and the fast tier and checks run; the
# rest tier starts once they are in (on a fresh clone the Node installs take about
# as long as pip, ~50 s, and the fast tier's minute would otherwise wait on them).
( bash scripts/setup.sh node >"$checks/node.out" 2>&1; echo $? >"$checks/node.rc" ) &
node_pid=$!
bash scripts/setup.sh python || exit $?

(
  .venv/bin/ruff check engine tui tests >"$checks/ruff.out" 2>&1
  echo $? >"$checks/ruff.rc"
  .venv/bin/lint-imports >"$checks/imports.out" 2>&1
  echo $? >"$checks/imports.rc"
  .venv/bin/mypy >"$checks/mypy.out" 2>&1
  echo $? >"$checks/mypy.rc"
) &
checks_pid=$!

# pytest rewrites the asserts of each test module it imports and keeps the result
# beside the module, unless PYTHONDONTWRITEBYTECODE is set (CI containers set it):
# then each of the four pytest processes below rewrote all ~140 modules again, about
# 5 s of CPU apiece. One collection writes them first (beside the checks above), and
# the tiers read them. The engine's own bytecode: tests/conftest.py.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m pytest -q -p no:cacheprovider --collect-only "$@" >/dev/null 2>&1

# the rest tier starts beside the fast tier once qmd and OpenClaw are installed; its
# output waits in a log
(
  while [ ! -f "$checks/node.rc" ]; do sleep 0.5; done
  cat "$checks/node.out"
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "${xdist[@]}" --tier rest "$@"
) >"$checks/rest.out" 2>&1 &
rest_pid=$!

echo "memdeck tests: fast tier (the rest runs beside it; its output follows)" >&2
.venv/bin/python -m pytest -q -p no:cacheprovider --tier fast "$@"
fast=$?

wait "$checks_pid"
for step in ruff imports mypy; do
  cat "$checks/$step.out"
done
lint=$(cat "$checks/ruff.rc")
imports=$(cat "$checks/imports.rc")
types=$(cat "$checks/mypy.rc")

echo "memdeck tests: the rest (pg, model, openclaw, subprocess, slow)" >&2
# what it printed so far, then live until it ends
tail -n +1 -f --pid="$rest_pid" "$checks/rest.out"
wait "$rest_pid"
rest=$?
rest_pid=

# exit 5 = no tests collected: fine for one tier, not for both
if [ "$fast" -eq 5 ] && [ "$rest" -eq 5 ]; then
  tests=5
elif { [ "$fast" -eq 0 ] || [ "$fast" -eq 5 ]; } && { [ "$rest" -eq 0 ] || [ "$rest" -eq 5 ]; }; then
  tests=0
else
  tests=1
fi
echo "memdeck tests: pytest exit $tests (fast tier $fast, rest $rest), ruff exit $lint," \
  "lint-imports exit $imports, mypy exit $types" >&2
node=$(cat "$checks/node.rc")
[ "$node" -eq 0 ] || echo "memdeck tests: installing qmd or OpenClaw failed (exit $node; its log is above)" >&2
[ "$node" -eq 0 ] && [ "$tests" -eq 0 ] && [ "$lint" -eq 0 ] && [ "$imports" -eq 0 ] && [ "$types" -eq 0 ]
