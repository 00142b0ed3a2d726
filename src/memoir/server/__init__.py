"""The HTTP API (``memoir serve``): a thin adapter over :class:`memoir.app.Memoir`.

``create_app(memoir)`` (or ``create_app(settings=…)``) builds the FastAPI application;
``memoir.cli.cmd_serve`` runs it under uvicorn. Every route is scoped to the user its
Bearer key belongs to (:mod:`memoir.server.auth`); every error has one shape
(:mod:`memoir.server.plumbing`).
"""

from memoir.server.app import create_app

__all__ = ["create_app"]
