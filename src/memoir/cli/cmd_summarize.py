"""`memoir summarize`, `memoir compact` and `memoir remember`: the commands that run the
model over one conversation now.

`memoir summarize SESSION`: the episodic summarizer over one stored session.

`memoir compact FILE --window N`: compact a messages file with the configured model.

`memoir remember SESSION`: extract memories from what the user said in a session, now.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from memoir import service
from memoir.cli.app import (
    app,
    console,
    err_console,
    open_memoir,
    print_json,
    printable,
)
from memoir.errors import Busy, CompactionError, MemoirError, UsageError

if TYPE_CHECKING:
    from memoir.summaries.episodic import Progress as ProgressFn
    from memoir.summaries.session import RunMode, SessionRun

__all__ = ["MessagesFile", "compact", "read_messages", "remember", "render_messages", "summarize"]


# ---- memoir summarize ----


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[ProgressFn | None]:
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    bar = Progress(
        TextColumn("{task.description:<9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def report(phase: str, completed: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(phase, total=total)
        bar.update(tasks[phase], completed=completed, total=total)

    with bar:
        yield report


def _show(run: SessionRun) -> None:
    summary = run.summary
    if summary is None:
        console.print(f"Summary of {run.session_id} is already up to date (nothing new).")
        return
    table = Table(title=f"summary of {run.session_id}", show_header=False)
    rows = [
        ("mode", run.mode + (f" ({run.rounds} rounds)" if run.rounds > 1 else "")),
        ("episodes", str(summary.episodes)),
        ("split after truncation", str(summary.splits)),
        ("cache hits", str(summary.cache_hits)),
        ("model calls", str(run.calls)),
        ("model", summary.model + (" (fallback)" if summary.fallback_used else "")),
        ("tokens in / out", f"{summary.input_tokens:,} / {summary.output_tokens:,}"),
        ("saved", "yes" if run.saved else "NO"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    console.print(printable(summary.text), markup=False, highlight=False)


@app.command()
def summarize(
    session: str = typer.Argument(..., help="Session id (or a unique prefix)."),
    full: bool = typer.Option(False, "--full", help="Rebuild from the whole history."),
    incremental: bool = typer.Option(
        False, "--incremental", help="Summarize only what follows the existing summary."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Bypass the episode cache."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Summarize a long session episode by episode and save the result.

    Without --full or --incremental: incremental when the session already has a summary,
    else full (and in parts when the history is beyond the full-regeneration guard).
    """
    if full and incremental:
        raise UsageError("--full and --incremental cannot be used together; give one")
    mode: RunMode = "full" if full else "incremental" if incremental else "auto"
    with open_memoir(existing=True) as memoir:
        session_id = service.session_id(memoir, session)
        try:
            with _progress_bar(err_console.is_terminal) as progress:
                run = memoir.summarize(
                    session_id, mode=mode, use_cache=not no_cache, progress=progress
                )
        except Busy as exc:  # one writer per session: the other run's summary will land
            message = f"{exc}; leaving it to finish"
            if as_json:
                print_json({"busy": True, "message": message})
            else:
                console.print(message)
            return
    if as_json:
        print_json(run.to_json())
    else:
        _show(run)
    if run.summary is not None and not run.saved:
        raise MemoirError(run.note or "the summary was not saved")


# ---- memoir compact ----

Shape = Literal["array", "object", "jsonl", "transcript"]


@dataclass(frozen=True)
class MessagesFile:
    """What ``memoir compact FILE`` read: the messages, and the shape they came in (a JSON
    array, an object holding ``"messages"`` — kept as ``envelope`` — JSON Lines, or a Claude
    Code / Codex transcript), so ``--output`` can write the compacted list back the same
    way."""

    messages: list[dict[str, Any]]
    shape: Shape
    envelope: dict[str, Any] = field(default_factory=dict)


def read_messages(path: Path) -> MessagesFile:
    """A JSON array of messages, an object with ``"messages"``, or JSON Lines — decoded by
    the reader sync uses (``memoir.ingest.records.loads``), so a file too deeply nested or
    malformed is refused here as it is there, naming the line. A file that is not there is
    a bad argument (:class:`UsageError`, exit 2); one that cannot be read as messages is a
    :class:`CompactionError`."""
    from memoir.ingest.records import loads

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"FILE: {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"FILE: {path} is a folder, not a messages file") from None
    except OSError as exc:
        raise CompactionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CompactionError(f"{path} is not UTF-8 text") from exc
    shape: Shape = "array"
    envelope: dict[str, Any] = {}
    try:
        data: Any = loads(raw)
    except ValueError:
        shape = "jsonl"
        data = []
        for n, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data.append(loads(line))
            except ValueError as exc:
                reason = getattr(exc, "msg", None) or str(exc)
                raise CompactionError(
                    f"{path} is neither JSON nor JSON Lines (line {n}: {reason})"
                ) from None
    if isinstance(data, dict):
        shape, envelope = "object", data
        data = data.get("messages")
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        raise CompactionError(f"{path} must hold a list of message objects")
    if all(isinstance(m.get("role"), str) for m in data):
        return MessagesFile(data, shape, envelope)
    transcript = _transcript_messages(path)
    if transcript is not None:
        return MessagesFile(transcript, "transcript")
    bad = next(i for i, m in enumerate(data) if not isinstance(m.get("role"), str))
    raise CompactionError(
        f"{path}: item {bad} is not a message (no role); a messages file holds "
        "{role, content} objects, and Claude Code / Codex transcripts are read as such"
    )


def render_messages(source: MessagesFile, messages: list[dict[str, Any]]) -> str:
    """``messages`` written the way ``source`` came: a JSON array, the same object with its
    ``"messages"`` replaced (every other key kept), or JSON Lines. A transcript is written
    as JSON Lines of messages: a compacted context is a message list, not a transcript a
    harness would resume. Pure."""
    if source.shape in ("jsonl", "transcript"):
        return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages)
    value: Any = messages
    if source.shape == "object":
        value = {**source.envelope, "messages": messages}
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def _transcript_messages(path: Path) -> list[dict[str, Any]] | None:
    """A Claude Code or Codex transcript read through its reader and turned into messages
    the way Memoir compacts a stored session; None for anything else."""
    from memoir.compaction.values import messages_from_events
    from memoir.ingest.discover import Format, detect_format
    from memoir.ingest.reader import read_bytes

    data = path.read_bytes()
    fmt = detect_format(data[: 256 * 1024])
    if fmt not in (Format.CLAUDE, Format.CODEX):
        return None
    events = read_bytes(data, fmt, session_id=path.stem).events
    return [dict(m) for m in messages_from_events(events).messages]


def _model(memoir: Any) -> Any:
    try:
        return service.model(memoir)
    except MemoirError:
        raise
    except Exception:  # the facade may not be wired yet: fall back to the offline model
        from memoir.llm import OfflineModel

        return OfflineModel()


@app.command()
def compact(
    file: Path | None = typer.Argument(
        None,
        help="Messages file (JSON array, {messages: [...]}, or JSONL) or a Claude Code / "
        "Codex transcript.",
    ),
    session: str | None = typer.Option(
        None,
        "--session",
        help="Compact a stored session instead of a file: its checkpoint is kept, and the "
        "memory extraction it triggers runs after the compaction is printed.",
    ),
    window: int = typer.Option(
        ..., "--window", "-w", min=1, help="The model's context window (tokens)."
    ),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE",
        help="Write the compacted message list to FILE (`-`: stdout) in the input's own "
        "format: a JSON array, the same {messages: [...]} object, or JSON Lines (a "
        "transcript or --session: JSON Lines of messages). The report goes to stderr "
        "with `-`.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Compact an agent's context below window × MEMOIR_COMPACT_THRESHOLD_RATIO: a summary
    of the older messages, then the most recent kept verbatim (MEMOIR_COMPACT_TAIL_RATIO of
    the threshold), a message too large for that kept as a stand-in."""
    from memoir.compaction.values import messages_from_events

    if (file is None) == (session is None):
        raise UsageError("give a messages FILE or --session SESSION, not both or neither")
    if output == "-" and as_json:
        raise UsageError("--output - and --json both write stdout; give one, or --output FILE")
    if output not in (None, "-"):
        _check_output(Path(output))
    with open_memoir(existing=session is not None) as memoir:
        if session is not None:
            sid = service.session_id(memoir, session)
            events = memoir.events(sid)
            source = MessagesFile(
                [dict(m) for m in messages_from_events(events).messages], "transcript"
            )
            result = memoir.compactor().compact_events(events, window=window, session_id=sid)
            name = sid
        else:
            assert file is not None
            source = read_messages(file)
            compactor = memoir.compactor(memory=False, model=_model(memoir))
            result = compactor.compact(source.messages, window=window)
            name = file.name
        if output is not None:
            _write_output(output, render_messages(source, [dict(m) for m in result.messages]))
        _report(result, source.messages, name, as_json, to_stderr=output == "-")
        if output not in (None, "-"):
            err_console.print(f"wrote {len(result.messages)} message(s) to {escape(output)}")


def _check_output(target: Path) -> None:
    """Refuse an ``--output`` that cannot be written before any work is done."""
    if target.is_dir():
        raise UsageError(f"--output: {target} is a folder; give a file name")
    if not target.parent.is_dir():
        raise UsageError(f"--output: the folder {target.parent} does not exist")


def _write_output(output: str, text: str) -> None:
    """``--output``: stdout for ``-``, else the file written whole or not at all (a file
    that was there keeps its permissions; a new one is owner-only, as Memoir's own)."""
    from memoir.home_files import write_text_atomic

    if output == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            console.on_broken_pipe()
        return
    target = Path(output)
    _check_output(target)
    try:
        write_text_atomic(target, text, tag="memoir", keep_mode=target.exists())
    except OSError as exc:
        raise UsageError(f"--output: cannot write {output}: {exc.strerror or exc}") from exc


_OMITTED = (
    ("context", "stood in"),  # kept as a stand-in naming it and where to re-read it
    ("request", "summarized unread"),  # summarized, but the summary saw only its stand-in
    ("dropped", "dropped"),  # removed by the backstop, no summary
)


def _report(
    result: Any, messages: list[dict[str, Any]], name: str, as_json: bool, *, to_stderr: bool
) -> None:
    reason = result.reason or ""
    if result.strategy == "truncate" and reason and not reason.startswith("nothing new"):
        err_console.print(
            f"[yellow]warning:[/yellow] no summary was written ({escape(reason)}): "
            f"{result.removed_count} older message(s) were dropped, not summarized",
            soft_wrap=True,
        )
    if as_json:
        print_json(result.to_json())
        return
    table = Table(title=f"memoir compact {name}", show_header=False)
    table.add_column("")
    table.add_column("")
    table.add_row("strategy", result.strategy + (f" ({result.reason})" if result.reason else ""))
    table.add_row("messages", f"{len(messages)} → {len(result.messages)}")
    table.add_row("tokens", f"{result.tokens_before} → {result.tokens_after}")
    table.add_row(
        "threshold",
        f"{result.threshold} (window {result.window} × {result.ratio}, {result.threshold_source})",
    )
    table.add_row("kept verbatim", str(result.kept_verbatim))
    table.add_row("removed", str(result.removed_count))
    table.add_row("tail budget", str(result.tail_budget))
    table.add_row("per-message cap", str(result.cap))
    if result.budgets_tried:
        table.add_row("output budget", " → ".join(str(b) for b in result.budgets_tried))
    for where, label in _OMITTED:
        omitted = [o for o in result.omitted if o.where == where]
        if not omitted:
            continue
        shown = [f"{o.tool or o.role} #{o.position} (~{o.tokens:,})" for o in omitted[:5]]
        more = len(omitted) - len(shown)
        total = sum(o.tokens for o in omitted)
        table.add_row(
            label,
            f"{len(omitted)} message(s), ~{total:,} tokens: {', '.join(shown)}"
            + (f" and {more} more" if more else ""),
        )
    out = err_console if to_stderr else console  # stdout holds the messages (--output -)
    out.print(table)
    if to_stderr:
        return
    head = next((m for m in result.messages if m.get("role") != "system"), None)
    if result.strategy == "summary" and head is not None and isinstance(head.get("content"), str):
        console.print(Text(printable(head["content"]), style="dim"))  # the summary it wrote


# ---- memoir remember ----


@app.command()
def remember(
    session: str = typer.Argument(..., help="Session id (a unique prefix will do)."),
    turn: int | None = typer.Option(
        None,
        "--turn",
        min=1,
        help="The user message to remember from (its event number; default: the latest).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remember what the user said in a session: durable facts, preferences and decisions,
    each with the exact words it came from (runs now; prints what was saved, or why not)."""
    from memoir.memory.recall import receipt_json

    with open_memoir(existing=True) as memoir:
        out = memoir.remember(session, turn)
        items = service.memories_json(memoir, list(out.items))
    receipt = out.receipt
    if as_json:
        print_json(
            {
                "outcome": receipt.outcome if receipt else "pending",
                "reason": (receipt.reason or None) if receipt else (out.waiting or out.error),
                "items": items,
                "receipt": receipt_json(receipt) if receipt else None,
            }
        )
        return
    if receipt is None:
        why = out.error or out.waiting or "unknown"
        err_console.print(
            f"not remembered yet: {escape(why)} (it is retried by the next "
            "trigger or `memoir memories recover`)",
            soft_wrap=True,
        )
        raise typer.Exit(1)
    if not items:
        console.print(_nothing_message(receipt.outcome, receipt.reason, receipt.items))
        return
    console.print(f"Remembered {len(items)} item(s):")
    for item in items:
        console.print(f"  [bold]{item['id'][:8]}[/bold] {escape(item['content'])}")
        for src in item["sources"]:
            console.print(f"      “{escape(src['quote'])}” — {src['exchange_id']}", style="dim")


def _nothing_message(outcome: str, reason: str, saved: int) -> str:
    """What `remember` says when it shows no item. Pure."""
    if saved:  # a receipt replayed: the items it saved were forgotten since
        return (
            f"Already remembered from this turn ({saved} item(s)), and forgotten since: "
            "nothing new to remember."
        )
    why = f" ({reason})" if reason else ""
    return f"Nothing to remember: {outcome.replace('_', ' ')}{escape(why)}."
