"""The QMD backend: memdeck driving the ``qmd`` CLI, with the builtin index as fallback.

``backend.QmdBackend`` is what the engine uses; ``runner`` runs qmd (own home,
timeouts, process-group kill), ``collections`` reconciles qmd's collections,
``results`` parses its JSON, ``scope`` decides who may see results,
``session_export`` writes transcripts as Markdown, ``config`` reads
``memory.qmd.*``. See docs/architecture.md "QMD sidecar".
"""
