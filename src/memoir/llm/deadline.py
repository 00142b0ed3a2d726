"""A whole-call time limit for the SDKs' HTTP clients.

The SDKs' timeout bounds each phase of a request (connect, each read), not the whole of it:
a server that trickles its answer a byte at a time (or a proxy sending keep-alive
whitespace) can hold a call for as long as it likes. :class:`DeadlineTransport` wraps the
SDK's own transport and checks a deadline, set when the request starts, between the chunks
of the answer as they arrive: past it, the read stops with a read timeout in the calling
thread itself (the SDK reports it as its timeout error), and the connection is closed. No
thread is left behind; a server that says nothing at all is stopped by the per-read timeout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx2

__all__ = ["DeadlineTransport", "deadline_client"]


class _DeadlineStream(httpx2.SyncByteStream):
    def __init__(self, inner: Any, deadline: float, request: httpx2.Request) -> None:
        self._inner = inner
        self._deadline = deadline
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise httpx2.ReadTimeout(
                    "the answer took longer than the call may", request=self._request
                )
            yield chunk

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()


class DeadlineTransport(httpx2.BaseTransport):
    """``inner`` with every answer cut ``total_s`` seconds after its request began."""

    def __init__(self, total_s: float, inner: httpx2.BaseTransport | None = None) -> None:
        self.total_s = total_s
        self.inner = inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = time.monotonic() + self.total_s
        response = self.inner.handle_request(request)
        response.stream = _DeadlineStream(response.stream, deadline, request)
        return response

    def close(self) -> None:
        self.inner.close()


def deadline_client(sdk: Any, total_s: float | None) -> Any:
    """The SDK's own default HTTP client (its limits and redirects), its transport bounded
    to ``total_s`` seconds a call; None (the SDK builds its own) when there is no limit."""
    if total_s is None or total_s <= 0:
        return None
    return sdk.DefaultHttpxClient(transport=DeadlineTransport(total_s))
