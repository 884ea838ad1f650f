"""The index: tokens and chunking, the SQLite store (FTS5 + vectors), indexing and sync."""
