"""The search pipeline and every score formula it applies."""
