"""The ``memdeck`` command line (``python -m engine.cli``)."""
