"""What `memoir serve` accepts on the wire, over a real socket: a request head past the
HTTP parser's limit is refused, never buffered whole and answered (a faster parser without
such a limit was measured and left out for this; docs/benchmarks.md, "Eighth pass"), and
the server answers the next client as before."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from .serve_proc import serve

pytestmark = pytest.mark.slow


def _send(base: str, data: bytes) -> bytes:
    """What the server answers to ``data`` on a new connection ("" when it closes or
    resets the connection without an answer)."""
    host, port = base.removeprefix("http://").split(":")
    got = b""
    with socket.create_connection((host, int(port)), timeout=30) as s:
        try:
            s.sendall(data)
            while chunk := s.recv(65536):
                got += chunk
                if b"\r\n\r\n" in got:
                    break
        except (ConnectionResetError, BrokenPipeError):
            pass
    return got


def _get(extra: bytes) -> bytes:
    return b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + extra + b"Connection: close\r\n\r\n"


def test_an_oversized_request_head_is_refused_and_the_server_carries_on(tmp_path: Path) -> None:
    env = {**os.environ, "MEMOIR_HOME": str(tmp_path / "home"), "MEMOIR_EMBEDDER": "none"}
    with serve(env, tmp_path / "serve.log") as base:
        assert _send(base, _get(b"")).startswith(b"HTTP/1.1 200")
        for size in (1024 * 1024, 20 * 1024 * 1024):  # h11 refuses past 16 KB unread
            answer = _send(base, _get(b"X-Padding: " + b"a" * size + b"\r\n"))
            status = answer.split(b"\r\n", 1)[0]
            assert answer == b"" or status.startswith(b"HTTP/1.1 4"), (size, status)
        many = b"".join(b"X-%d: %s\r\n" % (n, b"b" * 100) for n in range(2000))  # 200 KB
        status = _send(base, _get(many)).split(b"\r\n", 1)[0]
        assert status == b"" or status.startswith(b"HTTP/1.1 4"), status
        assert _send(base, _get(b"")).startswith(b"HTTP/1.1 200")  # still serving
