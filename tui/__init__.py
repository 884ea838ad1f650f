"""memdeck's terminal app (Textual). The engine never imports this package."""
