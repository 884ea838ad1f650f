"""memdeck's UI-free engine: index, hybrid search with explanations, tools, CLI.

Never imports Textual or Rich (``tests/engine/test_import_hygiene.py`` checks).
"""

__version__ = "0.1.0"
