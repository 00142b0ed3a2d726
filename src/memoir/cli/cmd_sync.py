"""`memoir sync`, `stats`, `verify` and `demo`: the archive and index commands.

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
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
)
from rich.table import Table

from memoir import service
from memoir.cli.app import (
    app,
    console,
    err_console,
    open_memoir,
    print_json,
    printable,
    require_archive,
    state,
)
from memoir.config import Settings
from memoir.errors import Busy, ConfigError, MemoirError
from memoir.home_files import private_dir, private_file
from memoir.ingest.archive import sync_lock, sync_lock_to_read
from memoir.ingest.batches import SyncProgress, SyncReport
from memoir.memory.sync_pass import MemoryPassProgress
from memoir.summaries.summary_pass import PassProgress

__all__ = ["demo", "empty_scan_line", "stats", "sync_command", "verify"]


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


def _summary_pass(memoir: Any, limit: int, *, bar: bool = False) -> dict[str, Any]:
    """Run the summary pass (with ``bar``, showing its progress); its report as a dict. An
    error — a store failure, or (in a detached sync, which checks nothing up front: nobody
    is there to read a start-up error, and agents delete their transcripts) a model that
    cannot be used — is reported; the archive and index written before it stay."""
    try:
        with _pass_bar(bar, "summarizing") as progress:
            report = service.summarize_pending(memoir, limit=limit, progress=progress)
    except ConfigError as exc:
        return {"error": str(exc), "setting": True}
    except MemoirError as exc:
        return {"error": str(exc)}
    out = dict(report.as_dict())
    if report.stopped:  # the model cannot be used now: said once, no conversation charged
        out["error"] = f"the summary pass stopped: {report.stopped}"
        out["setting"] = report.stopped_by_setting
    return out


def _memory_pass(memoir: Any, limit: int, *, bar: bool = False) -> dict[str, Any] | None:
    """Extract memories from the synced sessions gone quiet (``service.remember_from_sync``);
    its report as a dict, or None on a read-only store. An error — a store failure, a model
    that cannot be built or used — is reported, never raised: the sync is done."""
    if service.read_only(memoir):
        return None
    try:
        with _pass_bar(bar, "remembering") as progress:
            report = service.remember_from_sync(memoir, limit=limit, progress=progress)
    except ConfigError as exc:
        return {"error": str(exc), "setting": True}
    except MemoirError as exc:
        return {"error": str(exc)}
    out = dict(report.as_dict())
    if report.stopped:
        out["error"] = f"the memory pass stopped: {report.stopped}"
        out["setting"] = True
    return out


def _memory_recovery(memoir: Any) -> dict[str, Any] | None:
    """Run memory work left unsettled (by a killed process or a failed model); its report
    as a dict, or None on a read-only store. An error is reported, never raised."""
    if service.read_only(memoir):
        return None
    try:
        return dict(asdict(service.recover_memories(memoir)))
    except MemoirError as exc:
        return {"error": str(exc)}


def _embed_pass(memoir: Any) -> dict[str, Any] | None:
    """Catch up on embeddings after a sync; its report as a dict, or None when no embedder
    is configured or installed. An error is reported, never raised: the sync is done."""
    try:
        if service.embedder(memoir) is None:
            return None
        result = service.embed_pending(memoir)
    except Busy:
        return {"busy": True, "embedded": 0}
    except ConfigError as exc:  # a bad MEMOIR_EMBEDDER: the command exits 2, as for summaries
        return {"error": str(exc), "setting": True}
    except MemoirError as exc:
        return {"error": str(exc)}
    return {"model": result.model, "embedded": result.embedded, "complete": result.complete}


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
            preexec_fn=_lower_priority,
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


def _lower_priority() -> None:
    """In the detached child, before it runs: yield the CPU to the user's own work."""
    os.nice(10)


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
        _check_sources(settings.sources)
    if settings.sync_disabled:
        _note("sync is disabled (MEMOIR_SYNC_DISABLED is set); nothing done", as_json, "disabled")
        return
    settings.ensure_home()
    if background:
        argv = [arg for path in source or [] for arg in ("--source", str(path.resolve()))]
        if summary_limit is not None:
            argv += ["--summary-limit", str(summary_limit)]
        if memory_limit is not None:
            argv += ["--memory-limit", str(memory_limit)]
        if no_summaries:
            argv.append("--no-summaries")
        if purge_excluded:
            argv.append("--purge-excluded")
        if follow_symlinks:
            argv.append("--follow-symlinks")
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
    summaries = None
    if not no_summaries:  # after the sync lock is let go: model calls can take minutes, and
        # the next sync (a new session's hook) must not wait; each session's summary claim
        # keeps two passes from writing the same summary
        with open_memoir() as memoir:
            summaries = _summary_pass(memoir, limit, bar=not as_json and err_console.is_terminal)
    memories = mined = None
    if not no_summaries:  # memory work a killed process left (checkpoints, queued, pending),
        # then the new ranges of the sessions gone quiet, at most the memory limit of them
        most = settings.memory_limit if memory_limit is None else memory_limit
        with open_memoir() as memoir:
            memories = _memory_recovery(memoir)
            mined = _memory_pass(memoir, most, bar=not as_json and err_console.is_terminal)
    embedded = None
    if embed:  # after the sync lock is let go: a long catch-up never holds up the next sync
        with open_memoir() as memoir:
            embedded = _embed_pass(memoir)
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


def _check_sources(sources: tuple[Path, ...] | list[Path]) -> None:
    """A source in MEMOIR_SOURCES that is there but is no folder is refused, as ``--source``
    refuses it (one missing is reported by the sync: a typo, or a folder not made yet)."""
    for folder in sources:
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ConfigError(
                f"MEMOIR_SOURCES names {folder}, which is not a folder; name the folders "
                "your transcripts are in"
            )


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
def stats(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Counts of what this Memoir home holds, for every user: the home owner's view of its
    size and health (the project list is `--user`'s)."""
    with open_memoir(existing=True) as memoir:
        data = service.stats(memoir)  # counts, the archive's size, summaries by state
        projects = service.projects(memoir)  # --user's projects
    if as_json:
        listed = [{"name": n, "folder": f, "sessions": c} for n, f, c in projects]
        print_json({**data, "project_list": listed})
        return
    table = Table(title="memoir stats", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in data.items():
        table.add_row(key.replace("_", " "), f"{value:,}" if isinstance(value, int) else str(value))
    console.print(table)
    if projects:  # by name, what --project takes, with the folder they ran in
        listing = Table(title="projects")
        for column in ("project", "folder", "sessions"):
            listing.add_column(column, justify="right" if column == "sessions" else "left")
        for name, folder, count in projects:
            shown = (escape(printable(name)), escape(printable(folder or "-")))
            listing.add_row(*shown, f"{count:,}")
        console.print(listing)


@app.command()
def verify(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    repair: bool = typer.Option(False, "--repair", help="Rebuild and re-index what can be."),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 3 when there are warnings (skipped lines) but no damage."
    ),
) -> None:
    """Check the index against the archive: exit 0 when intact (warnings, such as lines a
    transcript holds that could not be read, are listed and counted), 1 when damaged."""
    settings = Settings.from_env()
    if not repair:  # --repair rebuilds a lost database; a plain check makes none
        require_archive(settings, archive_will_do=True)
    settings.ensure_home()
    try:  # a sync half-way through a file would read as problems that are not there
        lock = sync_lock(settings.home) if repair else sync_lock_to_read(settings.home)
        with lock, open_memoir() as memoir:  # --repair rebuilds a lost database
            report = service.verify(memoir, repair=repair)  # a plain verify writes nothing
    except Busy:
        again = "verify --repair" if repair else "verify"
        raise Busy(f"a memoir sync is running; run {again} again when it is done") from None
    if as_json:
        print_json(report.as_dict())
    else:
        for item in report.problems:
            console.print(f"[red]{item.kind}[/red] {escape(item.where)} {escape(item.detail)}")
        for item in report.warnings:
            console.print(
                f"[yellow]{item.kind}[/yellow] {escape(item.where)} {escape(item.detail)}"
            )
        for note in report.unrepaired:
            err_console.print(f"[yellow]not repaired:[/yellow] {escape(note)}")
        rescanned = report.secret_rescan or {"total": {}, "finished": True}
        changed = {t: n["changed"] for t, n in rescanned["total"].items() if n["changed"]}
        if changed or not rescanned["finished"]:
            what = ", ".join(f"{n} {t}" for t, n in changed.items()) or "nothing yet"
            left = "done" if rescanned["finished"] else "the rest at the next sync"
            console.print(f"secret re-scan of derived text: masked or forgot {what} ({left})")
        state = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        console.print(
            f"verify: {state}; {report.sources_checked} transcripts indexed, "
            f"{report.archive_files} archived, {len(report.warnings)} warning(s)"
            + (f", {report.repaired} repaired" if repair else "")
        )
    if not report.ok:
        raise typer.Exit(1)
    if strict and report.warnings:
        raise typer.Exit(3)


@app.command()
def demo(
    home: Path | None = typer.Option(
        None,
        "--home",
        help="Build the demo's home here (kept): a new or empty folder, or one an earlier "
        "demo made; any other is refused.",
    ),
    keep: bool = typer.Option(
        False, "--keep", help="Keep the temporary home and print how to use it."
    ),
) -> None:
    """Sync a bundled sample corpus into a home of its own and tour what Memoir found."""
    from memoir.demo.tour import run_demo

    run_demo(console, home, keep=keep)
