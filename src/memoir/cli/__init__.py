"""The `memoir` command line: a thin adapter over the library."""

from memoir.cli.app import app, main

__all__ = ["app", "main"]
