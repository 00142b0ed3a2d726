"""The API over a Memoir on each backend, with two users and their keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from memoir.app import Memoir
from memoir.config import Settings
from memoir.server import create_app
from memoir.store.port import Store

from .server_api import Api


@pytest.fixture
def memoir(settings: Settings, store: Store) -> Iterator[Memoir]:
    m = Memoir(settings, store)
    yield m


@pytest.fixture
def api(memoir: Memoir) -> Iterator[Api]:
    alice = memoir.store.users.add("alice")
    bob = memoir.store.users.add("bob")
    with TestClient(create_app(memoir), raise_server_exceptions=False) as client:
        yield Api(
            memoir,
            client,
            {"Authorization": f"Bearer {alice}"},
            {"Authorization": f"Bearer {bob}"},
        )
