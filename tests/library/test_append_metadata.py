"""``Memoir.append``: a message's ``metadata`` (a JSON object) comes back exactly in its
first event's payload, on both backends; anything else is refused before a write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoir.app import Memoir
from memoir.config import Settings
from memoir.errors import ConfigError
from memoir.model import EventKind
from memoir.store.port import Store

METADATA: dict[str, Any] = {
    "agents_item": {
        "type": "function_call",
        "arguments": '{"a": 1}',
        "n": 2.5,
        "big": 2**53,
        "none": None,
        "flags": [True, False],
        "text": "naïve ✓ \u2028 \t",
        "nested": {"deep": [{"x": []}, {}]},
    }
}


@pytest.fixture
def memoir(home: Path, store: Store) -> Iterator[Memoir]:
    settings = Settings.from_env({"MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "none"}, sources=())
    made = Memoir(settings, store)
    yield made
    made.close()


def test_metadata_comes_back_with_the_first_event_of_its_message(memoir: Memoir) -> None:
    call = {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
        "metadata": METADATA,
    }
    memoir.append("m", [{"role": "user", "content": "hi"}, call])
    events = memoir.events("m")
    assert [e.kind for e in events] == [
        EventKind.USER_TEXT,
        EventKind.ASSISTANT_TEXT,
        EventKind.TOOL_CALL,
    ]
    assert "metadata" not in events[0].payload
    assert events[1].payload["metadata"] == METADATA
    assert "metadata" not in events[2].payload  # once per message


@pytest.mark.parametrize("bad", [[1, 2], "text", 3])
def test_metadata_that_is_not_an_object_is_refused(memoir: Memoir, bad: object) -> None:
    with pytest.raises(ConfigError, match="message 1: metadata must be a JSON object"):
        memoir.append(
            "m",
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "metadata": bad}],
        )
    assert memoir.events("m") == []  # the session was made; nothing was appended to it
