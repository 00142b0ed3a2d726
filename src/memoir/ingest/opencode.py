"""OpenCode: its sessions exported to transcript files, and the reader of those files.

Export OpenCode's sessions to transcript files sync reads like any other.

OpenCode keeps no transcript file: its sessions live in ``opencode.db`` (SQLite: tables
``session``, ``message`` and ``part``, a message's and a part's fields in a JSON ``data``
column) under its data folder (``$XDG_DATA_HOME/opencode``, by default
``~/.local/share/opencode``); versions before the database kept one JSON file each under
``storage/session/<project>/<session>.json``, ``storage/message/<session>/<message>.json``
and ``storage/part/<message>/<part>.json``. Both are read (the database wins for a session
in both), read-only.

Before a sync walks its sources, :func:`export` writes each session that changed since
the last export as ``<out>/<project id>/<session id>.jsonl`` — the lines
:mod:`memoir.ingest.opencode` reads: the session, then each finished message with its
parts (a user message at once; an assistant message once it completed or failed; the
export stops at the first unfinished one, so lines only ever get appended). Only the
fields the reader needs are written, in a stable order: a message's line never changes
once written, so the file grows by appending and sync reads on from where it stopped (a
session OpenCode reverted is written anew, and sync re-reads it as a rewritten
transcript). What changed is told by each session's update time, kept in
``<out>/.exported.json``.

:func:`session_lines` is the pure part (a session's records in, lines out).

OpenCode sessions, as :mod:`memoir.ingest.opencode` exports them (one JSONL file
per session under ``<home>/sources/opencode/``).

OpenCode keeps its sessions in a database (``opencode.db``; older versions in one JSON
file per session, message and part under ``storage/``), not in a transcript file. The
export writes each session as lines shaped like OpenCode's own ``opencode export``
output, cut into one line per message:

- the first line is the session: ``{"info": {id, projectID, directory, parentID?,
  time: {created}}}`` → the session's cwd, no event (a ``parentID`` makes it a
  subagent's);
- every other line is one finished message: ``{"info": {id, role, time, modelID,
  error?, summary?}, "parts": [...]}``. Parts: ``text`` (the user's or the assistant's
  words; ``synthetic: true`` is text OpenCode wrote itself → HARNESS ``synthetic``),
  ``reasoning`` → THINKING, ``tool`` (``callID``, ``tool``, ``state: {status, input,
  output | error}``) → a TOOL_CALL and, once ``completed`` or ``error``, its TOOL_RESULT
  with the same call id, ``file`` → ATTACHMENT, ``compaction`` → COMPACTION, ``agent`` /
  ``subtask`` / ``retry`` → META; ``step-start``, ``step-finish``, ``snapshot`` and
  ``patch`` are bookkeeping (nothing). An assistant message with ``summary: true`` is
  OpenCode's own compaction summary → COMPACTION; one with an ``error`` adds a META note.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memoir.home_files import private_dir, write_atomic
from memoir.ingest.records import SMALL_INPUT, FormatReader, compact_json, parse_ts
from memoir.model import Author, EventKind, Harness
from memoir.model.harness import HarnessShape

__all__ = [
    "ExportReport",
    "OpenCodeReader",
    "OpenSession",
    "export_sessions",
    "is_opencode_dir",
    "is_opencode_record",
    "load_sessions",
    "session_lines",
]

STATE_FILE = ".exported.json"
_MESSAGE_KEYS = ("id", "role", "modelID", "providerID", "agent", "mode", "error")


@dataclass
class OpenSession:
    """One OpenCode session as stored: its info, and its messages (info, parts) in order."""

    info: dict[str, Any]
    updated: int = 0
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]] = field(default_factory=list)
    # fills ``messages`` when called (only a changed session's are read)
    loader: Callable[[OpenSession], None] | None = None

    def load(self) -> OpenSession:
        if self.loader is not None:
            loader, self.loader = self.loader, None
            loader(self)
        return self


@dataclass
class ExportReport:
    sessions_written: int = 0
    errors: list[str] = field(default_factory=list)


def is_opencode_dir(path: Path) -> bool:
    """``path`` is an OpenCode data folder (it holds ``opencode.db`` or ``storage/session``)."""
    return (path / "opencode.db").is_file() or (path / "storage" / "session").is_dir()


def _dumps(value: object) -> bytes:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


def _finished(info: dict[str, Any]) -> bool:
    if info.get("role") != "assistant":
        return True
    time = info.get("time")
    return bool(info.get("error")) or (isinstance(time, dict) and bool(time.get("completed")))


def session_lines(session: OpenSession) -> list[bytes]:
    """The export lines of ``session`` (pure): the session line, then one line per
    finished message up to the first unfinished one."""
    info = session.info
    head: dict[str, Any] = {
        "id": info.get("id"),
        "projectID": info.get("projectID") or info.get("project_id") or "global",
        "directory": info.get("directory") or "",
    }
    time = info.get("time")
    if isinstance(time, dict) and time.get("created") is not None:
        head["time"] = {"created": time.get("created")}
    if info.get("parentID"):
        head["parentID"] = info["parentID"]
    lines = [_dumps({"info": head})]
    for message, parts in session.messages:
        if not _finished(message):
            break
        kept = {k: message[k] for k in _MESSAGE_KEYS if message.get(k) is not None}
        mtime = message.get("time")
        if isinstance(mtime, dict):
            kept["time"] = {k: v for k, v in mtime.items() if k in ("created", "completed")}
        if message.get("summary") is True:
            kept["summary"] = True
        clean = [{k: v for k, v in p.items() if k not in ("sessionID", "messageID")} for p in parts]
        lines.append(_dumps({"info": kept, "parts": clean}))
    return lines


def _json(text: object) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _from_db(db: Path, errors: list[str]) -> Iterator[OpenSession]:
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        errors.append(f"{db}: not readable: {exc}")
        return
    try:
        rows = conn.execute(
            "SELECT id, project_id, parent_id, directory, time_created, time_updated "
            "FROM session ORDER BY time_created, id"
        ).fetchall()
        for sid, project, parent, directory, created, updated in rows:
            info = {
                "id": sid,
                "projectID": project,
                "parentID": parent,
                "directory": directory,
                "time": {"created": created},
            }
            yield OpenSession(
                info, int(updated or 0), loader=lambda s: _db_messages(conn, s, db, errors)
            )
    except sqlite3.Error as exc:
        errors.append(f"{db}: not readable as OpenCode's database: {exc}")
    finally:
        conn.close()


def _db_messages(
    conn: sqlite3.Connection, session: OpenSession, db: Path, errors: list[str]
) -> None:
    """Load the messages and parts of ``session`` (a row whose data is not a JSON object
    is left out and named in ``errors``)."""
    sid = session.info["id"]
    parts: dict[str, list[dict[str, Any]]] = {}
    for pid, mid, data in conn.execute(
        "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY id", (sid,)
    ):
        if (part := _json(data)) is not None:
            parts.setdefault(mid, []).append({"id": pid, **part})
        else:
            errors.append(f"{db}: part {pid} is not a JSON object; left out")
    for mid, created, data in conn.execute(
        "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
        (sid,),
    ):
        if (message := _json(data)) is None:
            errors.append(f"{db}: message {mid} is not a JSON object; left out")
            continue
        message = {"id": mid, **message}
        message.setdefault("time", {"created": created})
        session.messages.append((message, parts.get(mid, [])))


def _read(path: Path, errors: list[str]) -> dict[str, Any] | None:
    """The JSON object in ``path``; None (and a line in ``errors``) when there is none."""
    try:
        found = _json(path.read_bytes())
    except OSError as exc:
        errors.append(f"{path}: not readable: {exc.strerror or exc}")
        return None
    if found is None:
        errors.append(f"{path}: not a JSON object; left out")
    return found


def _from_files(storage: Path, errors: list[str]) -> Iterator[OpenSession]:
    for folder in sorted((storage / "session").glob("*")):
        for file in sorted(folder.glob("*.json")):
            info = _read(file, errors)
            if info is None:
                continue
            info.setdefault("id", file.stem)
            info.setdefault("projectID", folder.name)
            time = info["time"] if isinstance(info.get("time"), dict) else {}
            updated = int(time.get("updated") or time.get("created") or 0)
            yield OpenSession(info, updated, loader=lambda s: _file_messages(storage, s, errors))


def _file_messages(storage: Path, session: OpenSession, errors: list[str]) -> None:
    for mfile in sorted((storage / "message" / str(session.info["id"])).glob("*.json")):
        message = _read(mfile, errors)
        if message is None:
            continue
        message.setdefault("id", mfile.stem)
        pfiles = sorted((storage / "part" / str(message["id"])).glob("*.json"))
        parts = [p for f in pfiles if (p := _read(f, errors)) is not None]
        session.messages.append((message, parts))
    session.messages.sort(key=lambda m: (_created(m[0]), str(m[0].get("id"))))


def _created(message: dict[str, Any]) -> int:
    time = message.get("time")
    return int(time.get("created") or 0) if isinstance(time, dict) else 0


def load_sessions(data_dir: Path, errors: list[str]) -> Iterator[OpenSession]:
    """Every session under an OpenCode data folder (the database's, then the JSON
    storage's that the database does not hold)."""
    seen: set[str] = set()
    db = data_dir / "opencode.db"
    if db.is_file():
        for session in _from_db(db, errors):
            seen.add(str(session.info["id"]))
            yield session
    storage = data_dir / "storage"
    if (storage / "session").is_dir():
        for session in _from_files(storage, errors):
            if str(session.info["id"]) not in seen:
                yield session


def _safe(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).strip(".")
    return cleaned[:200] or "_"


def _write(target: Path, lines: list[bytes]) -> bool:
    """Append what ``target`` lacks of ``lines``; rewrite it when it is not a start of
    them (OpenCode reverted the session). True when the file changed."""
    want = b"".join(lines)
    try:
        have = target.read_bytes()
    except FileNotFoundError:
        have = b""
    if have == want:
        return False
    private_dir(target.parent)
    if have and want.startswith(have):
        with open(target, "ab") as out:
            out.write(want[len(have) :])
    else:
        write_atomic(target, lambda out: out.write(want), tag="memoir")
        os.chmod(target, 0o600)
    return True


def export_sessions(data_dir: Path, out: Path) -> ExportReport:
    """Write the sessions of the OpenCode data folder ``data_dir`` that changed since the
    last export into ``out`` (see the module)."""
    report = ExportReport()
    state_path = out / STATE_FILE
    try:
        done = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        done = {}
    done = done if isinstance(done, dict) else {}
    changed = False
    for session in load_sessions(data_dir, report.errors):
        sid = str(session.info.get("id"))
        if done.get(sid) == session.updated and session.updated:
            continue
        project = str(session.info.get("projectID") or "global")
        target = out / _safe(project) / f"{_safe(sid)}.jsonl"
        if _write(target, session_lines(session.load())):
            report.sessions_written += 1
        done[sid] = session.updated
        changed = True
    if changed:
        private_dir(out)
        write_atomic(state_path, lambda f: f.write(_dumps(done)), tag="memoir")
    return report


_QUIET_PARTS = frozenset({"step-start", "step-finish", "snapshot", "patch"})
_NOTE_PARTS = frozenset({"agent", "subtask", "retry"})


def is_opencode_record(obj: dict[str, Any]) -> bool:
    """An export line: a session (``info`` with ``projectID`` and ``directory``) or a
    message (``info`` with a ``role``, and ``parts``)."""
    info = obj.get("info")
    if not isinstance(info, dict):
        return False
    if "projectID" in info and "directory" in info:
        return True
    return isinstance(info.get("role"), str) and isinstance(obj.get("parts"), list)


def _ms(time: object, key: str) -> datetime | None:
    return parse_ts(time.get(key)) if isinstance(time, dict) else None


class OpenCodeReader(FormatReader):
    harness = Harness.OPENCODE

    def handle(self, obj: dict[str, Any]) -> bool:
        info = obj.get("info")
        if not isinstance(info, dict):
            return False
        if "projectID" in info and "directory" in info:
            self.note("session_id", info.get("id"))
            self.note("cwd", info.get("directory"))
            if info.get("parentID"):
                self.state["subagent"] = True
            self.note_time(_ms(info.get("time"), "created"))
            return True
        role = info.get("role")
        parts = obj.get("parts")
        if not isinstance(parts, list) or role not in ("user", "assistant"):
            return self.unknown(f"message of role {role!r}")
        ts = _ms(info.get("time"), "created")
        self.note_time(ts)
        self.note_time(_ms(info.get("time"), "completed"))
        model = info.get("modelID")
        base = {"model": model} if isinstance(model, str) else {}
        if role == "assistant" and info.get("summary") is True:
            text = "\n\n".join(
                str(p.get("text", ""))
                for p in parts
                if isinstance(p, dict) and p.get("type") == "text"
            )
            self.sink.emit(EventKind.COMPACTION, Author.SYSTEM, text, ts, payload=base)
            return True
        lost = sorted(
            {
                str(p.get("type"))
                for p in parts
                if isinstance(p, dict) and not self._part(p, role, ts, base)
            }
        )
        error = info.get("error")
        if isinstance(error, dict):
            data = error.get("data")
            message = data.get("message") if isinstance(data, dict) else None
            text = str(message or error.get("name") or "error")
            payload = {"error": error.get("name")}
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload=payload)
        return self.unknown(f"parts of type {', '.join(lost)}") if lost else True

    def _part(
        self, part: dict[str, Any], role: str, ts: datetime | None, base: dict[str, Any]
    ) -> bool:
        ptype = part.get("type")
        when = _ms(part.get("time"), "start") or ts
        if ptype == "text":
            text = str(part.get("text", ""))
            if not text.strip() or part.get("ignored"):
                return True
            if part.get("synthetic"):
                payload = {"harness": HarnessShape.SYNTHETIC.value}
                self.sink.emit(EventKind.HARNESS, Author.SYSTEM, text, ts, payload=payload)
            elif role == "user":
                self.user_words(text, ts)
            else:
                self.sink.emit(EventKind.ASSISTANT_TEXT, Author.ASSISTANT, text, when, payload=base)
            return True
        if ptype == "reasoning":
            self.sink.emit(EventKind.THINKING, Author.ASSISTANT, str(part.get("text", "")), when)
            return True
        if ptype == "tool":
            self._tool(part, ts)
            return True
        if ptype == "file":
            mime = str(part.get("mime", ""))
            shown = "[image]" if mime.startswith("image/") else "[file]"
            name = part.get("filename")
            payload = {"media_type": mime} if mime else {}
            text = f"{shown} {name}" if isinstance(name, str) else shown
            self.sink.emit(EventKind.ATTACHMENT, Author.USER, text, ts, payload=payload)
            return True
        if ptype == "compaction":
            self.sink.emit(
                EventKind.COMPACTION, Author.SYSTEM, "", ts, payload={"auto": part.get("auto")}
            )
            return True
        if ptype in _NOTE_PARTS:
            text = str(part.get("name") or part.get("description") or part.get("prompt") or ptype)
            self.sink.emit(EventKind.META, Author.SYSTEM, text, ts, payload={"part": ptype})
            return True
        return ptype in _QUIET_PARTS

    def _tool(self, part: dict[str, Any], ts: datetime | None) -> None:
        call_id = part.get("callID") or part.get("id")
        name = str(part.get("tool", "tool"))
        state = part.get("state")
        state = state if isinstance(state, dict) else {}
        tool_input = state.get("input")
        text = compact_json(tool_input if tool_input is not None else {})
        payload = (
            {"input": tool_input}
            if isinstance(tool_input, dict) and len(text) <= SMALL_INPUT
            else {}
        )
        started = _ms(state.get("time"), "start") or ts
        self.remember_tool(call_id, name)
        self.tool_event(
            EventKind.TOOL_CALL, Author.ASSISTANT, text, started, name, call_id, payload
        )
        status = state.get("status")
        if status not in ("completed", "error"):
            return
        self.tool_for(call_id)
        ended = _ms(state.get("time"), "end") or started
        extra: dict[str, Any] = {}
        if status == "error":
            output, extra["is_error"] = str(state.get("error", "")), True
        else:
            output = str(state.get("output", ""))
        title = state.get("title")
        if isinstance(title, str) and title:
            extra["title"] = title
        self.tool_event(EventKind.TOOL_RESULT, Author.TOOL, output, ended, name, call_id, extra)
