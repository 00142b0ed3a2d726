"""A scripted model for tests — shipped in the package, clearly not a real model.

Queue replies (text, Completions, errors, or callables) and it answers them in order,
recording every request::

    model = ScriptedModel(["first reply", Truncated("cut", partial="{")])
    model.complete(request)          # -> Completion(text="first reply")
    model.requests                   # every ModelRequest it received, in order

A reply may be a ``str`` (a successful END completion), a ``Completion``, a
``ModelError`` instance (raised), or a callable ``(request) -> str | Completion`` (which may
itself raise). With the queue empty it answers ``default`` when one is set, else raises
:class:`ScriptExhausted` (a ``BaseException``, like ``KeyboardInterrupt``: no
``except Exception`` in the code under test can swallow it as a model failure).
``delay_s`` sleeps before answering (benchmarks of concurrency).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

from memoir.llm.errors import ModelError
from memoir.llm.values import Completion, ModelRequest, StopReason, Usage

__all__ = ["Reply", "ScriptExhausted", "ScriptedModel"]

Reply = str | Completion | ModelError | Callable[[ModelRequest], str | Completion]


class ScriptExhausted(BaseException):
    """The scripted model was called with no reply queued and no default."""


class ScriptedModel:
    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        default: Reply | None = None,
        name: str = "scripted:test",
        delay_s: float = 0.0,
    ) -> None:
        self.name = name
        self.default = default
        self.delay_s = delay_s
        self.requests: list[ModelRequest] = []
        self._queue: deque[Reply] = deque(replies)
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return len(self.requests)

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def complete(self, request: ModelRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                reply = self._queue.popleft()
            elif self.default is not None:
                reply = self.default
            else:
                raise ScriptExhausted(
                    f"{self.name}: no reply queued for request #{len(self.requests)}"
                )
        if self.delay_s:
            time.sleep(self.delay_s)
        return self._answer(reply, request)

    def _answer(self, reply: Reply, request: ModelRequest) -> Completion:
        if isinstance(reply, ModelError):
            raise reply
        if isinstance(reply, Completion):
            return reply
        if callable(reply):
            return self._answer(reply(request), request)
        prompt_chars = sum(len(m.content) for m in request.messages) + len(request.system or "")
        return Completion(
            text=reply,
            stop_reason=StopReason.END,
            usage=Usage(
                input_tokens=max(1, prompt_chars // 4), output_tokens=max(1, len(reply) // 4)
            ),
            model=self.name.split(":", 1)[-1],
            provider=self.name.split(":", 1)[0],
            request_id=f"scripted-{len(self.requests)}",
        )
