from __future__ import annotations

from collections.abc import Iterator

import pytest

from .wire import WireServer


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()
