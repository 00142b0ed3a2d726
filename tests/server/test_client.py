"""memoir.client against a real `memoir serve` (SQLite and PostgreSQL): every operation of
the served OpenAPI schema has a client method with the same parameters (a new route
without one fails here), the values and iterators it returns, and each error answer raised
as the class of Memoir's exception tree the server mapped it from."""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from memoir.client import ApiError, AsyncClient, Client
from memoir.client.operations import OPERATIONS, RENAMED
from memoir.client.values import ERRORS, error_for
from memoir.errors import (
    Busy,
    CompactionError,
    ConfigError,
    MemoirError,
    NotFound,
    OversizedHistory,
    ReadOnly,
    StoreError,
    SummaryError,
    UsageError,
)

from .serve_proc import memoir_cli, serve

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [
    {"id": "m1", "role": "user", "content": "plan the migration to postgres"},
    {"id": "m2", "role": "assistant", "content": "first dump, then restore"},
    {"id": "m3", "role": "user", "content": "and the deploy checklist?"},
    {"id": "m4", "role": "assistant", "content": "it lives in docs/deploy.md"},
    {"id": "m5", "role": "user", "content": "thanks"},
]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """A `memoir serve` on each backend (the offline model) and a key of its user alice."""
    home = tmp_path_factory.mktemp("client-home")
    with ExitStack() as stack:
        env = {**os.environ, "MEMOIR_HOME": str(home), "MEMOIR_LLM": "offline"}
        if request.param == "postgres":
            from conftest import fresh_pg_schema

            env["MEMOIR_DATABASE_URL"] = stack.enter_context(fresh_pg_schema())
        key = memoir_cli("users", "add", "alice", env=env).strip().splitlines()[0]
        base = stack.enter_context(serve(env, home / "serve.log"))
        yield base, key


@pytest.fixture
def client(server: tuple[str, str]) -> Iterator[Client]:
    base, key = server
    with Client(base, key, timeout=30) as c:
        yield c


# -- the client and the served schema cannot drift ---------------------------------------


def _body(schema: dict[str, Any], operation: dict[str, Any]) -> dict[str, bool]:
    """The body's properties: name → required (none is, when the body is optional)."""
    body = operation.get("requestBody")
    if body is None:
        return {}
    node = body["content"]["application/json"]["schema"]
    options = node.get("anyOf", [node])
    refs = [o["$ref"] for o in options if "$ref" in o]
    assert len(refs) == 1, f"one body model per operation: {node}"
    model = schema
    for part in refs[0].split("/")[1:]:
        model = model[part]
    needed = set(model.get("required", ())) if body.get("required") else set()
    return {name: name in needed for name in model["properties"]}


def served_operations(schema: dict[str, Any]) -> dict[tuple[str, str], dict[str, bool]]:
    """(METHOD, path) → its parameters (path, query and body fields) → required."""
    out: dict[tuple[str, str], dict[str, bool]] = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            params = {p["name"]: bool(p.get("required")) for p in operation.get("parameters", ())}
            params.update(_body(schema, operation))
            out[(method.upper(), path)] = params
    return out


def drift(schema: dict[str, Any]) -> list[str]:
    """Every way the client and ``schema`` disagree, in words (none: they agree)."""
    served = served_operations(schema)
    problems: list[str] = []
    routed = {route: name for name, route in OPERATIONS.items()}
    for route in sorted(set(served) - set(routed)):
        problems.append(f"{route[0]} {route[1]}: no client method")
    for route in sorted(set(routed) - set(served)):
        problems.append(f"{routed[route]}: {route[0]} {route[1]} is not served")
    for name, route in OPERATIONS.items():
        if route not in served:
            continue
        renamed = RENAMED[name]
        for cls in (Client, AsyncClient):
            signature = inspect.signature(getattr(cls, name))
            mine = {
                p.name: p.default is inspect.Parameter.empty
                for p in list(signature.parameters.values())[1:]  # not self
            }
            theirs = {renamed.get(k, k): v for k, v in served[route].items()}
            if mine != theirs:
                problems.append(f"{cls.__name__}.{name}{mine} != {route[0]} {route[1]}{theirs}")
    return problems


def test_every_served_operation_has_a_client_method_with_its_parameters(
    client: Client,
) -> None:
    schema = httpx.get(f"{client.base_url}/openapi.json").json()
    assert len(served_operations(schema)) == len(OPERATIONS) == 20
    assert drift(schema) == []


def test_a_new_route_or_parameter_without_the_client_is_drift(client: Client) -> None:
    schema = httpx.get(f"{client.base_url}/openapi.json").json()
    schema["paths"]["/api/jobs/{job_id}"] = {
        "get": {"parameters": [{"name": "job_id", "in": "path", "required": True}]}
    }
    usage = schema["paths"]["/api/usage"]["get"]
    usage["parameters"].append({"name": "model", "in": "query", "required": False})
    del schema["paths"]["/readyz"]
    assert drift(schema) == [
        "GET /api/jobs/{job_id}: no client method",
        "readiness: GET /readyz is not served",
        "Client.usage{'days': False} != GET /api/usage{'days': False, 'model': False}",
        "AsyncClient.usage{'days': False} != GET /api/usage{'days': False, 'model': False}",
    ]


# -- behaviour, sync ---------------------------------------------------------------------


def test_sessions_events_and_exchanges_page_through_the_cursors(client: Client) -> None:
    created = [client.create_session(f"page-{n}", project="paging") for n in range(5)]
    assert [s.name for s in created] == [f"page-{n}" for n in range(5)]  # ids: digests
    assert created[0].harness == "api" and created[0].created_at is not None
    again = client.create_session("page-0")  # yours already: returned as it is
    assert again.id == created[0].id and again.created_at == created[0].created_at
    first = client.sessions_page(limit=2, project="paging")
    assert [s.name for s in first.items] == ["page-0", "page-1"] and first.next_cursor
    listed = [s.name for s in client.iter_sessions(limit=2, project="paging")]
    assert listed == [f"page-{n}" for n in range(5)]

    done = client.append("page-1", MESSAGES)
    assert (done.added, done.skipped, done.last_ordinal) == (5, 0, 5)
    retried = client.append("page-1", MESSAGES)
    assert (retried.added, retried.skipped, retried.last_ordinal) == (0, 5, 5)
    assert client.session("page-1").events == 5
    page = client.events_page("page-1", limit=2)
    assert [e.ordinal for e in page.items] == [1, 2] and page.next_cursor == "2"
    events = list(client.iter_events("page-1", limit=2))
    assert [e.ordinal for e in events] == [1, 2, 3, 4, 5]
    assert events[0].text == MESSAGES[0]["content"] and events[0].author == "user"
    assert [e.ordinal for e in client.iter_events("page-1", after=3, limit=1)] == [4, 5]
    exchanges = list(client.iter_exchanges("page-1", limit=1))
    assert [(x.first_ordinal, x.last_ordinal) for x in exchanges] == [(1, 2), (3, 4), (5, 5)]
    assert exchanges[1].assistant_text == "it lives in docs/deploy.md"

    recent = list(client.iter_sessions(order="recent", limit=2, project="paging"))
    assert recent[0].name == "page-1" and recent[0].exchanges == 3 and recent[0].events == 5
    assert sorted(str(s.name) for s in recent) == [f"page-{n}" for n in range(5)]
    counted = client.sessions_page(order="recent", limit=1, project="paging")
    assert counted.total == 5 and "paging" in counted.projects and "api" in counted.harnesses
    archived = client.archive_session("page-4")
    assert archived.archived is True


def test_search_summary_compaction_memories_and_usage(client: Client) -> None:
    sid = client.create_session("work", project="ops").id  # "work" names it; sid stores it
    client.append("work", MESSAGES)
    hits = client.search("deploy checklist", session="work")
    assert hits and hits[0].session_id == sid and hits[0].exchange_id == f"{sid}:3"
    assert all(a < b for a, b in hits[0].highlights)
    assert client.search("deploy", session="work", after="2000-01-01", before="2000-01-02") == []

    summary = client.summary("work")
    assert summary.summary is None and summary.job is None
    job = client.regenerate_summary("work")
    assert job.kind == "summary" and job.session == sid and job.state == "queued"
    assert client.regenerate_summary("work").id == job.id  # one job while it is active
    assert client.summary("work").job == job

    compacted = client.compact("work", 100_000)
    assert compacted.strategy == "none" and compacted.tokens_after == compacted.tokens_before
    assert [m["content"] for m in compacted.messages][:2] == [
        MESSAGES[0]["content"],
        MESSAGES[1]["content"],
    ]

    assert client.memories(q="postgres") == [] and client.memories(kind=["fact"]) == []
    context = client.memory_context(budget=200)
    assert context.items == () and context.tokens >= 0
    remembered = client.remember("work")
    assert remembered.items == () or all(i.session_id == sid for i in remembered.items)
    assert client.forget_memories(project="ops") == ()
    usage = client.usage(days=7)
    assert usage.calls == usage.failed + (usage.calls - usage.failed) >= 0
    assert client.health() == "ok" and client.readiness().status in ("ready", "degraded")


ERROR_CASES = [
    # what is called, the class raised, the tree's class, status, code
    pytest.param("bad key", "ApiUnauthorized", ConfigError, 401, "unauthorized", id="401"),
    pytest.param("no session", "ApiNotFound", NotFound, 404, "not_found", id="404"),
    pytest.param("no memory", "ApiNotFound", NotFound, 404, "not_found", id="404-memory"),
    pytest.param("limit", "ApiInvalid", UsageError, 422, "invalid_request", id="422-query"),
    pytest.param("colon id", "ApiInvalid", UsageError, 422, "invalid_request", id="422-body"),
    pytest.param("bad date", "ApiInvalid", UsageError, 422, "invalid_request", id="422-date"),
    pytest.param("empty", "ApiSummaryFailed", SummaryError, 409, "summary_failed", id="409"),
]


def _provoke(client: Client, base: str, what: str) -> None:
    if what == "bad key":
        with Client(base, "mk_not-a-key") as stranger:
            stranger.sessions_page()
    elif what == "no session":
        client.events_page("no-such-session")
    elif what == "no memory":
        client.memory("no-such-item")
    elif what == "limit":
        client.search("x", limit=1000)
    elif what == "colon id":
        client.create_session("a:b")
    elif what == "bad date":
        client.search("x", after="yesterday")
    elif what == "empty":
        client.create_session("empty-one")
        client.regenerate_summary("empty-one")


@pytest.mark.parametrize(("what", "name", "tree", "status", "code"), ERROR_CASES)
def test_error_answers_are_raised_as_the_exception_tree(
    client: Client, what: str, name: str, tree: type, status: int, code: str
) -> None:
    with pytest.raises(ApiError) as caught:
        _provoke(client, client.base_url, what)
    error = caught.value
    assert type(error).__name__ == name and isinstance(error, tree)
    assert (error.status, error.code) == (status, code)
    assert error.request_id and len(str(error)) > 10


def test_an_unreachable_service_is_a_store_error() -> None:
    with (
        Client("http://127.0.0.1:9", "k", timeout=2) as c,
        pytest.raises(StoreError, match=r"cannot reach memoir serve at http://127\.0\.0\.1:9"),
    ):
        c.health()


# -- behaviour, async --------------------------------------------------------------------


def test_the_async_client_shares_one_pool_between_tasks(server: tuple[str, str]) -> None:
    base, key = server

    async def main() -> tuple[list[str], list[int], str]:
        async with AsyncClient(base, key) as c:
            made = await asyncio.gather(
                *(c.create_session(f"async-{n}", project="async") for n in range(4))
            )
            await asyncio.gather(*(c.append(s.id, MESSAGES[:2]) for s in made))
            ids = [str(s.name) async for s in c.iter_sessions(limit=3, project="async")]
            ordinals = [e.ordinal async for e in c.iter_events("async-2", limit=1)]
            try:
                await c.session("async-missing")
            except NotFound as exc:
                return ids, ordinals, type(exc).__name__
            return ids, ordinals, "no error"

    ids, ordinals, error = asyncio.run(main())
    assert sorted(ids) == [f"async-{n}" for n in range(4)]  # created at once: any order
    assert ordinals == [1, 2]
    assert error == "ApiNotFound"


# -- pure: the error map -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "tree", "code"),
    [
        (401, {"error": {"code": "unauthorized", "message": "m"}}, ConfigError, "unauthorized"),
        (422, {"error": {"code": "invalid_request", "message": "m"}}, UsageError, None),
        (413, {"error": {"code": "body_too_large", "message": "m"}}, UsageError, None),
        (404, {"error": {"code": "not_found", "message": "m"}}, NotFound, None),
        (409, {"error": {"code": "busy", "message": "m"}}, Busy, None),
        (409, {"error": {"code": "history_too_large", "message": "m"}}, OversizedHistory, None),
        (409, {"error": {"code": "summary_failed", "message": "m"}}, SummaryError, None),
        (409, {"error": {"code": "compaction_failed", "message": "m"}}, CompactionError, None),
        (503, {"error": {"code": "read_only", "message": "m"}}, ReadOnly, None),
        (503, {"error": {"code": "admission_unavailable", "message": "m"}}, StoreError, None),
        (503, {"error": {"code": "not_ready", "message": "m"}}, StoreError, None),
        (503, "<html>proxy</html>", StoreError, "http_503"),  # not the API's shape
        (404, None, NotFound, "http_404"),
        (500, {"error": {"code": "internal", "message": "m"}}, MemoirError, "internal"),
    ],
)
def test_error_for(status: int, body: Any, tree: type, code: str | None) -> None:
    error = error_for(status, body, "req-1")
    assert isinstance(error, tree) and isinstance(error, ApiError)
    assert error.status == status and error.request_id == "req-1"
    assert error.code == (code or body["error"]["code"])
    assert str(error) == ("m" if isinstance(body, dict) else f"the service answered {status}")


def test_every_code_the_server_maps_has_a_class() -> None:
    from memoir.server.plumbing import STATUS

    assert {code for _, _, code in STATUS} <= set(ERRORS)


def test_import_memoir_does_not_import_the_client() -> None:
    code = "import sys, memoir; print('memoir.client' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip() == "False", done.stderr


# -- the guide's examples run ------------------------------------------------------------


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_guides_examples_run(server: tuple[str, str], tmp_path: Path) -> None:
    base, key = server
    blocks = _blocks((ROOT / "docs" / "client.md").read_text(encoding="utf-8"))
    assert len(blocks) == 2
    env = {**os.environ, "MEMOIR_URL": base, "MEMOIR_API_KEY": key}
    env["PYTHONPATH"] = str(ROOT / "src")
    outputs = []
    for n, block in enumerate(blocks):
        script = tmp_path / f"example_{n}.py"
        script.write_text(block, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    first = outputs[0].splitlines()
    assert first[0] in ("2 added, 0 skipped", "0 added, 2 skipped")
    assert any(line.startswith("True ") and "deploy checklist" in line for line in first)
    assert "1 user where is the deploy checklist?" in first
    assert "2 assistant in docs/deploy.md" in first
    assert first[-1] == "not found: no session 'no-such-chat'"
    assert any(line.startswith("chat-1 ") for line in outputs[1].splitlines())
