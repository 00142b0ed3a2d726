"""The served OpenAPI schema describes the answers the server really sends: one Error
shape (`{"error": {"code", "message"}}`), for the statuses each route can answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .server_api import Api

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def schema(api: Api) -> dict[str, Any]:
    r = api.client.get("/openapi.json")
    assert r.status_code == 200
    out: dict[str, Any] = r.json()
    return out


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, op)
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def test_the_error_schema_is_the_one_sent(schema: dict[str, Any]) -> None:
    text = json.dumps(schema)
    assert "HTTPValidationError" not in text and "ValidationError" not in text
    components = schema["components"]["schemas"]
    error = components["Error"]
    assert error["required"] == ["error"]
    detail = components[error["properties"]["error"]["$ref"].rsplit("/", 1)[-1]]
    assert set(detail["required"]) == {"code", "message"}


def test_every_api_route_lists_its_errors(schema: dict[str, Any]) -> None:
    ops = [(p, m, op) for p, m, op in _operations(schema) if p.startswith("/api")]
    assert len(ops) >= 15
    for path, method, op in ops:
        responses = op["responses"]
        wanted = {"401", "422", "503"}
        if "{" in path:
            wanted.add("404")
        if "requestBody" in op:
            wanted |= {"413", "415"}
        assert wanted <= set(responses), (method, path, sorted(responses))
        for status, answer in responses.items():
            if status.startswith(("4", "5")):
                ref = answer["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/Error", (method, path, status)


def test_a_few_routes_by_name(schema: dict[str, Any]) -> None:
    paths = schema["paths"]
    append = paths["/api/sessions/{session_id}/events"]["post"]["responses"]
    assert {"200", "401", "404", "413", "415", "422", "503"} <= set(append)
    regenerate = paths["/api/sessions/{session_id}/summary/regenerate"]["post"]["responses"]
    assert {"202", "401", "404", "409", "422", "503"} <= set(regenerate)
    search = paths["/api/search"]["get"]["responses"]
    assert {"400", "401", "404", "422"} <= set(search) and "413" not in search  # 404: session=
    assert "503" in paths["/readyz"]["get"]["responses"]
    assert "401" not in paths["/healthz"]["get"]["responses"]


def test_the_documented_shape_is_what_a_422_sends(api: Api, schema: dict[str, Any]) -> None:
    r = api.client.get("/api/search", params={"q": "x", "limit": "many"}, headers=api.alice)
    assert r.status_code == 422
    error = schema["components"]["schemas"]["Error"]
    assert set(r.json()) == set(error["properties"])
