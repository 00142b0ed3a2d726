"""Adapters for agent frameworks, each behind its own extra."""
