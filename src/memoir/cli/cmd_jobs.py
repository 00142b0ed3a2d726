"""`memoir worker` (take background jobs until stopped) and `memoir jobs list|show|cancel`."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

import typer
from rich.table import Table

from memoir import service
from memoir.cli.app import app, console, err_console, open_memoir, print_json
from memoir.errors import NotFound

__all__ = ["jobs_app", "worker"]

jobs_app = typer.Typer(help="Background jobs (summary regenerations): list, show, cancel.")
app.add_typer(jobs_app, name="jobs")


@app.command()
def worker(
    worker_id: str = typer.Option(
        None, "--id", help="This worker's name in the jobs table (default host:pid:random)."
    ),
) -> None:
    """Run background jobs until SIGTERM or Ctrl-C: abandoned jobs are resumed first, then
    queued ones taken; on stop, no new job is taken and the running one finishes or goes
    back to the queue for another worker."""
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    old = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with open_memoir() as memoir:
            err_console.print(
                f"memoir worker: taking jobs (heartbeat {memoir.settings.job_heartbeat_s:g} s); "
                "Ctrl-C to stop"
            )
            service.recover_memories_in_background(memoir)  # memory work a killed process left
            service.run_worker(memoir, stop, worker_id=worker_id)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    err_console.print("memoir worker: stopped")


@jobs_app.command("list")
def list_jobs(
    state: str = typer.Option(None, "--state", help="queued | running | completed | failed"),
    user: str = typer.Option(
        None, "--user", help="This user's jobs (default: the one `memoir --user` names)."
    ),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List jobs, newest first."""
    with open_memoir(existing=True) as memoir:
        found = memoir.jobs().list(state=state, user=user or memoir.user, limit=limit)
    if as_json:
        print_json({"jobs": [j.to_json() | {"user": j.user} for j in found]})
        return
    if not found:
        console.print("No jobs.")
        return
    table = Table(title="jobs")
    for name in (
        "id",
        "kind",
        "user",
        "session",
        "state",
        "progress",
        "worker",
        "created",
        "error",
    ):
        table.add_column(name)
    for j in found:
        table.add_row(
            j.id,
            j.kind,
            j.user,
            j.session_id,
            f"stalled (no heartbeat for {j.heartbeat_age_s:g} s)" if j.stalled else j.state,
            f"{j.phase} {j.completed}/{j.total}" if j.phase else "",
            j.worker or "",
            j.created_at.isoformat(timespec="seconds") if j.created_at else "",
            j.error,
        )
    console.print(table)


@jobs_app.command("show")
def show_job(
    job_id: str = typer.Argument(..., help="The job's id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show one job."""
    with open_memoir(existing=True) as memoir:
        job = _own_job(memoir, job_id)
    shown = job.to_json() | {"user": job.user}
    if as_json:
        print_json(shown)
        return
    for key, value in shown.items():
        if value not in (None, ""):
            console.print(f"[bold]{key}[/bold]: {value}")


@jobs_app.command("cancel")
def cancel_job(
    job_id: str = typer.Argument(..., help="The job's id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Cancel a queued or running job (its worker stops at its next progress report and
    writes nothing)."""
    with open_memoir(existing=True) as memoir:
        job = memoir.jobs().cancel(_own_job(memoir, job_id).id)
    if as_json:
        print_json(job.to_json() | {"user": job.user})
        return
    console.print(f"job {job.id}: {job.state}" + (f" ({job.error})" if job.error else ""))


def _own_job(memoir: Any, job_id: str) -> Any:
    """The job ``job_id`` of the command's user; another user's is "no job", as one that
    does not exist."""
    job = memoir.jobs().get(job_id, user=memoir.user)
    if job is None:
        raise NotFound(f"no job {job_id!r} (memoir jobs list shows them)")
    return job
