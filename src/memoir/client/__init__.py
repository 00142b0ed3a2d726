"""A Python client for ``memoir serve``: :class:`Client` (sync) and :class:`AsyncClient`
(asyncio), on httpx.

One method per operation of the API, named as the API names its parameters; each returns
a frozen value of :mod:`memoir.client.values`. An error answer is raised as an
:class:`ApiError` that is also the :mod:`memoir.errors` class the server mapped it from
(``except NotFound`` works for the library and the service alike). ``iter_sessions``,
``iter_events`` and ``iter_exchanges`` follow the keyset cursors page by page::

    from memoir.client import Client

    with Client("http://127.0.0.1:8420", api_key) as memoir:
        memoir.create_session("chat-1")
        memoir.append("chat-1", [{"role": "user", "content": "hello"}])
        for hit in memoir.search("hello"):
            print(hit.exchange_id, hit.snippet)

``import memoir`` does not import this module (nor httpx); docs/client.md is the guide.
"""

from __future__ import annotations

from memoir.errors import install_hint

try:
    import httpx  # noqa: F401
except ImportError as exc:  # pragma: no cover - the client extra installs it
    raise ModuleNotFoundError(
        f"memoir.client needs httpx, which is not installed: {install_hint('client')}",
        name="httpx",
    ) from exc

from memoir.client.http import AsyncClient, Client
from memoir.client.values import (
    ERRORS,
    ApiError,
    Appended,
    Compaction,
    Event,
    Exchange,
    Hit,
    Job,
    Memory,
    MemoryContext,
    Page,
    Readiness,
    Remembered,
    Session,
    Summary,
    Usage,
)

__all__ = [
    "ERRORS",
    "ApiError",
    "Appended",
    "AsyncClient",
    "Client",
    "Compaction",
    "Event",
    "Exchange",
    "Hit",
    "Job",
    "Memory",
    "MemoryContext",
    "Page",
    "Readiness",
    "Remembered",
    "Session",
    "Summary",
    "Usage",
]
