"""What the server tests share: the API under test with two users' keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from memoir.app import Memoir
from memoir.model.event import named_session_id

__all__ = ["Api", "error_message"]


@dataclass
class Api:
    memoir: Memoir
    client: TestClient
    alice: dict[str, str]  # Authorization headers
    bob: dict[str, str]

    def make_session(self, session_id: str = "s1", who: str = "alice") -> str:
        """Create ``who``'s session named ``session_id``; the id it is stored under (the
        answer's ``id``: URLs take it as they take the name, the store knows only it)."""
        headers = self.alice if who == "alice" else self.bob
        r = self.client.post("/api/sessions", json={"id": session_id}, headers=headers)
        assert r.status_code == 201, r.text
        made = r.json()["data"]["session"]
        assert made["name"] == session_id and made["id"] == named_session_id(who, session_id)
        return str(made["id"])


def error_message(r: Any, status: int, code: str) -> str:
    """The message of an error response, after checking its status and its one shape."""
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    assert message
    return message
