"""The Markdown workspace: which files are memory, how they are read and written, their dates."""
