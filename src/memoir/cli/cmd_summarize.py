"""`memoir summarize SESSION`: the episodic summarizer over one stored session."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.progress import (
    BarColumn,
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
)
from memoir.errors import Busy, MemoirError, UsageError
from memoir.summaries.episodic import Progress as ProgressFn
from memoir.summaries.session import RunMode, SessionRun

__all__ = ["summarize"]


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[ProgressFn | None]:
    if not enabled:
        yield None
        return
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
