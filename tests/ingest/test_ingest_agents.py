"""Issue 39.5: Gemini CLI, OpenCode and Aider transcripts — the readers as tables, the
formats told apart, discovery in each agent's own place, and a sync through the CLI on
both backends that archives, indexes and finds them (fixtures: tests/fixtures/, written
for this project from the tools' public sources; docs/agents.md describes each format)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, fresh_pg_schema
from memoir.cli.app import app
from memoir.ingest.discover import Format, chats_only, detect_format, identify, scan
from memoir.ingest.gemini_aider import line_kind
from memoir.ingest.opencode import OpenSession, export_sessions, session_lines
from memoir.ingest.reader import read_bytes

GEMINI = FIXTURES / "gemini-cli" / "tmp"
GEMINI_CHAT = GEMINI / "billing" / "chats" / "session-2026-03-02T09-14-5d2c7e41.jsonl"
GEMINI_SID = "5d2c7e41-8b0a-4c39-9f7e-2a61c0d4e9b3"
LEGACY_SID = "7e3f9a10-2b4c-4d6e-8f0a-1b3c5d7e9f20"  # a chat as one JSON document
(LEGACY_CHAT,) = GEMINI.rglob("session-*.json")
OPENCODE = FIXTURES / "opencode"
OPENCODE_SID = "ses_5a1b9e2c7ffe3kQd8VbN2xT4pL"
AIDER = FIXTURES / "aider" / "ledger"


def _lines(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _said(data: bytes, fmt: Format) -> list[tuple[str, str, str | None, str | None]]:
    """(kind, text, tool name, call id) of each event read from ``data``."""
    read = read_bytes(data, fmt)
    return [(e.kind.value, e.text, e.tool_name, e.call_id) for e in read.events]


# --- Gemini CLI ----------------------------------------------------------------------

META = {"sessionId": "s-1", "projectHash": "ab12", "startTime": "2026-03-02T09:00:00Z"}
CALL = {"id": "c1", "name": "read_file", "args": {"path": "a.py"}, "status": "executing"}
DONE = {
    **CALL,
    "status": "success",
    "result": [
        {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "x = 1"}}}
    ],
}
FAILED = {
    **CALL,
    "status": "error",
    "result": [
        {
            "functionResponse": {
                "id": "c1",
                "name": "read_file",
                "response": {"error": "no such file"},
            }
        }
    ],
}


def _gemini(mid: str, **fields: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-03-02T09:00:01Z", "type": "gemini", **fields}


PASTED = "--- Content from referenced files ---\nx = 1\n--- End of content ---"
GEMINI_TABLE = [
    ("metadata alone: no event", [META], []),
    (
        "the user's prompt",
        [META, {"id": "u1", "type": "user", "content": [{"text": "Why is it slow?"}]}],
        [("user_text", "Why is it slow?", None, None)],
    ),
    (
        "a reply appended again with its tokens gives nothing new",
        [
            META,
            _gemini("g1", content="Because."),
            _gemini("g1", content="Because.", tokens={"total": 9}),
        ],
        [("assistant_text", "Because.", None, None)],
    ),
    (
        "a call, then the same message with the call finished: call, then result",
        [
            META,
            _gemini("g2", content="", toolCalls=[CALL]),
            _gemini("g2", content="", toolCalls=[DONE]),
        ],
        [
            ("tool_call", '{"path":"a.py"}', "read_file", "c1"),
            ("tool_result", "x = 1", "read_file", "c1"),
        ],
    ),
    (
        "a call that failed: its error is the result",
        [META, _gemini("g3", content="", toolCalls=[FAILED])],
        [
            ("tool_call", '{"path":"a.py"}', "read_file", "c1"),
            ("tool_result", "no such file", "read_file", "c1"),
        ],
    ),
    (
        "functionCall and functionResponse parts are paired by id",
        [
            META,
            _gemini(
                "g4",
                content=[
                    {"functionCall": {"id": "f9", "name": "glob", "args": {"pattern": "*.py"}}}
                ],
            ),
            {
                "id": "u2",
                "type": "user",
                "content": [
                    {
                        "functionResponse": {
                            "id": "f9",
                            "name": "glob",
                            "response": {"output": "a.py"},
                        }
                    }
                ],
            },
        ],
        [("tool_call", '{"pattern":"*.py"}', "glob", "f9"), ("tool_result", "a.py", "glob", "f9")],
    ),
    (
        "thoughts are thinking; a thought part is not reply text",
        [
            META,
            _gemini(
                "g5",
                content=[{"text": "plan", "thought": True}, {"text": "Done."}],
                thoughts=[{"subject": "Plan", "description": "Read it."}],
            ),
        ],
        [("thinking", "Plan\nRead it.", None, None), ("assistant_text", "Done.", None, None)],
    ),
    (
        "files pasted for an @path are harness, the typed words the user's",
        [
            META,
            {
                "id": "u3",
                "type": "user",
                "content": "Fix @a.py\n" + PASTED,
            },
        ],
        [
            ("user_text", "Fix @a.py", None, None),
            (
                "harness",
                "--- Content from referenced files ---\nx = 1\n--- End of content ---",
                None,
                None,
            ),
        ],
    ),
    (
        "the CLI's notices and a rewind are notes",
        [META, {"id": "i1", "type": "error", "content": "Quota exceeded."}, {"$rewindTo": "u1"}],
        [
            ("meta", "Quota exceeded.", None, None),
            ("meta", "The user rewound the chat to an earlier message.", None, None),
        ],
    ),
    (
        "a rewritten history: only messages not seen before are read",
        [
            META,
            {"id": "u1", "type": "user", "content": "Hi"},
            {
                "$set": {
                    "messages": [
                        {"id": "u1", "type": "user", "content": "Hi"},
                        {"id": "s1", "type": "user", "content": "A summary"},
                    ]
                }
            },
        ],
        [("user_text", "Hi", None, None), ("user_text", "A summary", None, None)],
    ),
]


@pytest.mark.parametrize(
    ("name", "records", "expected"), GEMINI_TABLE, ids=[t[0] for t in GEMINI_TABLE]
)
def test_gemini_reader(
    name: str, records: list[dict[str, Any]], expected: list[tuple[Any, ...]]
) -> None:
    assert _said(_lines(*records), Format.GEMINI) == expected


def test_gemini_reader_remembers_what_it_took_across_syncs() -> None:
    first = _lines(META, _gemini("g2", content="", toolCalls=[CALL]))
    done = read_bytes(first, Format.GEMINI)
    more = first + _lines(_gemini("g2", content="", toolCalls=[DONE]))
    later = read_bytes(
        more, Format.GEMINI, offset=done.offset, line_count=done.line_count, state=done.state
    )
    assert [(e.kind.value, e.call_id, e.tool_name) for e in later.events] == [
        ("tool_result", "c1", "read_file")
    ]


def test_gemini_fixture_skips_and_counts_its_broken_line() -> None:
    read = read_bytes(GEMINI_CHAT.read_bytes(), Format.GEMINI)
    assert [(s.line, s.reason) for s in read.skipped] == [(9, "malformed_json")]
    kinds = [e.kind.value for e in read.events]
    assert kinds == [
        "user_text",
        "harness",
        "thinking",
        "assistant_text",
        "tool_call",
        "tool_result",
        "assistant_text",
        "meta",
    ]


# --- OpenCode ------------------------------------------------------------------------

SESSION = {"id": "ses_1", "projectID": "p1", "directory": "/home/ann/app", "time": {"created": 1}}


def _message(
    mid: str, role: str, *parts: dict[str, Any], **info: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return {"id": mid, "role": role, "time": {"created": 2}, **info}, list(parts)


def test_session_lines_stop_at_the_first_unfinished_reply() -> None:
    session = OpenSession(
        SESSION,
        messages=[
            _message("m1", "user", {"type": "text", "text": "hi"}),
            _message(
                "m2",
                "assistant",
                {"type": "text", "text": "done"},
                time={"created": 3, "completed": 4},
                tokens={"input": 1},
            ),
            _message("m3", "assistant", {"type": "text", "text": "still going"}),
            _message("m4", "user", {"type": "text", "text": "later"}),
        ],
    )
    lines = [json.loads(line) for line in session_lines(session)]
    assert [line["info"]["id"] for line in lines] == ["ses_1", "m1", "m2"]
    assert "tokens" not in lines[2]["info"]  # what changes after the fact is not written
    assert lines[0]["info"] == {
        "id": "ses_1",
        "projectID": "p1",
        "directory": "/home/ann/app",
        "time": {"created": 1},
    }


TOOL = {
    "type": "tool",
    "callID": "call_7",
    "tool": "bash",
    "state": {"status": "completed", "input": {"command": "ls"}, "output": "a.py"},
}
OPENCODE_TABLE = [
    (
        "the user's words",
        [{"type": "text", "text": "Fix it"}],
        "user",
        [("user_text", "Fix it", None, None)],
    ),
    (
        "text OpenCode wrote itself is harness",
        [{"type": "text", "text": "Called the Read tool", "synthetic": True}],
        "user",
        [("harness", "Called the Read tool", None, None)],
    ),
    (
        "a finished tool part: call and result",
        [TOOL],
        "assistant",
        [
            ("tool_call", '{"command":"ls"}', "bash", "call_7"),
            ("tool_result", "a.py", "bash", "call_7"),
        ],
    ),
    (
        "a failed tool part",
        [{**TOOL, "state": {"status": "error", "input": {"command": "ls"}, "error": "denied"}}],
        "assistant",
        [
            ("tool_call", '{"command":"ls"}', "bash", "call_7"),
            ("tool_result", "denied", "bash", "call_7"),
        ],
    ),
    (
        "reasoning, steps and reply",
        [
            {"type": "step-start"},
            {"type": "reasoning", "text": "hmm"},
            {"type": "text", "text": "ok"},
            {"type": "step-finish"},
        ],
        "assistant",
        [("thinking", "hmm", None, None), ("assistant_text", "ok", None, None)],
    ),
    (
        "a file part is an attachment",
        [{"type": "file", "mime": "image/png", "filename": "shot.png"}],
        "user",
        [("attachment", "[image] shot.png", None, None)],
    ),
]


@pytest.mark.parametrize(
    ("name", "parts", "role", "expected"), OPENCODE_TABLE, ids=[t[0] for t in OPENCODE_TABLE]
)
def test_opencode_reader(
    name: str, parts: list[dict[str, Any]], role: str, expected: list[tuple[Any, ...]]
) -> None:
    data = _lines(
        {"info": SESSION},
        {"info": {"id": "m1", "role": role, "time": {"created": 2}}, "parts": parts},
    )
    assert _said(data, Format.OPENCODE) == expected


def test_opencode_unknown_part_is_counted_and_the_rest_kept() -> None:
    data = _lines(
        {"info": SESSION},
        {
            "info": {"id": "m1", "role": "user"},
            "parts": [{"type": "text", "text": "hi"}, {"type": "hologram"}],
        },
    )
    read = read_bytes(data, Format.OPENCODE)
    assert [e.text for e in read.events] == ["hi"]
    assert [(s.line, s.reason, s.detail) for s in read.skipped] == [
        (2, "unknown_type", "parts of type hologram")
    ]


# --- Aider ---------------------------------------------------------------------------

LINE_KINDS = [
    ("# aider chat started at 2026-03-03 14:02:11", "start"),
    ("#### Fix the bug  ", "user"),
    ("####", "user"),
    ("> Added a.py to the chat  ", "note"),
    (">", "note"),
    ("", "blank"),
    ("   ", "blank"),
    ("Here is the fix.", "reply"),
    ("# A heading in a reply", "reply"),
    ("##### five hashes are a heading", "reply"),
    (">no space is a reply", "reply"),
]


@pytest.mark.parametrize(("line", "kind"), LINE_KINDS)
def test_aider_line_kind(line: str, kind: str) -> None:
    assert line_kind(line)[0] == kind


AIDER_TABLE = [
    (
        "a prompt over two lines is one",
        "#### one  \n#### two  \n",
        [("user_text", "one\ntwo", None, None)],
    ),
    (
        "a reply keeps its blank lines",
        "#### q  \n\nfirst\n\nsecond\n\n",
        [("user_text", "q", None, None), ("assistant_text", "first\n\nsecond", None, None)],
    ),
    (
        "a command and the output after it are paired",
        "#### /run make  \n> ok  \n",
        [("tool_call", "/run make", "/run", "aider-1"), ("tool_result", "ok", "/run", "aider-1")],
    ),
    (
        "output after a reply is the CLI's note",
        "#### q  \n\nanswer\n\n> Applied edit to a.py  \n",
        [
            ("user_text", "q", None, None),
            ("assistant_text", "answer", None, None),
            ("harness", "Applied edit to a.py", None, None),
        ],
    ),
    ("an empty prompt is no words", "#### <blank>  \n", []),
]


@pytest.mark.parametrize(("name", "text", "expected"), AIDER_TABLE, ids=[t[0] for t in AIDER_TABLE])
def test_aider_reader(name: str, text: str, expected: list[tuple[Any, ...]]) -> None:
    assert _said(text.encode(), Format.AIDER) == expected


def test_aider_junk_lines_are_skipped_and_counted() -> None:
    data = b"#### hello  \n\xff\xfe broken\n\x00\x00\n\nreply\n"
    read = read_bytes(data, Format.AIDER)
    assert [(s.line, s.reason) for s in read.skipped] == [(2, "invalid_utf8"), (3, "binary")]
    assert [e.text for e in read.events] == ["hello", "reply"]


def test_aider_waits_for_an_unfinished_last_line() -> None:
    read = read_bytes(b"#### hello  \n\nhalf a rep", Format.AIDER)
    assert [e.text for e in read.events] == ["hello"]
    assert read.offset == len(b"#### hello  \n\n")


# --- telling the formats apart, and where they are found -----------------------------

DETECT = [
    (_lines(META), "", Format.GEMINI),
    (_lines({"$set": {"lastUpdated": "x"}}), "", Format.GEMINI),
    (
        _lines({"sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}}),
        "",
        Format.CLAUDE,
    ),
    (_lines({"info": SESSION}), "", Format.OPENCODE),
    (_lines({"info": {"id": "m", "role": "user"}, "parts": []}), "", Format.OPENCODE),
    (b"#### hi\n", ".aider.chat.history.md", Format.AIDER),
    (b"#### hi\n", "notes.md", Format.UNKNOWN),
    (
        b'{\n  "sessionId": "s",\n  "projectHash": "p",\n  "messages": []\n}\n',
        "session-x.json",
        Format.GEMINI_JSON,
    ),
    (b'{\n  "name": "app",\n  "version": "1.0.0"\n}\n', "package.json", Format.UNKNOWN),
]


@pytest.mark.parametrize(("head", "name", "fmt"), DETECT)
def test_detect_format(head: bytes, name: str, fmt: Format) -> None:
    assert detect_format(head, name) is fmt


@pytest.mark.parametrize(
    ("root", "chats"),
    [
        ("/home/ann/.gemini", True),
        ("/home/ann/.gemini/tmp", True),
        ("/home/ann/.claude/projects", False),
        ("/home/ann/tmp", False),
    ],
)
def test_chats_only(root: str, chats: bool) -> None:
    assert chats_only(root) is chats


def test_gemini_walk_takes_the_chats_only(tmp_path: Path) -> None:
    root = tmp_path / ".gemini" / "tmp"
    shutil.copytree(GEMINI, root)
    sub = root / "billing" / "chats" / GEMINI_SID / "agent-1.jsonl"
    sub.parent.mkdir()
    sub.write_bytes(_lines({**META, "kind": "subagent"}))
    found = sorted(Path(p).relative_to(root).as_posix() for p, *_ in scan([root]))
    assert found == [
        f"billing/chats/{GEMINI_SID}/agent-1.jsonl",
        f"billing/chats/{GEMINI_CHAT.name}",
        LEGACY_CHAT.relative_to(GEMINI).as_posix(),
    ]  # not logs.json, not .project_root


def test_identities() -> None:
    gemini = identify(
        Format.GEMINI,
        [META],
        Path("/g/tmp/billing/chats/session-x.jsonl"),
        Path("/g/tmp"),
        "/home/ann/code/billing",
    )
    assert (gemini.session_id, gemini.project, gemini.cwd, gemini.subagent) == (
        "s-1",
        "-home-ann-code-billing",
        "/home/ann/code/billing",
        False,
    )
    nameless = identify(
        Format.GEMINI, [META], Path("/g/tmp/billing/chats/p/session-x.jsonl"), Path("/g/tmp")
    )
    assert (nameless.project, nameless.subagent) == ("billing", True)
    opencode = identify(
        Format.OPENCODE,
        [{"info": {**SESSION, "parentID": "ses_0"}}],
        Path("/o/p1/ses_1.jsonl"),
        Path("/o"),
    )
    assert (opencode.session_id, opencode.project, opencode.subagent) == (
        "ses_1",
        "-home-ann-app",
        True,
    )
    aider = identify(
        Format.AIDER, [], Path("/home/ann/ledger/.aider.chat.history.md"), Path("/home/ann")
    )
    assert aider.project == "-home-ann-ledger" and aider.session_id.startswith("aider-ledger-")


# --- end to end: sync through the CLI, then search and show --------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cli(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[CliRunner]:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    if request.param == "sqlite":
        yield CliRunner()
        return
    with fresh_pg_schema() as url:
        monkeypatch.setenv("MEMOIR_DATABASE_URL", url)
        yield CliRunner()


def _json(cli: CliRunner, *args: str) -> Any:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _user_home() -> Path:
    return Path.home()  # the test's own (conftest sets HOME)


def _found(cli: CliRunner, word: str) -> str:
    hits = _json(cli, "search", word, "--mode", "text", "--json")
    assert len(hits) == 1, hits
    return str(hits[0]["exchange_id"]).rsplit(":", 1)[0]


def test_sync_reads_gemini_and_opencode_from_their_default_places(
    cli: CliRunner, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(GEMINI, _user_home() / ".gemini" / "tmp")
    shutil.copytree(OPENCODE, _user_home() / ".local" / "share" / "opencode")
    monkeypatch.setenv("MEMOIR_SUMMARY_QUIESCENCE_HOURS", "0")
    report = _json(cli, "sync", "--json")
    assert report["files_indexed"] == 3, report
    assert report["summaries"]["summarized"] == 3  # summarized like Claude Code's
    assert report["lines_skipped"] == 2  # Gemini's broken line, OpenCode's unknown part
    assert report["errors"] == []
    assert _found(cli, "Lumenbridge") == GEMINI_SID
    assert _found(cli, "Quillfeather") == OPENCODE_SID
    assert _found(cli, "Ossuary") == LEGACY_SID
    legacy = _json(cli, "show", LEGACY_SID, "--json")
    assert legacy["session"]["harness"] == "gemini-cli"
    assert [e["kind"] for e in legacy["events"]] == [
        "user_text",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]
    gemini = _json(cli, "show", GEMINI_SID, "--json")
    assert gemini["session"]["harness"] == "gemini-cli"
    assert gemini["session"]["project"] == "-home-ann-code-billing"
    assert [(e["kind"], e["call_id"]) for e in gemini["events"] if e["call_id"]] == [
        ("tool_call", "run_shell_command-1772442858010-3f9a"),
        ("tool_result", "run_shell_command-1772442858010-3f9a"),
    ]
    opencode = _json(cli, "show", OPENCODE_SID, "--json")
    assert (opencode["session"]["harness"], opencode["session"]["cwd"]) == (
        "opencode",
        "/home/ann/code/atlas",
    )
    assert "Still streaming" not in json.dumps(opencode["events"])  # not finished: not read yet
    assert _json(
        cli, "search", "Lumenbridge", "--mode", "text", "--harness", "gemini-cli", "--json"
    )
    assert (
        _json(cli, "search", "Lumenbridge", "--mode", "text", "--harness", "opencode", "--json")
        == []
    )
    # the archive holds each transcript's bytes, and a second sync has nothing to do
    assert (
        next((home / "archive").rglob(f"{GEMINI_CHAT.name}*"), None)
        or next((home / "archive").rglob(f"{GEMINI_SID}*"))
    ).read_bytes() == GEMINI_CHAT.read_bytes()
    again = _json(cli, "sync", "--no-summaries", "--json")
    assert (again["files_indexed"], again["events_added"]) == (0, 0)


def test_sync_reads_aider_histories_named_in_memoir_sources(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "code" / "ledger"
    shutil.copytree(AIDER, repo)
    history = repo / ".aider.chat.history.md"
    history.write_bytes(history.read_bytes() + b"\xff\xfe not text\n")
    monkeypatch.setenv("MEMOIR_SOURCES", str(tmp_path / "code"))
    report = _json(cli, "sync", "--no-summaries", "--json")
    assert (report["files_indexed"], report["lines_skipped"]) == (1, 1)
    sid = _found(cli, "Marrowgate")
    shown = _json(cli, "show", sid, "--json")
    assert (shown["session"]["harness"], shown["session"]["cwd"]) == ("aider", str(repo))
    paired = [(e["kind"], e["tool_name"], e["call_id"]) for e in shown["events"] if e["call_id"]]
    assert [p[:2] for p in paired] == [
        ("tool_call", "/add"),
        ("tool_result", "/add"),
        ("tool_call", "/run"),
        ("tool_result", "/run"),
    ]
    assert paired[0][2] == paired[1][2] != paired[2][2] == paired[3][2]
    # Aider appends the next chat: the next sync reads on from where it stopped
    with history.open("ab") as out:
        out.write(b"\n# aider chat started at 2026-03-05 08:00:00\n\n")
        out.write(b"#### Add Wispcombe to the glossary  \n\nDone.\n\n")
    again = _json(cli, "sync", "--no-summaries", "--json")
    assert (again["files_reset"], again["events_added"]) == (0, 3)
    assert _found(cli, "Wispcombe") == sid


def _opencode_db(folder: Path) -> Path:
    """An ``opencode.db`` holding the fixture's session (the tables OpenCode creates,
    with the columns Memoir reads)."""
    storage = OPENCODE / "storage"
    db = folder / "opencode.db"
    folder.mkdir(parents=True)
    conn = sqlite3.connect(db)
    stamps = "time_created INTEGER, time_updated INTEGER"
    conn.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, "
        f"slug TEXT, directory TEXT, title TEXT, version TEXT, {stamps});"
        f"CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, {stamps}, data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, "
        f"{stamps}, data TEXT);"
    )
    (sfile,) = (storage / "session").rglob("*.json")
    s = json.loads(sfile.read_text())
    conn.execute(
        "INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?)",
        (
            s["id"],
            s["projectID"],
            None,
            s["slug"],
            s["directory"],
            s["title"],
            s["version"],
            s["time"]["created"],
            s["time"]["updated"],
        ),
    )
    for mfile in sorted((storage / "message" / s["id"]).glob("*.json")):
        m = json.loads(mfile.read_text())
        mid = m.pop("id")
        m.pop("sessionID")
        conn.execute(
            "INSERT INTO message VALUES (?,?,?,?,?)",
            (mid, s["id"], m["time"]["created"], m["time"]["created"], json.dumps(m)),
        )
        for pfile in sorted((storage / "part" / mid).glob("*.json")):
            p = json.loads(pfile.read_text())
            pid = p.pop("id")
            del p["sessionID"], p["messageID"]
            conn.execute(
                "INSERT INTO part VALUES (?,?,?,?,?,?)", (pid, mid, s["id"], 0, 0, json.dumps(p))
            )
    conn.commit()
    conn.close()
    return db


def test_opencode_database_is_exported_and_read_on_as_it_grows(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "xdg" / "opencode"
    db = _opencode_db(data)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    report = _json(cli, "sync", "--no-summaries", "--json")
    assert (report["files_indexed"], report["lines_skipped"]) == (1, 1)
    assert _found(cli, "Quillfeather") == OPENCODE_SID
    # the reply that was still streaming finishes, and OpenCode updates the session
    conn = sqlite3.connect(db)
    row = conn.execute(
        "SELECT data FROM message WHERE id = 'msg_a4e6c1d20004Lp9wYa4NzT2hQs'"
    ).fetchone()
    finished = json.loads(row[0])
    finished["time"]["completed"] = 1772442170000
    conn.execute(
        "UPDATE message SET data = ? WHERE id = 'msg_a4e6c1d20004Lp9wYa4NzT2hQs'",
        (json.dumps(finished),),
    )
    conn.execute(
        "UPDATE part SET data = ? WHERE message_id = 'msg_a4e6c1d20004Lp9wYa4NzT2hQs'",
        (json.dumps({"type": "text", "text": "Finished: the Brackenlow suite is green."}),),
    )
    conn.execute("UPDATE session SET time_updated = 1772442170000")
    conn.commit()
    conn.close()
    again = _json(cli, "sync", "--no-summaries", "--json")
    assert (again["files_indexed"], again["files_reset"], again["events_added"]) == (1, 0, 1)
    assert _found(cli, "Brackenlow") == OPENCODE_SID


def test_export_rewrites_a_session_opencode_reverted(tmp_path: Path) -> None:
    storage = tmp_path / "oc"
    shutil.copytree(OPENCODE, storage)
    out = tmp_path / "out"
    assert export_sessions(storage, out).sessions_written == 1
    (written,) = out.rglob("*.jsonl")
    before = written.read_bytes()
    for extra in (storage / "storage" / "message" / OPENCODE_SID).glob("msg_a4e6c1d20003*"):
        extra.unlink()  # the user reverted the last reply
    session_file = next((storage / "storage" / "session").rglob("*.json"))
    info = json.loads(session_file.read_text())
    info["time"]["updated"] += 1
    session_file.write_text(json.dumps(info))
    assert export_sessions(storage, out).sessions_written == 1
    after = written.read_bytes()
    assert not after.startswith(before) and len(after.splitlines()) == 3


# --- the SessionStart hook of Gemini CLI ---------------------------------------------


def test_hook_install_gemini_writes_its_settings(cli: CliRunner) -> None:
    path = _user_home() / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps({"hooks": {"BeforeTool": [{"matcher": "*", "hooks": []}]}, "theme": "Dracula"})
    )
    done = _json(cli, "hook", "install", "--gemini", "--json")
    assert done["settings"] == str(path) and done["changed"] is True
    settings = json.loads(path.read_text())
    (group,) = settings["hooks"]["SessionStart"]
    assert "matcher" not in group
    (entry,) = group["hooks"]
    assert entry["name"] == "memoir-sync" and entry["command"].endswith(
        "sync --background >/dev/null 2>&1"
    )
    assert settings["theme"] == "Dracula" and settings["hooks"]["BeforeTool"]
    assert _json(cli, "hook", "install", "--gemini", "--json")["changed"] is False
    assert _json(cli, "hook", "status", "--gemini", "--json")["installed"] is True
    assert not (_user_home() / ".claude" / "settings.json").exists()
    assert _json(cli, "hook", "uninstall", "--gemini", "--json")["removed"] == 1
    assert "SessionStart" not in json.loads(path.read_text())["hooks"]


def test_a_gemini_chat_document_rewritten_whole_is_read_again(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / ".gemini" / "tmp"
    shutil.copytree(GEMINI, root)
    chat = root / LEGACY_CHAT.relative_to(GEMINI)
    monkeypatch.setenv("MEMOIR_SOURCES", str(root))
    _json(cli, "sync", "--no-summaries", "--json")
    doc = json.loads(chat.read_text())
    doc["lastUpdated"] = "2025-11-20T16:45:00.000Z"
    doc["messages"].append(
        {"id": "9f", "timestamp": "2025-11-20T16:45:00Z", "type": "user", "content": "Thanks!"}
    )
    chat.write_text(json.dumps(doc, indent=2))
    again = _json(cli, "sync", "--no-summaries", "--json")
    assert (again["files_indexed"], again["files_reset"]) == (1, 1)
    shown = _json(cli, "show", LEGACY_SID, "--json")
    texts = [e["text"] for e in shown["events"] if e["kind"] == "user_text"]
    assert texts == ["List the cron jobs that touch the Ossuary backup volume.", "Thanks!"]


def test_export_names_an_opencode_file_that_is_not_json(tmp_path: Path) -> None:
    storage = tmp_path / "oc"
    shutil.copytree(OPENCODE, storage)
    bad = storage / "storage" / "part" / "msg_a4e6c1d20003Jd6tUe1MxR7bKf" / "prt_zz.json"
    bad.write_bytes(b'{"type": "text", "text": "cut sho')
    done = export_sessions(storage, tmp_path / "out")
    assert done.sessions_written == 1
    assert done.errors == [f"{bad}: not a JSON object; left out"]
    (written,) = (tmp_path / "out").rglob("*.jsonl")
    assert b"Quillfeather" in written.read_bytes()
