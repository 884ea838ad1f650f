"""OpenClaw 2026.9.6 compatibility, in one place.

Each module reproduces one part of OpenClaw's memory engine, proven against the
installed npm package by ``tests/openclaw/``: its 2026.9 config layout
(:mod:`.config`), Markdown chunking (:mod:`.chunking`), session flattening
(:mod:`.sessions`), keyword extraction (:mod:`.keywords`), ranking
(:mod:`.profile`) and the runner that keeps the profile's index for an engine
(:mod:`.runner`). The modules sit at different layers of the engine (the config
reader uses :mod:`.config`; the ranking uses the index), so this package
re-exports nothing: import the module you need.

Naming rule: a function here that deliberately differs from memdeck's own
version of the same step is named ``openclaw_*``; a helper that is exactly the
same as memdeck's is imported from memdeck's module, never copied.
"""
