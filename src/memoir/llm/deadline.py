"""A whole-call time limit for the SDKs' HTTP clients.

The SDKs' timeout bounds each phase of a request (connect, each read), not the whole of it:
a server that trickles its answer a byte at a time (or a proxy sending keep-alive
whitespace) can hold a call for as long as it likes. :func:`deadline_client` builds the
SDK's own default client — its connection limits, and the proxies the environment names —
and wraps each of its transports so that the answer's body is read against a deadline set
when the request starts: past it, the read stops with a read timeout in the calling thread
itself (the SDK reports it as its timeout error) and the connection is closed. No thread is
left behind; a server that says nothing at all is stopped by the per-read timeout.

The SDKs use ``httpx`` or its successor ``httpx2`` depending on their version; the wrappers
are made for whichever library the SDK's client comes from.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from functools import cache
from typing import Any

__all__ = ["deadline_client"]


@cache
def _wrappers(lib: Any) -> tuple[type, type]:
    """(transport wrapper, body stream wrapper) for the HTTP library ``lib``."""

    class DeadlineStream(lib.SyncByteStream):
        def __init__(self, inner: Any, deadline: float, request: Any) -> None:
            self._inner = inner
            self._deadline = deadline
            self._request = request

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._inner:
                if time.monotonic() > self._deadline:
                    raise lib.ReadTimeout(
                        "the answer took longer than MEMOIR_LLM_TIMEOUT_S allows",
                        request=self._request,
                    )
                yield chunk

        def close(self) -> None:
            close = getattr(self._inner, "close", None)
            if callable(close):
                close()

    class DeadlineTransport(lib.BaseTransport):
        def __init__(self, total_s: float, inner: Any) -> None:
            self.total_s = total_s
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            deadline = time.monotonic() + self.total_s
            response = self.inner.handle_request(request)
            response.stream = DeadlineStream(response.stream, deadline, request)
            return response

        def close(self) -> None:
            self.inner.close()

    return DeadlineTransport, DeadlineStream


def deadline_client(sdk: Any, total_s: float | None) -> Any:
    """The SDK's default HTTP client with every transport (direct and per-proxy) bounded to
    ``total_s`` seconds an answer; None (the SDK builds its own) when there is no limit."""
    if total_s is None or total_s <= 0:
        return None
    client = sdk.DefaultHttpxClient()
    roots = [c.__module__.split(".")[0] for c in type(client).__mro__]
    lib = next((sys.modules[r] for r in roots if r in ("httpx2", "httpx")), None)
    transport, mounts = getattr(client, "_transport", None), getattr(client, "_mounts", None)
    if lib is None or transport is None or not isinstance(mounts, dict):
        return client  # a library that hides its transports: per-read timeouts only
    wrap, _ = _wrappers(lib)
    client._transport = wrap(total_s, transport)
    for pattern, mounted in list(mounts.items()):
        if mounted is not None:  # None: this host bypasses the proxy (NO_PROXY)
            mounts[pattern] = wrap(total_s, mounted)
    return client
