"""The API's routes, one module per resource; :data:`ROUTERS` lists them in order."""

from memoir.server.routes import compact, health, memories, search, sessions, summary, usage

ROUTERS = (
    health.router,
    sessions.router,
    search.router,
    compact.router,
    summary.router,
    memories.router,
    usage.router,
)

__all__ = ["ROUTERS"]
