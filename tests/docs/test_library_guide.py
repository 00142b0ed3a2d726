"""The guides' library examples (docs/library.md, docs/memory.md) run as written on the
demo's home, with the values they promise, and the front door's
session calls (``append``, ``session``, ``events``, ``exchanges``, ``stats``) and the
fake embedder's guard give the values they promise."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from memoir import service
from memoir.app import Memoir
from memoir.errors import ConfigError, NotFound
from memoir.model.event import named_session_id

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _block(page: str, name: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    found = re.search(rf"<!-- {name} -->\n```python\n(.*?)```\n<!-- /{name} -->", text, re.S)
    assert found is not None, f"docs/{page} has a python block between {name} markers"
    return found.group(1)


@pytest.fixture
def demo_home(page_home: Path) -> Path:
    return page_home  # a copy of the demo's home; MEMOIR_HOME names it, MEMOIR_EMBEDDER=none


def test_the_library_guide_example_runs_on_the_demo_home(
    demo_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exec(compile(_block("library.md", "library-example"), "docs/library.md", "exec"), {})
    out = capsys.readouterr().out
    assert "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d06" in out  # the PgBouncer conversation
    assert "-home-ann-code-infra 2 exchanges" in out
    assert "Appended(added=2, skipped=0, last_ordinal=2)" in out
    # the hit names the id local's "support-42" is stored under; the session, its name
    assert out.splitlines()[-3:] == ["2", named_session_id("local", "support-42"), "support-42"]
    assert not (Path.home() / ".memoir").exists()  # MEMOIR_HOME honoured


def test_the_memory_guide_example_runs_on_the_demo_home(
    demo_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scope: dict[str, object] = {}
    exec(compile(_block("memory.md", "memory-example"), "docs/memory.md", "exec"), scope)
    out = capsys.readouterr().out
    assert "From now on, always use timezone-aware datetimes in this repo." in out
    block = scope["block"]
    assert 0 < block.tokens <= 800  # type: ignore[attr-defined]
    assert "timezone-aware" in block.text  # type: ignore[attr-defined]


def test_append_makes_a_session_searchable_and_a_retry_adds_nothing(tmp_path: Path) -> None:
    chat = [
        {"id": "m1", "role": "user", "content": "Where is the zanzibar checklist?"},
        {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "In docs."}]},
    ]
    with Memoir.at(tmp_path, embedder="none") as m:
        first = m.append("chat-1", chat, project="helpdesk")
        again = m.append("chat-1", [*chat, {"role": "user", "content": "thanks"}])
        assert (first.added, first.skipped, first.last_ordinal) == (2, 0, 2)
        assert (again.added, again.skipped, again.last_ordinal) == (1, 2, 3)
        chat_1 = named_session_id("local", "chat-1")  # the name is local's; the id Memoir's
        session = m.session("chat-")  # a prefix (of the name; a stored id's works too)
        assert (session.id, session.name, session.project, session.harness.value) == (
            chat_1,
            "chat-1",
            "helpdesk",
            "api",
        )
        assert m.session(chat_1[:8]) == session
        assert [e.text for e in m.events("chat-1")] == [
            "Where is the zanzibar checklist?",
            "In docs.",
            "thanks",
        ]
        assert [e.ordinal for e in m.events("chat-1", after=1, upto=2)] == [2]
        assert [x.id for x in m.exchanges("chat-1")] == [f"{chat_1}:1", f"{chat_1}:3"]
        assert [h.session_id for h in m.search("zanzibar", mode="text")] == [chat_1]
        stats = service.stats(m)
        assert (stats["sessions"], stats["events"], stats["backend"]) == (1, 3, "sqlite")


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ("hello", "message 1 is a str"),
        ({"role": "robot", "content": "x"}, "message 1 has role 'robot'"),
        ({"role": "user", "content": "x", "id": 7}, "id must be a string"),
    ],
)
def test_append_refuses_a_malformed_message_and_stores_nothing(
    tmp_path: Path, message: object, says: str
) -> None:
    with Memoir.at(tmp_path, embedder="none") as m:
        with pytest.raises(ConfigError, match=says):
            m.append("chat-1", [{"role": "user", "content": "ok"}, message])  # type: ignore[list-item]
        assert m.events("chat-1") == []


def test_append_keeps_each_users_names_apart(tmp_path: Path) -> None:
    """A name another user has is no refusal (that would tell its owner's session is
    there): it makes the caller's own session."""
    with Memoir.at(tmp_path, embedder="none") as m:
        m.append("ann-chat", [{"role": "user", "content": "hi from ann"}], user="ann")
        bobs = m.append("ann-chat", [{"role": "user", "content": "hi from bob"}], user="bob")
        assert (bobs.added, bobs.last_ordinal) == (1, 1)
        for user in ("ann", "bob"):
            view = m.as_user(user)
            assert view.session("ann-chat").id == named_session_id(user, "ann-chat")
            assert [e.text for e in view.events("ann-chat")] == [f"hi from {user}"]
        with pytest.raises(NotFound):
            m.session("nope")


def test_the_fake_embedder_refuses_a_home_holding_real_vectors(tmp_path: Path) -> None:
    with Memoir.at(tmp_path, embedder="none") as m:
        m.append("chat-1", [{"role": "user", "content": "a real conversation"}])
        (xid,) = [x.id for x in m.exchanges("chat-1")]
        m.store.embeddings.put(
            "all-MiniLM-L6-v2-int8", [(xid, np.ones(4, np.float32).tobytes())], 4
        )
    with Memoir.at(tmp_path, embedder="hash") as m:
        with pytest.raises(ConfigError, match=r"^MEMOIR_EMBEDDER=hash is the test embedder.*"):
            service.embed_pending(m)
        with pytest.raises(ConfigError, match="MEMOIR_EMBEDDER=hash"):
            m.recall("conversation")
    with Memoir.at(tmp_path / "test-home", embedder="hash") as m:  # fake vectors only: fine
        m.append("chat-1", [{"role": "user", "content": "a test conversation"}])
        assert service.embed_pending(m).embedded == 1
        assert service.embed_pending(m).embedded == 0
