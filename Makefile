# Benchmarks (see README "Benchmarks"). Data: ../shared/bench (or $MEMDECK_BENCH_DATA);
# a benchmark whose data or model is absent prints SKIP and exits 0.
PY ?= .venv/bin/python

.PHONY: bench bench-quality bench-locomo bench-cranfield bench-scale bench-scale-quick bench-sync

bench: bench-quality bench-scale bench-sync

bench-quality: bench-locomo bench-cranfield

bench-locomo:
	$(PY) -m tests.bench.locomo

bench-cranfield:
	$(PY) -m tests.bench.cranfield

bench-scale:
	$(PY) -m tests.bench.scale

# 1k and 10k chunks only, no MiniLM indexing run (a few minutes)
bench-scale-quick:
	$(PY) -m tests.bench.scale --sizes 1000,10000 --no-model

# edit-to-searchable through the watcher (SyncService, 1.5 s debounce), 10k chunks
bench-sync:
	$(PY) -m tests.bench.bench_sync_latency
