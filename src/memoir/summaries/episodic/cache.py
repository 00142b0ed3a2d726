"""The episode cache: successful episode and half results, and split decisions, for an hour.

Port :class:`EpisodeCache` (``get``/``put`` of strings) with two adapters: in memory
(:class:`MemoryEpisodeCache`, bounded, per process) and the store
(:class:`StoreEpisodeCache`, ``Store.cache_get``/``cache_put``; Redis later). Keys hash
(user, session, model, the full prompt actually sent, output cutoff), so a changed prompt
misses and a compact-prompt half can never reuse a normal-prompt result.

:class:`SafeCache` is what the summarizer talks to: it decodes entries and turns every
cache failure into a miss (or a dropped write) with a warning, so a broken cache degrades
to uncached work and never discards a valid result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memoir.llm.port import ModelRequest

__all__ = [
    "CACHE_TTL_S",
    "CachedResult",
    "CachedSplit",
    "EpisodeCache",
    "MemoryEpisodeCache",
    "SafeCache",
    "StoreEpisodeCache",
    "cache_key",
    "decode_entry",
    "encode_entry",
]

log = logging.getLogger(__name__)

CACHE_TTL_S = 3600.0
_KEY_VERSION = 1


@runtime_checkable
class EpisodeCache(Protocol):
    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str, ttl_seconds: float) -> None: ...


class MemoryEpisodeCache:
    """A bounded in-process cache with expiry (least recently written evicted first)."""

    def __init__(
        self, *, max_entries: int = 4096, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._data: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._data[key]
                return None
            return entry[1]

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        with self._lock:
            self._data[key] = (self._clock() + ttl_seconds, value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


class StoredCache(Protocol):
    """The store's cache part (``store.cache``)."""

    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str, ttl_seconds: float) -> None: ...


class StoreEpisodeCache:
    """The episode cache kept in the Memoir store (shared by every process of a home)."""

    def __init__(self, cache: StoredCache) -> None:
        self.cache = cache

    def get(self, key: str) -> str | None:
        return self.cache.get(key)

    def put(self, key: str, value: str, ttl_seconds: float) -> None:
        self.cache.put(key, value, ttl_seconds)


def cache_key(request: ModelRequest, *, model: str) -> str:
    """The key of one request to the selected ``model``: user, session, model, the full
    prompt (system, every message, json flag, purpose) and the output cutoff."""
    meta = request.meta
    payload = json.dumps(
        [
            _KEY_VERSION,
            meta.user,
            meta.session,
            model,
            str(meta.purpose),
            request.system,
            [[m.role, m.content] for m in request.messages],
            request.json,
            request.max_tokens,
        ],
        ensure_ascii=False,
    )
    return "memoir:episode:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedResult:
    data: dict[str, Any]
    model: str  # the model that produced it (the fallback's name when it did)


@dataclass(frozen=True, slots=True)
class CachedSplit:
    at: int  # the character offset the episode was cut at


def encode_entry(entry: CachedResult | CachedSplit) -> str:
    if isinstance(entry, CachedSplit):
        return json.dumps({"v": 1, "split": entry.at})
    return json.dumps({"v": 1, "data": entry.data, "model": entry.model}, ensure_ascii=False)


def decode_entry(raw: str) -> CachedResult | CachedSplit | None:
    """The entry, or None for anything unreadable (treated as a miss)."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, dict) or value.get("v") != 1:
        return None
    at = value.get("split")
    if isinstance(at, int) and not isinstance(at, bool) and at > 0:
        return CachedSplit(at)
    data, model = value.get("data"), value.get("model")
    if isinstance(data, dict) and isinstance(model, str):
        return CachedResult(data, model)
    return None


class SafeCache:
    """Decoding, failure-proof access to an optional :class:`EpisodeCache`."""

    def __init__(self, cache: EpisodeCache | None, *, ttl_seconds: float = CACHE_TTL_S) -> None:
        self.cache = cache
        self.ttl_seconds = ttl_seconds
        self.hits = 0
        self.errors = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedResult | CachedSplit | None:
        if self.cache is None:
            return None
        try:
            raw = self.cache.get(key)
        except Exception as exc:  # any adapter failure is a miss
            self._failed("read", exc)
            return None
        entry = decode_entry(raw) if raw is not None else None
        if entry is not None:
            with self._lock:
                self.hits += 1
        return entry

    def put(self, key: str, entry: CachedResult | CachedSplit) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put(key, encode_entry(entry), self.ttl_seconds)
        except Exception as exc:  # the result is kept; only the cache write is lost
            self._failed("write", exc)

    def _failed(self, op: str, exc: Exception) -> None:
        with self._lock:
            self.errors += 1
        log.warning(
            "episode cache %s failed, continuing uncached: %s: %s", op, type(exc).__name__, exc
        )
