"""Configuration: reading ``openclaw.json`` (JSON5) into typed settings, state paths."""
