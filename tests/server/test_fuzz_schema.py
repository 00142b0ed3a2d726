"""A fuzz pass over the served OpenAPI schema (schemathesis, on SQLite and PostgreSQL):
every operation, generated valid and invalid requests with a valid Bearer key, checked by
every check schemathesis has (``schemathesis run --checks all``): no answer is a 5xx — on
PostgreSQL too, whose driver refuses bytes SQLite stores (NUL) — and the schema is exactly
true: every request it allows is accepted, every one it forbids refused, every status
documented, every 405's ``Allow`` the path's methods. Clients are generated from it."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
import httpx  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import CHECKS, load_all_checks  # noqa: E402

from memoir.server import create_app  # noqa: E402

from .serve_proc import memoir_cli, serve  # noqa: E402

pytestmark = pytest.mark.slow

OWNED = "owned"  # a session of the fuzzing user's, with events
# per operation and phase: every check over HTTP costs more than one; 10 keeps the pass
# short (a longer run: `schemathesis run --checks all`, docs/client.md)
EXAMPLES = int(os.environ.get("MEMOIR_TEST_FUZZ_EXAMPLES", "10"))


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, str], str]]:
    """A `memoir serve` on each backend (summaries as rows, the offline model), its base URL,
    the Authorization header of its one user, who owns a session with events, and the id
    of the memory item remembered from it."""
    home = tmp_path_factory.mktemp("fuzz-home")
    with ExitStack() as stack:
        env = {
            **os.environ,
            "MEMOIR_HOME": str(home),
            "MEMOIR_LLM": "offline",
            "MEMOIR_SUMMARY_STORE": "database",
        }
        if request.param == "postgres":
            from conftest import fresh_pg_schema

            env["MEMOIR_DATABASE_URL"] = stack.enter_context(fresh_pg_schema())
        key = memoir_cli("users", "add", "alice", env=env).strip().splitlines()[0]
        auth = {"Authorization": f"Bearer {key}"}
        base = stack.enter_context(serve(env, home / "serve.log"))
        with httpx.Client(base_url=base, headers=auth) as client:  # what steered cases reach
            assert client.post("/api/sessions", json={"id": OWNED}).is_success
            messages = [
                {"role": "user", "content": "plan the migration to postgres", "id": "1"},
                {"role": "assistant", "content": "first dump, then restore", "id": "2"},
                {"role": "user", "content": "I prefer tabs over spaces.", "id": "3"},
                {"role": "assistant", "content": "Noted.", "id": "4"},
            ]
            sent = client.post(f"/api/sessions/{OWNED}/events", json={"messages": messages})
            assert sent.is_success, sent.text
            kept = client.post(f"/api/sessions/{OWNED}/remember", json={})
            assert kept.is_success, kept.text
            (item,) = kept.json()["data"]["outcome"]["items"]
        yield base, auth, item["id"]


_STEER = itertools.count()
load_all_checks()
ALL_CHECKS = CHECKS.get_all()  # what `schemathesis run --checks all` runs

# the schema as the app serves it at /openapi.json (building it opens no Memoir); each
# call goes to the test's own server (schemathesis' lazy fixture loading needs pytest < 9)
schema = schemathesis.openapi.from_dict(create_app().openapi())
# as `schemathesis run -H 'Authorization: …'`: the caller sends a key (each call puts in
# its server's), so no case is generated without one
schema.config.update(headers={"Authorization": "Bearer set-per-call"})


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_the_schema_is_exactly_true(case: Any, served: tuple[str, dict[str, str], str]) -> None:
    base, auth, item_id = served
    # a generated id is (almost) never one that exists: every other case goes to the
    # user's own session or memory item instead, so the routes past the 404 are fuzzed too
    params = case.path_parameters
    if params and "session_id" in params and next(_STEER) % 2 == 0:
        params["session_id"] = OWNED
    if params and "item_id" in params and next(_STEER) % 2 == 0:
        params["item_id"] = item_id
    case.call_and_validate(base_url=base, headers=auth, checks=ALL_CHECKS)


def test_every_check_runs() -> None:
    names = {getattr(c, "__name__", "") for c in ALL_CHECKS}
    assert {
        "not_a_server_error",
        "status_code_conformance",
        "negative_data_rejection",
        "positive_data_acceptance",
        "allow_header_conformance",
        "ignored_auth",
    } <= names
