"""Every operation of the API, once: what to send (a :class:`Call`) and how to read the
answer. Pure — :mod:`memoir.client` sends a call with httpx, synchronously or not.

:data:`OPERATIONS` names each builder's route (method, path template); a parameter is
named as the API names it, except where :data:`RENAMED` says (``id`` of a new session is
``session_id`` here). The drift test checks both against the served OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

from memoir.client.values import (
    Appended,
    Compaction,
    Event,
    Exchange,
    Hit,
    Job,
    Json,
    Memory,
    MemoryContext,
    Page,
    Readiness,
    Remembered,
    Session,
    Summary,
    UsageReport,
    strings,
)

__all__ = ["OPERATIONS", "RENAMED", "Call", "When"]

T = TypeVar("T")
Builder = TypeVar("Builder", bound=Callable[..., "Call[Any]"])
When = str | date | datetime  # a datetime is sent as UTC when it has a zone
Order = Literal["created", "recent"]
Mode = Literal["text", "vector", "hybrid"]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how to read its answer's JSON (the whole document)."""

    method: str
    path: str
    read: Callable[[Json], T]
    params: Mapping[str, Any] | None = None
    body: Any = None


OPERATIONS: dict[str, tuple[str, str]] = {}
RENAMED: dict[str, dict[str, str]] = {}  # builder → {API name: Python name}


def _op(
    method: str, path: str, rename: Mapping[str, str] | None = None
) -> Callable[[Builder], Builder]:
    def register(build: Builder) -> Builder:
        OPERATIONS[build.__name__] = (method, path)
        RENAMED[build.__name__] = dict(rename or {})
        return build

    return register


def _seg(value: str) -> str:
    return quote(value, safe="")


def _when(value: When | None) -> str | None:
    """A date or time as the API reads it (ISO 8601; a time without a zone is UTC)."""
    return value if value is None or isinstance(value, str) else value.isoformat()


def _query(**params: Any) -> dict[str, Any]:
    """The parameters given (None: left to the server's default)."""
    return {k: v for k, v in params.items() if v is not None and v != []}


def _data(doc: Json) -> Json:
    data: Json = doc["data"]
    return data


def _page(key: str, item: Callable[[Json], T]) -> Callable[[Json], Page[T]]:
    def read(doc: Json) -> Page[T]:
        data = _data(doc)
        facets = data.get("facets") or {}
        return Page(
            items=tuple(item(d) for d in data[key]),
            next_cursor=doc.get("next_cursor"),
            total=data.get("total"),
            projects=strings(facets.get("projects", ())),
            harnesses=strings(facets.get("harnesses", ())),
        )

    return read


def _session(doc: Json) -> Session:
    return Session.from_json(_data(doc)["session"])


@_op("GET", "/healthz")
def health() -> Call[str]:
    return Call("GET", "/healthz", lambda doc: str(_data(doc)["status"]))


@_op("GET", "/readyz")
def readiness() -> Call[Readiness]:
    def read(doc: Json) -> Readiness:
        d = _data(doc)
        return Readiness(d["status"], d["checks"], strings(d.get("degraded", ())))

    return Call("GET", "/readyz", read)


@_op("POST", "/api/sessions", rename={"id": "session_id"})
def create_session(
    session_id: str | None = None,
    *,
    project: str | None = None,
    incognito: bool | None = None,
    memory_disabled: bool | None = None,
) -> Call[Session]:
    body = _query(
        id=session_id, project=project, incognito=incognito, memory_disabled=memory_disabled
    )
    return Call("POST", "/api/sessions", _session, body=body)


@_op("GET", "/api/sessions")
def sessions_page(
    *,
    cursor: str | None = None,
    limit: int | None = None,
    order: Order | None = None,
    project: str | None = None,
    harness: str | None = None,
    after: When | None = None,
    before: When | None = None,
) -> Call[Page[Session]]:
    params = _query(
        cursor=cursor,
        limit=limit,
        order=order,
        project=project,
        harness=harness,
        after=_when(after),
        before=_when(before),
    )
    return Call("GET", "/api/sessions", _page("sessions", Session.from_json), params)


@_op("GET", "/api/sessions/{session_id}")
def session(session_id: str) -> Call[Session]:
    return Call("GET", f"/api/sessions/{_seg(session_id)}", _session)


@_op("POST", "/api/sessions/{session_id}/archive")
def archive_session(session_id: str) -> Call[Session]:
    return Call("POST", f"/api/sessions/{_seg(session_id)}/archive", _session)


@_op("POST", "/api/sessions/{session_id}/events")
def append(session_id: str, messages: Sequence[Mapping[str, Any]]) -> Call[Appended]:
    def read(doc: Json) -> Appended:
        d = _data(doc)
        return Appended(d["added"], d["skipped"], d["last_ordinal"])

    body = {"messages": [dict(m) for m in messages]}
    return Call("POST", f"/api/sessions/{_seg(session_id)}/events", read, body=body)


@_op("GET", "/api/sessions/{session_id}/events")
def events_page(
    session_id: str,
    *,
    after: int | None = None,
    cursor: str | None = None,
    limit: int | None = None,
    reveal: bool | None = None,
) -> Call[Page[Event]]:
    params = _query(after=after, cursor=cursor, limit=limit, reveal=reveal)
    path = f"/api/sessions/{_seg(session_id)}/events"
    return Call("GET", path, _page("events", Event.from_json), params)


@_op("GET", "/api/sessions/{session_id}/exchanges")
def exchanges_page(
    session_id: str,
    *,
    after: int | None = None,
    cursor: str | None = None,
    limit: int | None = None,
    reveal: bool | None = None,
) -> Call[Page[Exchange]]:
    params = _query(after=after, cursor=cursor, limit=limit, reveal=reveal)
    path = f"/api/sessions/{_seg(session_id)}/exchanges"
    return Call("GET", path, _page("exchanges", Exchange.from_json), params)


@_op("GET", "/api/search")
def search(
    q: str,
    *,
    mode: Mode | None = None,
    project: str | None = None,
    session: str | None = None,
    harness: str | None = None,
    role: Literal["user", "assistant", "tool"] | None = None,
    after: When | None = None,
    before: When | None = None,
    limit: int | None = None,
    reveal: bool | None = None,
) -> Call[list[Hit]]:
    params = _query(
        q=q,
        mode=mode,
        project=project,
        session=session,
        harness=harness,
        role=role,
        after=_when(after),
        before=_when(before),
        limit=limit,
        reveal=reveal,
    )
    return Call(
        "GET", "/api/search", lambda doc: [Hit.from_json(h) for h in _data(doc)["hits"]], params
    )


@_op("POST", "/api/sessions/{session_id}/compact")
def compact(
    session_id: str, window: int, *, messages: Sequence[Mapping[str, Any]] | None = None
) -> Call[Compaction]:
    body: dict[str, Any] = {"window": window}
    if messages is not None:
        body["messages"] = [dict(m) for m in messages]
    path = f"/api/sessions/{_seg(session_id)}/compact"
    return Call("POST", path, lambda doc: Compaction.from_json(_data(doc)), body=body)


@_op("GET", "/api/sessions/{session_id}/summary")
def summary(session_id: str, *, reveal: bool | None = None) -> Call[Summary]:
    path = f"/api/sessions/{_seg(session_id)}/summary"
    return Call("GET", path, lambda doc: Summary.from_json(_data(doc)), _query(reveal=reveal))


@_op("POST", "/api/sessions/{session_id}/summary/regenerate")
def regenerate_summary(session_id: str) -> Call[Job]:
    path = f"/api/sessions/{_seg(session_id)}/summary/regenerate"
    return Call("POST", path, lambda doc: Job.from_json(_data(doc)["job"]))


def _memories(doc: Json) -> list[Memory]:
    return [Memory.from_json(m) for m in _data(doc)["memories"]]


@_op("GET", "/api/memories")
def memories(
    *,
    q: str | None = None,
    project: str | None = None,
    kind: Sequence[str] = (),
    scope: Literal["global", "project"] | None = None,
    as_of: When | None = None,
    history: bool | None = None,
    limit: int | None = None,
) -> Call[list[Memory]]:
    params = _query(
        q=q,
        project=project,
        kind=list(kind),
        scope=scope,
        as_of=_when(as_of),
        history=history,
        limit=limit,
    )
    return Call("GET", "/api/memories", _memories, params)


@_op("GET", "/api/memories/context")
def memory_context(
    *, project: str | None = None, budget: int | None = None, q: str | None = None
) -> Call[MemoryContext]:
    def read(doc: Json) -> MemoryContext:
        d = _data(doc)
        return MemoryContext(d["text"], d["tokens"], strings(d["items"]), d["left_out"])

    params = _query(project=project, budget=budget, q=q)
    return Call("GET", "/api/memories/context", read, params)


@_op("GET", "/api/memories/{item_id}")
def memory(item_id: str) -> Call[Memory]:
    path = f"/api/memories/{_seg(item_id)}"
    return Call("GET", path, lambda doc: Memory.from_json(_data(doc)["memory"]))


@_op("DELETE", "/api/memories/{item_id}")
def forget_memory(item_id: str) -> Call[tuple[str, ...]]:
    path = f"/api/memories/{_seg(item_id)}"
    return Call("DELETE", path, lambda doc: strings(_data(doc)["items"]))


@_op("POST", "/api/memories/forget")
def forget_memories(
    *, session: str | None = None, project: str | None = None, matching: str | None = None
) -> Call[tuple[str, ...]]:
    body = _query(session=session, project=project, matching=matching)
    return Call("POST", "/api/memories/forget", lambda doc: strings(_data(doc)["items"]), body=body)


@_op("POST", "/api/sessions/{session_id}/remember")
def remember(session_id: str, *, turn: int | None = None) -> Call[Remembered]:
    def read(doc: Json) -> Remembered:
        d = _data(doc)["outcome"]
        items = tuple(Memory.from_json(i) for i in d["items"])
        return Remembered(d["settled"], items, d["waiting"], d.get("error"), d["pending"])

    path = f"/api/sessions/{_seg(session_id)}/remember"
    return Call("POST", path, read, body=_query(turn=turn))


@_op("GET", "/api/usage")
def usage(*, days: int | None = None) -> Call[UsageReport]:
    def read(doc: Json) -> UsageReport:
        d = _data(doc)
        return UsageReport(
            tuple(d["totals"]), d["calls"], d["failed"], d["input_tokens"], d["output_tokens"]
        )

    return Call("GET", "/api/usage", read, _query(days=days))
