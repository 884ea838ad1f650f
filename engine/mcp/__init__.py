"""``memdeck mcp``: the memory tools served over the Model Context Protocol.

``schemas`` holds what a model reads (tool names, descriptions, argument
schemas); ``calls`` turns a validated call into an engine call; ``server``
wires both into the SDK's low-level server with one long-lived engine;
``http`` adds the streamable-HTTP guards; ``settings`` reads the ``mcp``
section of memdeck's own settings file. The CLI entry is ``engine.cli.mcp_command``.
"""
