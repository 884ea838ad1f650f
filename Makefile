# Developer targets (see CONTRIBUTING.md). `make check` is what CI runs through
# scripts/test.sh: lint + import layers + types + tests. Run scripts/setup.sh first.
PY ?= .venv/bin/python
BIN ?= .venv/bin

.PHONY: check test test-fast test-rest test-serial lint imports typecheck snapshots
.PHONY: bench bench-quality bench-locomo bench-cranfield bench-offtopic bench-calibrate
.PHONY: bench-cost bench-unit-codecs bench-attention bench-scale bench-scale-quick bench-sync bench-tui bench-mcp bench-mcp-http

check:
	bash scripts/test.sh

# Test tiers (CONTRIBUTING.md, tests/tiers.py): fast = no PostgreSQL, model, OpenClaw,
# process or slow test (about a minute, one process); rest = everything else. JOBS is
# the number of pytest-xdist workers; module-scoped fixtures stay on one worker.
JOBS ?= 3
XDIST = -n $(JOBS) --dist loadgroup

test:
	$(PY) -m pytest -q -p no:cacheprovider $(XDIST) $(ARGS)

test-fast:
	$(PY) -m pytest -q -p no:cacheprovider --tier fast $(ARGS)

test-rest:
	$(PY) -m pytest -q -p no:cacheprovider $(XDIST) --tier rest $(ARGS)

# one process, in collection order (to rule xdist out when a test misbehaves)
test-serial:
	$(PY) -m pytest -q -p no:cacheprovider $(ARGS)

lint:
	$(BIN)/ruff check engine tui tests

imports:
	$(BIN)/lint-imports

typecheck:
	$(BIN)/mypy

# Re-record the TUI snapshots after an intentional change of the look; review the
# SVG diff (tests/tui/__snapshots__) and say why in the commit message.
snapshots:
	$(PY) -m pytest -q -p no:cacheprovider tests/tui/test_snapshots.py --snapshot-update

# Benchmarks (see docs/benchmarks/README.md). Data: ../shared/bench (or $MEMDECK_BENCH_DATA);
# a benchmark whose data or model is absent prints SKIP and exits 0.

bench: bench-quality bench-locomo bench-cranfield bench-offtopic bench-scale bench-sync bench-mcp bench-mcp-http

# the default ranking against its targets: one table (LoCoMo, off-topic, Cranfield)
bench-quality:
	$(PY) -m tests.bench.quality

bench-locomo:
	$(PY) -m tests.bench.locomo

bench-cranfield:
	$(PY) -m tests.bench.cranfield

# Cranfield queries and nonsense strings against the LoCoMo workspaces
bench-offtopic:
	$(PY) -m tests.bench.offtopic

# the calibrated fusion's tuning directions (κ, tokenizer, line aggregation, ...) on LoCoMo 0-4 only
bench-calibrate:
	$(PY) -m tests.bench.calibrate

# what the default costs: index size by table, cold index time with and without line
# vectors, CLI wall times and import set (LoCoMo conv-5; a few minutes)
bench-cost:
	$(PY) -m tests.bench.cost

# unit vectors in 4 bits instead of 8: conv-5's index bytes and the LoCoMo ranking
# (after `make bench-quality`, whose cache it reads; about a minute)
bench-unit-codecs:
	$(PY) -m tests.bench.unit_codecs

# the local model's cold index with llama.cpp's fused attention and without
bench-attention:
	$(PY) -m tests.bench.attention

bench-scale:
	$(PY) -m tests.bench.scale

# 1k and 10k chunks only, no MiniLM indexing run (a few minutes)
bench-scale-quick:
	$(PY) -m tests.bench.scale --sizes 1000,10000 --no-model

# edit-to-searchable through the watcher (SyncService, 1.5 s debounce), 10k chunks
bench-sync:
	$(PY) -m tests.bench.bench_sync_latency

# the terminal app: start-up on the demo, keystroke → results painted at 10k chunks
bench-tui:
	$(PY) -m tests.bench.bench_tui $(ARGS)

# memory_search per call: stdio MCP (SDK client) vs a `memdeck search` process, 10k chunks
bench-mcp:
	$(PY) -m tests.bench.mcp_latency

# memdeck mcp --http: 100 concurrent SDK clients x 20 memory_search calls; exits 1 on any
# error, "database is locked" or unrecorded call
bench-mcp-http:
	$(PY) -m tests.bench.mcp_http_load
