"""A local HTTP server on 127.0.0.1 that speaks the OpenAI and Anthropic wire formats.

Tests queue :class:`Reply` values; the server answers each request with the next one
(``POST /v1/chat/completions`` for OpenAI-compatible clients, ``POST /v1/messages`` for
Anthropic) and records what it received. The real SDK clients talk to it over TCP: no
transport is patched.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, TypeVar

__all__ = ["Received", "Reply", "WireServer", "anthropic_message", "openai_chat"]


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict → JSON; str/bytes → sent as is (with a JSON content type)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0  # > 0: the body sent a byte at a time, this far apart


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def openai_chat(
    text: str | None = "hello",
    *,
    finish_reason: str | None = "stop",
    model: str = "gpt-test",
    prompt_tokens: int = 11,
    completion_tokens: int = 5,
    refusal: str | None = None,
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": refusal},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def anthropic_message(
    text: str | None = "hello",
    *,
    stop_reason: str | None = "end_turn",
    model: str = "claude-test",
    input_tokens: int = 11,
    output_tokens: int = 5,
) -> dict[str, Any]:
    content = [] if text is None else [{"type": "text", "text": text}]
    return {
        "id": "msg_123",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


class WireServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self._tracked: list[_Closable] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    reply = (
                        server.replies.popleft()
                        if server.replies
                        else Reply(500, {"error": {"message": "no reply queued", "type": "test"}})
                    )
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if isinstance(reply.body, (dict, list)):
                    payload = json.dumps(reply.body).encode()
                elif isinstance(reply.body, str):
                    payload = reply.body.encode()
                else:
                    payload = reply.body or b""
                try:
                    self.send_response(reply.status)
                    headers = {"content-type": "application/json", **reply.headers}
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    if reply.trickle_s:
                        for byte in payload:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def track(self, client: C) -> C:
        """Close ``client`` (a model holding a connection pool) when the server stops."""
        self._tracked.append(client)
        return client

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        for client in self._tracked:
            client.close()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
