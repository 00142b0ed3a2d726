"""Format detection and session identity: decision tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir.ingest.discover import Format, Identity, detect_format, identify, safe_name
from memoir.ingest.plan import excluded

UUID = "67a8478e-78dc-44ab-82ea-f65c8ead85f6"


@pytest.mark.parametrize(
    ("head", "fmt"),
    [
        (b'{"type":"session_meta","payload":{"id":"x"}}\n', Format.CODEX),
        (b'{"type":"user","sessionId":"s","message":{}}\n', Format.CLAUDE),
        (b'{"type":"file-history-snapshot","messageId":"m"}\n', Format.CLAUDE),
        (b'{"type":"summary","summary":"s"}\n', Format.CLAUDE),
        (b'{"role":"user","content":"hi"}\n', Format.GENERIC_JSONL),
        (b'  [{"role":"user","content":"hi"}]', Format.GENERIC_LIST),
        (b'not json\n{"role":"assistant","content":"x"}\n', Format.GENERIC_JSONL),
        (b'{"type":"user","sessionId":"s"}', Format.CLAUDE),  # unterminated but complete
        (b"\x00\x01\x02binary\x00", Format.BINARY),
        (b'{"hello":"world"}\n', Format.UNKNOWN),
        # a type or role that is not a string says nothing; the next line decides
        (b'{"type":["x"]}\n{"role":{"x":1}}\n{"type":"user","sessionId":"s"}\n', Format.CLAUDE),
        (b"plain text\n", Format.UNKNOWN),
    ],
)
def test_detect_format(head: bytes, fmt: Format) -> None:
    assert detect_format(head) is fmt


ROOT = Path("/src/projects")


@pytest.mark.parametrize(
    ("fmt", "records", "path", "expected"),
    [
        # Claude Code names its files after the session: the stem wins.
        (
            Format.CLAUDE,
            [{"sessionId": "other", "cwd": "/w"}],
            ROOT / "-home-ann-app" / f"{UUID}.jsonl",
            Identity(UUID, "-home-ann-app", False, "/w"),
        ),
        # A fixture-style name: the records' sessionId.
        (
            Format.CLAUDE,
            [{"type": "summary"}, {"sessionId": UUID}],
            ROOT / "proj" / "tiny-conversation.jsonl",
            Identity(UUID, "proj", False, None),
        ),
        # No sessionId at all: the file stem.
        (Format.CLAUDE, [], ROOT / "proj" / "medium.jsonl", Identity("medium", "proj")),
        # Subagent in a sub-folder of the session: own id, parent's project.
        (
            Format.CLAUDE,
            [{"sessionId": UUID, "isSidechain": True}],
            ROOT / "proj" / UUID / "subagents" / "agent-a1b2c3.jsonl",
            Identity(f"{UUID}-agent-a1b2c3", "proj", True, None),
        ),
        # Old-style agent file beside the session.
        (
            Format.CLAUDE,
            [{"sessionId": UUID, "isSidechain": True}],
            ROOT / "proj" / "agent-77.jsonl",
            Identity(f"{UUID}-agent-77", "proj", True, None),
        ),
        # Re-indexing an archived subagent copy keeps its id.
        (
            Format.CLAUDE,
            [{"sessionId": UUID, "isSidechain": True}],
            ROOT / "proj" / f"{UUID}-agent-77.jsonl",
            Identity(f"{UUID}-agent-77", "proj", True, None),
        ),
        # Codex: id from session_meta, project from cwd.
        (
            Format.CODEX,
            [{"type": "session_meta", "payload": {"id": "abc", "cwd": "/home/ann/app"}}],
            ROOT / "2025" / "10" / "15" / "rollout-2025-10-15T14-00-00-abc.jsonl",
            Identity("abc", "-home-ann-app", False, "/home/ann/app"),
        ),
        (
            Format.CODEX,
            [{"type": "turn_context", "payload": {}}],
            ROOT / "rollout-2025-10-15T14-00-00-abc.jsonl",
            Identity("rollout-2025-10-15T14-00-00-abc", "codex", False, None),
        ),
        # Project names are kept as written: two Cyrillic folders are two projects.
        (Format.GENERIC_JSONL, [], ROOT / "проект" / "a.jsonl", Identity("a", "проект")),
        (Format.GENERIC_JSONL, [], ROOT / "данные" / "a.jsonl", Identity("a", "данные")),
        (Format.CLAUDE, [], ROOT / "项目" / "medium.jsonl", Identity("medium", "项目")),
        # Claude Code's lossy folder for a Cyrillic cwd: the project is named from the cwd.
        (
            Format.CLAUDE,
            [{"sessionId": UUID, "cwd": "/home/ann/проект"}],
            ROOT / "-home-ann-------" / f"{UUID}.jsonl",
            Identity(UUID, "-home-ann-проект", False, "/home/ann/проект"),
        ),
        # A folder that is not the cwd's spelling keeps its own name.
        (
            Format.CLAUDE,
            [{"sessionId": UUID, "cwd": "/home/ann/проект"}],
            ROOT / "renamed" / f"{UUID}.jsonl",
            Identity(UUID, "renamed", False, "/home/ann/проект"),
        ),
        (
            Format.CODEX,
            [{"type": "session_meta", "payload": {"id": "abc", "cwd": "/home/ann/данные"}}],
            ROOT / "2025" / "rollout-2025-10-15T14-00-00-abc.jsonl",
            Identity("abc", "-home-ann-данные", False, "/home/ann/данные"),
        ),
        # Generic: the file stem; a file directly in the source → the source's name.
        (Format.GENERIC_LIST, [], ROOT / "chat-42.json", Identity("chat-42", "projects")),
        (Format.GENERIC_JSONL, [], ROOT / "team" / "a.jsonl", Identity("a", "team")),
    ],
)
def test_identify(fmt: Format, records: list, path: Path, expected: Identity) -> None:
    assert identify(fmt, records, path, ROOT) == expected


@pytest.mark.parametrize(
    ("name", "safe"),
    [("abc-1.2", "abc-1.2"), ("../etc", "_etc"), ("a/b", "a_b"), ("..", "_"), ("", "_")],
)
def test_safe_name(name: str, safe: str) -> None:
    assert safe_name(name) == safe


@pytest.mark.parametrize(
    ("project", "patterns", "out"),
    [
        ("-home-ann-secret", ("-home-ann-secret",), True),
        ("-home-ann-secret", ("secret",), True),
        ("-home-ann-secret", ("*-secret",), True),
        ("-home-ann-secretive", ("secret",), False),
        ("-home-ann-app", (), False),
    ],
)
def test_excluded(project: str, patterns: tuple[str, ...], out: bool) -> None:
    assert excluded(project, patterns) is out
