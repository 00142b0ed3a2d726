"""A fuzz pass over the served OpenAPI schema (schemathesis, on SQLite and PostgreSQL):
every operation, generated valid and invalid requests with a valid Bearer key, and no
answer is a 5xx — on PostgreSQL too, whose driver refuses bytes SQLite stores (NUL)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from memoir.app import Memoir  # noqa: E402
from memoir.config import Settings  # noqa: E402
from memoir.server import create_app  # noqa: E402

pytestmark = pytest.mark.slow

OWNED = "owned"  # a session of the fuzzing user's, with events
# per operation and phase; 25 keeps the pass near 25 s (100 finds nothing more today)
EXAMPLES = int(os.environ.get("MEMOIR_TEST_FUZZ_EXAMPLES", "25"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, home: Path) -> Iterator[tuple[Any, dict[str, str]]]:
    """The app over a Memoir on each backend (summaries as rows, the offline model) and the
    Authorization header of its one user, who owns a session with events."""
    with ExitStack() as stack:
        env = {"MEMOIR_HOME": str(home), "MEMOIR_LLM": "offline"}
        if request.param == "postgres":
            from conftest import fresh_pg_schema

            env["MEMOIR_DATABASE_URL"] = stack.enter_context(fresh_pg_schema())
        yield from _served(env)


def _served(env: dict[str, str]) -> Iterator[tuple[Any, dict[str, str]]]:
    memoir = Memoir.open(Settings.from_env(env, sources=(), summary_store="database"))
    try:
        auth = {"Authorization": f"Bearer {memoir.store.users.add('alice')}"}
        app = create_app(memoir)
        with TestClient(app) as client:  # the session the steered cases reach
            assert client.post("/api/sessions", json={"id": OWNED}, headers=auth).is_success
            messages = [
                {"role": "user", "content": "plan the migration to postgres", "id": "1"},
                {"role": "assistant", "content": "first dump, then restore", "id": "2"},
            ]
            sent = client.post(
                f"/api/sessions/{OWNED}/events", json={"messages": messages}, headers=auth
            )
            assert sent.is_success, sent.text
        yield app, auth
    finally:
        memoir.close()


_STEER = itertools.count()

# the schema as the app serves it at /openapi.json (building it opens no Memoir); each
# call goes to the test's own app (schemathesis' lazy fixture loading needs pytest < 9)
schema = schemathesis.openapi.from_dict(create_app().openapi())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_no_server_errors(case: Any, served: tuple[Any, dict[str, str]]) -> None:
    app, auth = served
    # a generated session id is (almost) never one that exists: every other case goes to
    # the user's own session instead, so the routes past the 404 are fuzzed too
    params = case.path_parameters
    if params and "session_id" in params and next(_STEER) % 2 == 0:
        params["session_id"] = OWNED
    case.call_and_validate(app=app, headers=auth, checks=[not_a_server_error])
