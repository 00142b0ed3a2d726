"""LangGraph's long-term memory on Memoir: :class:`MemoirStore`, a ``BaseStore``.

Compile a graph with ``store=MemoirStore(memoir)`` and its nodes' ``get_store()`` (or the
runtime's ``store``) put, get, search and delete JSON values under namespaces, kept in the
Memoir home as keyed memories of one Memoir user (:mod:`memoir.memory.keyed`). A search
with a query ranks the items' text with Memoir's recall ranking (full text, any content
word of the query; only matching items, each with its ``score``); without one it returns
the items most recently changed first. Filters take equality, nested objects, lists and
``$eq $ne $gt $gte $lt $lte``. TTLs are not supported (``supports_ttl`` is False).

Needs the ``langgraph`` extra.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from memoir import service
from memoir.errors import install_hint

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        validate_op_namespace,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as exc:  # pragma: no cover - the extra is installed in the test env
    raise ImportError(
        f"the LangGraph adapter needs the langgraph extra: {install_hint('langgraph')}"
    ) from exc

if TYPE_CHECKING:
    from memoir.app import Memoir
    from memoir.memory.keyed import KeyedItem, KeyedMemories

__all__ = ["MemoirStore", "item_text"]

WHOLE = "$"  # the path of the whole value


def _leaves(value: Any) -> list[str]:
    """The text of every string, number and boolean inside ``value``, in order."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _leaves(v)]
    if value is None:
        return []
    return [str(value)]


def item_text(value: dict[str, Any], fields: Sequence[str]) -> str:
    """What a search ranks an item on: for each field path (LangGraph's syntax,
    ``"a.b"``, ``"list[*].c"``), the text found there; ``"$"`` is every string, number and
    boolean in the value (field names left out, so a query word matches what was said)."""
    texts: list[str] = []
    for path in fields:
        if path == WHOLE:
            texts += _leaves(value)
        else:
            texts += get_text_at_path(value, path)
    return "\n".join(t for t in texts if t)


class MemoirStore(BaseStore):
    """A LangGraph store over a Memoir home, acting for one Memoir user (``memoir``'s, or
    ``user``): another user's items are never seen. ``fields``: the paths of a value a
    query search ranks on, unless a put names its own (``index=[...]``; ``index=False``:
    the item is found by key, namespace and filter only)."""

    supports_ttl = False

    def __init__(
        self, memoir: Memoir, *, user: str | None = None, fields: Sequence[str] = (WHOLE,)
    ) -> None:
        self._memoir = memoir
        self._items: KeyedMemories = service.keyed_memories(memoir, user)
        self.fields = tuple(fields)
        self._lock = threading.Lock()
        self._worker: ThreadPoolExecutor | None = None

    @property
    def user(self) -> str:
        return self._items.owner

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; one result per op (puts and deletes: None)."""
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on this store's worker thread: the event loop never waits on the
        database, and calls run in the order they were made (``gather(aput, adelete,
        aput)`` of one key ends with the item there, as in LangGraph's batching stores)."""
        ops = list(ops)
        call = functools.partial(contextvars.copy_context().run, self.batch, ops)
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="memoir-langgraph")
            future = self._worker.submit(call)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Stop the worker thread of the async calls (the Memoir stays open: its owner
        closes it)."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=True)

    def _one(self, op: Op) -> Result:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            found = self._items.get(op.namespace, op.key)
            return None if found is None else _item(found)
        if isinstance(op, PutOp):
            if op.value is None:
                self._items.delete(op.namespace, op.key)
                return None
            value = dict(op.value)
            fields = self.fields if op.index is None else (op.index or ())
            self._items.put(op.namespace, op.key, value, text=item_text(value, fields))
            return None
        if isinstance(op, SearchOp):
            hits = self._items.search(
                op.namespace_prefix,
                query=op.query,
                where=op.filter,
                limit=op.limit,
                offset=op.offset,
            )
            return [_search_item(h) for h in hits]
        if isinstance(op, ListNamespacesOp):
            return self._items.namespaces(
                conditions=[(c.match_type, c.path) for c in op.match_conditions or ()],
                max_depth=op.max_depth,
                limit=op.limit,
                offset=op.offset,
            )
        raise TypeError(f"not a store operation: {type(op).__name__}")


def _item(found: KeyedItem) -> Item:
    return Item(
        value=found.value,
        key=found.key,
        namespace=found.namespace,
        created_at=found.created_at,
        updated_at=found.updated_at,
    )


def _search_item(found: KeyedItem) -> SearchItem:
    return SearchItem(
        namespace=found.namespace,
        key=found.key,
        value=found.value,
        created_at=found.created_at,
        updated_at=found.updated_at,
        score=found.score,
    )
