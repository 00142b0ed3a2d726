from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm.wire import WireServer


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A local server speaking OpenAI's and Anthropic's wire formats (tests/llm/wire.py)."""
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()
