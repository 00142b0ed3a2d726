"""What `memoir serve` accepts on the wire, over a real socket: a request head past 64 KB is
refused as it arrives, never buffered whole and answered (httptools has no such limit of
its own: `memoir.server.plumbing.http_protocol` adds it), a request without exactly one
Host (HTTP/1.1), of another HTTP version, or with both body framings is refused, and the
server answers the next client as before."""

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
        for size in (1024 * 1024, 20 * 1024 * 1024):  # closed as it arrives: maybe unread
            answer = _send(base, _get(b"X-Padding: " + b"a" * size + b"\r\n"))
            status = answer.split(b"\r\n", 1)[0]
            assert answer == b"" or status.startswith(b"HTTP/1.1 431"), (size, status)
        for name, request, expected in WIRE:
            status = _send(base, request).split(b"\r\n", 1)[0]
            assert status.startswith(b"HTTP/1.1 " + expected), (name, status)
        assert _send(base, _get(b"")).startswith(b"HTTP/1.1 200")  # still serving


def _line(line: bytes, head: bytes = b"Host: x\r\n") -> bytes:
    return line + b"\r\n" + head + b"Connection: close\r\n\r\n"


# (what, the request, the status it gets)
WIRE = [
    ("a 60 KB head", _get(b"X-Padding: " + b"a" * 60_000 + b"\r\n"), b"200"),
    ("a 70 KB head in one read", _get(b"X-Padding: " + b"a" * 70_000 + b"\r\n"), b"431"),
    (
        "2,000 headers",
        _get(b"".join(b"X-%d: %s\r\n" % (n, b"b" * 100) for n in range(2000))),
        b"431",
    ),
    ("HTTP/1.1 without Host", _line(b"GET /healthz HTTP/1.1", b""), b"400"),
    ("HTTP/1.0 without Host", _line(b"GET /healthz HTTP/1.0", b""), b"200"),
    ("two Hosts", _get(b"Host: y\r\n"), b"400"),
    ("HTTP/0.9", b"GET /healthz\r\n\r\n", b"400"),
    ("HTTP/2.0 as text", _line(b"GET /healthz HTTP/2.0"), b"400"),
    (
        "Transfer-Encoding beside Content-Length",
        b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"400",
    ),
]
