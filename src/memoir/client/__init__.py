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

The clients send the calls of :mod:`memoir.client.operations` with httpx, read the answer,
and raise an error answer as :func:`memoir.client.values.error_for` maps it: a method per
operation, the same names and parameters on both; the ``iter_*`` methods follow
``next_cursor`` from page to page.

``import memoir`` does not import this module (nor httpx); docs/client.md is the guide.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

from memoir.errors import install_hint

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the client extra installs it
    raise ModuleNotFoundError(
        f"memoir.client needs httpx, which is not installed: {install_hint('client')}",
        name="httpx",
    ) from exc

from memoir.client import operations as ops
from memoir.client.operations import Call, Order, When
from memoir.client.values import (
    ERRORS,
    ApiError,
    ApiUnavailable,
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
    UsageReport,
    error_for,
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
    "UsageReport",
]

P = ParamSpec("P")
T = TypeVar("T")
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "memoir-client"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _read(call: Call[T], response: httpx.Response) -> T:
    """The value of a success, else the error it maps to (raised)."""
    try:
        doc: Any = response.json()
    except ValueError:
        doc = None
    if response.is_success and isinstance(doc, dict):
        return call.read(doc)
    if response.is_success:
        raise ApiError(
            f"the service answered {response.status_code} without a JSON document",
            status=response.status_code,
            code="not_json",
        )
    raise error_for(response.status_code, doc, response.headers.get("x-request-id"))


def _unreachable(base_url: str, exc: httpx.TransportError) -> ApiUnavailable:
    return ApiUnavailable(
        f"cannot reach memoir serve at {base_url}: {type(exc).__name__}: {exc}",
        status=0,
        code="unreachable",
    )


def _as_method(build: Callable[..., Any], wrapper: Callable[..., Any]) -> None:
    """Give ``wrapper`` the builder's name, docs and signature (with ``self``)."""
    wrapper.__name__ = wrapper.__qualname__ = build.__name__
    wrapper.__doc__ = build.__doc__
    signature = inspect.signature(build)
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[this, *signature.parameters.values()],
        return_annotation=signature.return_annotation.removeprefix("Call[").removesuffix("]"),
    )


def _sync(build: Callable[P, Call[T]]) -> Callable[Concatenate[Client, P], T]:
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(build(*args, **kwargs))

    _as_method(build, method)
    return method


def _async(
    build: Callable[P, Call[T]],
) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(build(*args, **kwargs))

    _as_method(build, method)
    return method


class Client:
    """A synchronous client of ``memoir serve`` at ``base_url``, as the user of
    ``api_key``. Close it (or use it as a context manager) to free its connections.
    ``transport``: an httpx transport (tests pass one)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=_headers(api_key),
            timeout=timeout,
            transport=transport,
        )

    def send(self, call: Call[T]) -> T:
        """Send one call; its value, or the error answer raised."""
        try:
            response = self._http.request(
                call.method, call.path, params=call.params, json=call.body
            )
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        return _read(call, response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    health = _sync(ops.health)
    readiness = _sync(ops.readiness)
    create_session = _sync(ops.create_session)
    sessions_page = _sync(ops.sessions_page)
    session = _sync(ops.session)
    archive_session = _sync(ops.archive_session)
    append = _sync(ops.append)
    events_page = _sync(ops.events_page)
    exchanges_page = _sync(ops.exchanges_page)
    search = _sync(ops.search)
    compact = _sync(ops.compact)
    summary = _sync(ops.summary)
    regenerate_summary = _sync(ops.regenerate_summary)
    memories = _sync(ops.memories)
    memory_context = _sync(ops.memory_context)
    memory = _sync(ops.memory)
    forget_memory = _sync(ops.forget_memory)
    forget_memories = _sync(ops.forget_memories)
    remember = _sync(ops.remember)
    usage = _sync(ops.usage)

    def _pages(self, page: Callable[[str | None], Page[T]]) -> Iterator[T]:
        cursor: str | None = None
        while True:
            got = page(cursor)
            yield from got.items
            if got.next_cursor is None:
                return
            cursor = got.next_cursor

    def iter_sessions(
        self,
        *,
        limit: int | None = None,
        order: Order | None = None,
        project: str | None = None,
        harness: str | None = None,
        after: When | None = None,
        before: When | None = None,
    ) -> Iterator[Session]:
        """Every session of yours (pages of ``limit``), following the cursors."""
        return self._pages(
            lambda c: self.sessions_page(
                cursor=c,
                limit=limit,
                order=order,
                project=project,
                harness=harness,
                after=after,
                before=before,
            )
        )

    def iter_events(
        self,
        session_id: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        reveal: bool | None = None,
    ) -> Iterator[Event]:
        return self._pages(
            lambda c: self.events_page(
                session_id, after=after, cursor=c, limit=limit, reveal=reveal
            )
        )

    def iter_exchanges(
        self,
        session_id: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        reveal: bool | None = None,
    ) -> Iterator[Exchange]:
        return self._pages(
            lambda c: self.exchanges_page(
                session_id, after=after, cursor=c, limit=limit, reveal=reveal
            )
        )


class AsyncClient:
    """:class:`Client` for asyncio: the same methods, awaited; ``iter_*`` are async
    iterators. Safe to share between tasks (one httpx connection pool)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=_headers(api_key),
            timeout=timeout,
            transport=transport,
        )

    async def send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method, call.path, params=call.params, json=call.body
            )
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        return _read(call, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    health = _async(ops.health)
    readiness = _async(ops.readiness)
    create_session = _async(ops.create_session)
    sessions_page = _async(ops.sessions_page)
    session = _async(ops.session)
    archive_session = _async(ops.archive_session)
    append = _async(ops.append)
    events_page = _async(ops.events_page)
    exchanges_page = _async(ops.exchanges_page)
    search = _async(ops.search)
    compact = _async(ops.compact)
    summary = _async(ops.summary)
    regenerate_summary = _async(ops.regenerate_summary)
    memories = _async(ops.memories)
    memory_context = _async(ops.memory_context)
    memory = _async(ops.memory)
    forget_memory = _async(ops.forget_memory)
    forget_memories = _async(ops.forget_memories)
    remember = _async(ops.remember)
    usage = _async(ops.usage)

    async def _pages(
        self, page: Callable[[str | None], Coroutine[Any, Any, Page[T]]]
    ) -> AsyncIterator[T]:
        cursor: str | None = None
        while True:
            got = await page(cursor)
            for item in got.items:
                yield item
            if got.next_cursor is None:
                return
            cursor = got.next_cursor

    def iter_sessions(
        self,
        *,
        limit: int | None = None,
        order: Order | None = None,
        project: str | None = None,
        harness: str | None = None,
        after: When | None = None,
        before: When | None = None,
    ) -> AsyncIterator[Session]:
        return self._pages(
            lambda c: self.sessions_page(
                cursor=c,
                limit=limit,
                order=order,
                project=project,
                harness=harness,
                after=after,
                before=before,
            )
        )

    def iter_events(
        self,
        session_id: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        reveal: bool | None = None,
    ) -> AsyncIterator[Event]:
        return self._pages(
            lambda c: self.events_page(
                session_id, after=after, cursor=c, limit=limit, reveal=reveal
            )
        )

    def iter_exchanges(
        self,
        session_id: str,
        *,
        after: int | None = None,
        limit: int | None = None,
        reveal: bool | None = None,
    ) -> AsyncIterator[Exchange]:
        return self._pages(
            lambda c: self.exchanges_page(
                session_id, after=after, cursor=c, limit=limit, reveal=reveal
            )
        )
