"""`memoir sync` and `embed`: the commands that fill the archive and the index.

``sync`` takes a single-instance lock (a second sync exits 0 at once), archives and indexes
what changed, then runs the summary pass and the memory pass — memory work a killed process
left, then the new ranges of sessions gone quiet (both unless ``--no-summaries``) — and ends
with a table.
With ``--embed`` it then lets go of the sync lock and computes the missing embeddings under
the embed lock (skipped when no embedder is installed, or another process embeds).
``--background`` starts a detached sync at low CPU priority that logs to
``<home>/logs/sync-YYYYMMDD.log`` and embeds unless ``--no-embed`` — what the Claude Code
SessionStart hook runs: the interactive sync stays fast, the background one catches up.
The interactive sync checks the model first (a missing API key is one line before any
work); the detached one archives and indexes regardless and logs the model error after,
so a bad key never leaves transcripts unarchived while agents delete them.

``embed`` computes the missing embeddings (the semantic search catch-up) with a bar.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from memoir import service
from memoir.cli.app import (
    app,
    console,
    err_console,
    open_memoir,
    print_json,
    state,
)
from memoir.config import Settings
from memoir.errors import Busy
from memoir.home_files import private_dir, private_file
from memoir.ingest.batches import SyncProgress, SyncReport
from memoir.memory import MemoryPassProgress
from memoir.search import DEFAULT_BATCH
from memoir.summaries.summary_pass import PassProgress

if TYPE_CHECKING:
    from memoir.search import BackfillResult
    from memoir.search.embedders import Embedder

__all__ = ["embed", "empty_scan_line", "sync_command"]


@contextmanager
def _bar(enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    bar = Progress(
        TextColumn("syncing"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[name]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    task = bar.add_task("sync", total=None, name="")
    started: list[bool] = []

    def update(p: SyncProgress) -> None:
        if not started:  # drawn from the first report on: an error before it (a read-only
            bar.start()  # home's lock file) is the only thing on stderr
            started.append(True)
        bar.update(task, completed=p.bytes_done, total=p.bytes_total, name=Path(p.path).name[:40])

    try:
        yield update
    finally:
        if started:
            bar.stop()


@contextmanager
def _pass_bar(
    enabled: bool, label: str
) -> Iterator[Callable[[PassProgress | MemoryPassProgress], None] | None]:
    """A pass's bar on stderr (gone when done): how many of the conversations due are done
    (``label``: summarizing, remembering), and the one under way. Drawn from the first
    report on, so a pass with nothing to do shows nothing."""
    if not enabled:
        yield None
        return
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[name]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    tasks: list[TaskID] = []

    def update(p: PassProgress | MemoryPassProgress) -> None:
        name = escape(f"{p.session_id[:8]} {p.project}"[:48]) if p.session_id else ""
        if not tasks:
            tasks.append(bar.add_task(label, total=p.total, name=name))
        # drawn now: one update per conversation, each worth seeing (a model call is slow)
        bar.update(tasks[0], completed=p.done, total=p.total, name=name, refresh=True)

    with bar:
        yield update


# the summary pass's counts in the sync table, as sentences read
_SUMMARY_ROWS = (
    ("summarized", "conversations summarized"),
    ("resummarized", "summaries refreshed (the conversation grew)"),
    ("failed", "summaries failed (tried again later)"),
    ("skipped_not_idle", "conversations still active (summarized once idle)"),
    ("deferred", "summaries left for the next sync (limit reached)"),
    ("busy", "summaries another process is writing"),
)


# the memory pass's counts in the sync table
_MEMORY_ROWS = (
    ("mined", "sessions mined for memories"),
    ("items", "memory items saved"),
    ("failed", "memory extractions failed (tried again next sync)"),
    ("denied", "sessions denied memory (incognito, switched off)"),
    ("active", "sessions still active (mined once idle)"),
    ("deferred", "sessions left for the next sync (memory limit reached)"),
    ("busy", "sessions whose memory another process is writing"),
)


def _memory_rows(table: Table, memory: dict[str, Any]) -> None:
    """The memory pass in the sync table: what it did (a count only when not 0, but the
    sessions mined always), or that it is off, or its error."""
    if memory.get("off"):
        table.add_row("memories from sync", f"off ({escape(str(memory['off']))})")
        return
    for key, name in _MEMORY_ROWS:
        if key == "mined" or memory.get(key):
            table.add_row(name, str(memory.get(key, 0)))
    if "error" in memory:
        table.add_row("memories", f"[red]{escape(str(memory['error']))}[/red]")


def _table(
    report: SyncReport,
    summaries: dict[str, Any] | None,
    embedded: dict[str, Any] | None,
    memory: dict[str, Any] | None = None,
) -> Table:
    table = Table(title="memoir sync", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    rows = [
        ("files scanned", report.files_scanned),
        ("files unchanged", report.files_unchanged),
        ("files copied to the archive", report.files_copied),
        ("files indexed", report.files_indexed),
        ("files re-indexed (rewritten)", report.files_reset),
        ("files ignored", report.files_ignored),
        ("exchanges added", report.exchanges_added),
        ("exchanges updated", report.exchanges_updated),
        ("lines skipped", report.lines_skipped),
        ("sessions removed (no-index marker, purge)", len(report.sessions_removed)),
    ]
    if report.files_indexed_elsewhere:
        rows.insert(5, ("files indexed by another process first", report.files_indexed_elsewhere))
    for name, value in rows:
        table.add_row(name, str(value))
    if summaries is not None:
        for key, name in _SUMMARY_ROWS:
            if key in summaries:
                table.add_row(name, str(summaries[key]))
        if "error" in summaries:
            table.add_row("summaries", f"[red]{escape(str(summaries['error']))}[/red]")
    if memory is not None:
        _memory_rows(table, memory)
    if embedded is not None:
        if "error" in embedded:
            table.add_row("embeddings", f"[red]{escape(str(embedded['error']))}[/red]")
        elif embedded.get("busy"):
            table.add_row("embeddings", "another memoir embed is running")
        else:
            table.add_row("exchanges embedded", str(embedded["embedded"]))
    table.add_row("seconds archiving and indexing", f"{report.duration_s:.2f}")
    return table


def _background(settings: Settings, argv: list[str]) -> Path:
    private_dir(settings.logs_dir)
    log = settings.logs_dir / f"sync-{datetime.now(UTC):%Y%m%d}.log"
    root = ["--debug"] if state.debug else []
    with private_file(log, "ab") as out:
        out.write(f"--- memoir sync started {datetime.now(UTC):%Y-%m-%d %H:%M:%S}Z\n".encode())
        out.flush()
        subprocess.Popen(
            [sys.executable, "-m", "memoir.cli", *root, "sync", *argv],
            preexec_fn=lambda: os.nice(10),  # in the child: yield the CPU to the user's work
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return log


def _note(message: str, as_json: bool, flag: str) -> None:
    """Why nothing was done: a line, or with ``--json`` a JSON object scripts can read."""
    if as_json:
        print_json({flag: True, "message": message})
    else:
        console.print(message)


@app.command("sync")
def sync_command(
    source: list[Path] = typer.Option(
        None, "--source", help="A transcript folder (repeatable); default: MEMOIR_SOURCES."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    summary_limit: int | None = typer.Option(
        None,
        "--summary-limit",
        min=0,
        help="Most summaries to write (default MEMOIR_SUMMARY_LIMIT).",
    ),
    memory_limit: int | None = typer.Option(
        None,
        "--memory-limit",
        min=0,
        help="Most quiet sessions to extract memories from (default MEMOIR_MEMORY_LIMIT).",
    ),
    no_summaries: bool = typer.Option(
        False, "--no-summaries", help="Index only: no summaries, no memories."
    ),
    background: bool = typer.Option(False, "--background", help="Run detached and return."),
    embed: bool | None = typer.Option(
        None,
        "--embed/--no-embed",
        help="Then compute missing embeddings (default: only in --background).",
    ),
    purge_excluded: bool = typer.Option(
        False,
        "--purge-excluded",
        help="Remove what is stored of projects MEMOIR_EXCLUDE_PROJECTS excludes "
        "(rows, archive copies, summaries).",
    ),
    follow_symlinks: bool = typer.Option(
        False,
        "--follow-symlinks",
        help="Also read symlinked transcripts that point out of their source folder.",
    ),
    detached: bool = typer.Option(False, "--detached", hidden=True),
) -> None:
    """Archive and index new or grown transcripts, then refresh due summaries and keep
    memories from the sessions gone idle."""
    settings = Settings.from_env()
    for folder in source or []:
        if not folder.is_dir():
            raise typer.BadParameter(f"{folder} is not a folder", param_hint="--source")
    if not source:
        service.check_sources(settings.sources)
    if settings.sync_disabled:
        _note("sync is disabled (MEMOIR_SYNC_DISABLED is set); nothing done", as_json, "disabled")
        return
    settings.ensure_home()
    if background:
        argv = [arg for path in source or [] for arg in ("--source", str(path.resolve()))]
        for flag, limit_given in (
            ("--summary-limit", summary_limit),
            ("--memory-limit", memory_limit),
        ):
            argv += [] if limit_given is None else [flag, str(limit_given)]
        flags = {"--no-summaries": no_summaries, "--purge-excluded": purge_excluded}
        argv += [flag for flag, on in {**flags, "--follow-symlinks": follow_symlinks}.items() if on]
        argv += ["--no-embed" if embed is False else "--embed", "--detached"]
        log = _background(settings, argv)
        if as_json:
            print_json({"started": True, "log": str(log)})
        else:
            console.print(f"sync started in the background; log: {log}")
        return
    limit = settings.summary_limit if summary_limit is None else summary_limit
    try:  # Memoir.sync: under the sync lock; then the secret re-scan and embedding on write
        with open_memoir() as memoir:
            if not no_summaries and not detached and limit > 0:
                service.model(memoir)  # a missing API key is one line here, before any work
            with _bar(not as_json) as progress:
                report = memoir.sync(
                    sources=source or None,
                    progress=progress,
                    purge_excluded=purge_excluded,
                    follow_symlinks=follow_symlinks,
                )
    except Busy:
        _note("another memoir sync is running; leaving it to finish", as_json, "busy")
        return
    summaries = memories = mined = embedded = None
    bars = not as_json and err_console.is_terminal
    if not no_summaries:  # after the sync lock is let go: model calls can take minutes, and
        # the next sync (a new session's hook) must not wait; each session's summary claim
        # keeps two passes from writing the same summary
        with open_memoir() as memoir, _pass_bar(bars, "summarizing") as progress:
            summaries = service.summarize_after_sync(memoir, limit, progress)
        # memory work a killed process left (checkpoints, queued, pending), then the new
        # ranges of the sessions gone quiet, at most the memory limit of them
        most = settings.memory_limit if memory_limit is None else memory_limit
        with open_memoir() as memoir:
            memories = service.recover_after_sync(memoir)
            with _pass_bar(bars and not service.read_only(memoir), "remembering") as progress:
                mined = service.remember_after_sync(memoir, most, progress)
    if embed:  # after the sync lock is let go: a long catch-up never holds up the next sync
        with open_memoir() as memoir:
            embedded = service.embed_after_sync(memoir)
    if as_json:
        print_json(
            {
                **report.as_dict(),
                "summaries": summaries,
                "memories": memories,
                "memory_pass": mined,
                "embeddings": embedded,
            }
        )
        if any(part is not None and part.get("setting") for part in (summaries, embedded)):
            raise typer.Exit(2)
        if report.errors:
            raise typer.Exit(1)
        return
    if report.files_scanned == 0:
        roots = source or settings.sources
        console.print(empty_scan_line([str(r) for r in roots], len(report.symlinks_left_out)))
    console.print(_table(report, summaries, embedded, mined))
    rows = (summaries or {}).get("rows") or []
    if rows:
        table = Table(title="summaries")
        for column in ("session", "project", "outcome", "detail"):
            table.add_column(column)
        for row in rows[:20]:
            table.add_row(
                *(escape(str(row.get(k, ""))) for k in ("session", "project", "outcome", "detail"))
            )
        console.print(table)
    for error in report.errors:
        err_console.print(f"[yellow]warning:[/yellow] {escape(error)}")
    if report.excluded_kept:
        count = len(report.excluded_kept)
        err_console.print(
            f"[yellow]warning:[/yellow] {count} conversation(s) of excluded projects were "
            "stored before the exclusion and are kept; `memoir sync --purge-excluded` "
            "removes them (rows, archive copies, summaries)"
        )
    _tell_left_out(report)
    if embedded is not None and embedded.get("error"):
        err_console.print(f"error: embeddings not computed: {escape(embedded['error'])}")
    if summaries is not None and summaries.get("setting"):
        err_console.print(f"error: summaries not written: {escape(summaries['error'])}")
    if mined is not None and mined.get("error"):
        err_console.print(f"error: memories not extracted: {escape(mined['error'])}")
    if any(part is not None and part.get("setting") for part in (summaries, embedded)):
        raise typer.Exit(2)
    if report.errors:
        count = len(report.errors)
        err_console.print(
            f"error: {count} {'file or folder' if count == 1 else 'files or folders'} could "
            "not be read (above); everything else is synced, and the next sync tries them again"
        )
        raise typer.Exit(1)


def empty_scan_line(roots: list[str], left_out: int) -> str:
    """What ``memoir sync`` says when it found no transcript to read under ``roots``
    (``left_out``: symlinked transcripts it found and left out, listed after it)."""
    if not roots:
        return (
            "no transcripts found (no sources configured); pass --source DIR or set MEMOIR_SOURCES"
        )
    where = ", ".join(roots)
    if left_out:
        return f"no transcripts read under {where}: {left_out} left out (listed below)"
    return f"no transcripts (*.jsonl, *.json) found under {where}"


def _tell_left_out(report: SyncReport) -> None:
    """Transcripts the sync did not store as sessions of their own, and why."""
    if report.duplicates:
        count = len(report.duplicates)
        console.print(
            f"{count} transcript(s) already stored from another folder (same session, same "
            "content) were not stored again:",
            style="dim",
        )
        for line in report.duplicates[:10]:
            console.print(f"  {escape(line)}", style="dim")
    for line in report.id_clashes:
        err_console.print(f"[yellow]warning:[/yellow] session id clash, both kept: {escape(line)}")
    for line in report.symlinks_left_out:
        err_console.print(f"[yellow]left out:[/yellow] {escape(line)}")


@app.command()
def embed(
    batch: int = typer.Option(
        DEFAULT_BATCH, "--batch", min=1, max=4096, help="Exchanges per batch."
    ),
    max_items: int | None = typer.Option(
        None, "--max", min=1, help="Stop after this many (the rest waits for the next run)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Embed the exchanges that have no vector yet, or no token states for re-ranking, then
    redo vectors embedded from an older release's recipe (needs the embeddings extra)."""
    with open_memoir(existing=True) as memoir:
        # before any bar is drawn: a read-only home is one line, as for sync and summarize
        service.ensure_writable(memoir, "memoir embed")
        embedder = service.embedder(memoir)
        try:
            if as_json or embedder is None or not err_console.is_terminal:
                # no embedder: embed_pending says why, in one line, with no bar before it
                result = service.embed_pending(memoir, batch=batch, max_items=max_items)
            else:
                with Progress(  # on stderr and gone when done, as sync's and summarize's
                    TextColumn("embedding"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeRemainingColumn(),
                    console=err_console,
                    transient=True,
                ) as bar:
                    task = bar.add_task("embed", total=_backlog(memoir, embedder, max_items))
                    result = service.embed_pending(
                        memoir,
                        batch=batch,
                        max_items=max_items,
                        progress=lambda n: bar.advance(task, n),
                    )
        except Busy:
            if as_json:
                print_json({"busy": True, "embedded": 0})
            else:
                console.print("another memoir embed is running; leaving it to finish")
            return
    _report(result, as_json)


def _backlog(memoir: Any, embedder: Embedder, max_items: int | None) -> int:
    """What the bar counts up to: the exchanges still to embed (at most ``max_items``)."""
    from memoir.search.embedders import TokenEmbedder

    left = service.embedding_backlog(
        memoir, embedder.name, with_tokens=isinstance(embedder, TokenEmbedder)
    )
    return left if max_items is None else min(left, max_items)


def _report(result: BackfillResult, as_json: bool) -> None:
    """What ``memoir embed`` did: a line, or its JSON."""
    if as_json:
        print_json(
            {"model": result.model, "embedded": result.embedded, "complete": result.complete}
        )
        return
    left = "" if result.complete else " (more left: run memoir embed again)"
    console.print(f"embedded {result.embedded} exchanges with {result.model}{left}")
