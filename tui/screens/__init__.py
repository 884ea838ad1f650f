"""Modal screens: help, confirmations, the external-change dialog, append entry."""
