"""`memoir users`, `jobs`, `usage`, `stats`, `verify` and `config`: the commands that look
after an installation.

`memoir users add|key|key rotate|list|revoke`: the users of `memoir serve` and their API
keys. A key is printed once, alone on stdout; only its hash is stored.

`local` owns the sessions synced from this machine: `users add` refuses the name, `users
key local` makes it a key (for the page over a non-loopback address, or another client).

`memoir worker` (take background jobs until stopped) and `memoir jobs list|show|cancel`.

`memoir usage`: model calls and tokens by day and model, from the usage ledger.

`memoir stats`: counts of what the home holds. `memoir verify`: the index checked against
the archive (``--repair`` rebuilds what it can), under the sync lock.

`memoir config`: the effective settings, where each came from, and what is wrong with
them — checked the way the commands that use them check them, so a bad value shows here
before a sync or a search trips on it.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from memoir import service
from memoir.cli.app import app, console, err_console, open_memoir, print_json, printable
from memoir.config import Settings
from memoir.errors import Busy, NotFound

__all__ = ["config", "env_name", "jobs_app", "stats", "usage", "users_app", "verify", "worker"]


# ---- memoir users ----

users_app = typer.Typer(help="Users of the HTTP API (memoir serve) and their API keys.")
app.add_typer(users_app, name="users")


@users_app.command("add")
def add(
    name: str = typer.Argument(..., help="The user's name (letters, digits, _ . @ -)."),
    label: str = typer.Option("", "--label", help="What this key is for (shown in list)."),
) -> None:
    """Create a user (or keep an existing one) and print a new API key for it, once: only
    its hash is stored. Clients send it as `Authorization: Bearer KEY`."""
    with open_memoir() as memoir:
        key = service.add_user(memoir, name, label=label)
    typer.echo(key)  # stdout holds the key alone: KEY=$(memoir users add NAME)
    typer.echo(f"the API key of {name}, shown once: only its hash is stored", err=True)


class _KeyGroup(TyperGroup):
    """`memoir users key NAME` is `memoir users key new NAME`: a name that is not one of
    the group's commands is the user of `new`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["new", *args]
        return super().parse_args(ctx, args)


key_app = typer.Typer(
    cls=_KeyGroup,
    help="Make an API key for a user (`memoir users key NAME`), or replace all its keys "
    "with one new key (`memoir users key rotate NAME`). A key is shown once.",
)
users_app.add_typer(key_app, name="key")

_NAME_HELP = "An existing user, or `local` (your synced sessions)."
_LABEL_HELP = "What this key is for (shown in list)."


@key_app.command("new")
def key(
    name: str = typer.Argument(..., help=_NAME_HELP),
    label: str = typer.Option("", "--label", help=_LABEL_HELP),
) -> None:
    """Print a new API key for an existing user, or for `local` — the owner of the sessions
    synced from this machine — once: only its hash is stored. Earlier keys stay valid
    (`memoir users key rotate NAME` replaces them, `memoir users revoke NAME` ends them)."""
    with open_memoir() as memoir:
        made = service.new_key(memoir, name, label=label)
    typer.echo(made)  # stdout holds the key alone: KEY=$(memoir users key local)
    typer.echo(f"a new API key of {name}, shown once: only its hash is stored", err=True)


@key_app.command("rotate")
def rotate(
    name: str = typer.Argument(..., help=_NAME_HELP),
    label: str = typer.Option("", "--label", help=_LABEL_HELP),
) -> None:
    """Print a new API key for a user, once, and revoke every earlier key of it in the same
    step: from the next request on, on every server reading this home or database, only
    the new key works."""
    with open_memoir() as memoir:
        made = service.rotate_key(memoir, name, label=label)
    typer.echo(made)  # stdout holds the key alone: KEY=$(memoir users key rotate NAME)
    typer.echo(f"the new API key of {name}, shown once; its earlier keys are revoked", err=True)


@users_app.command("list")
def list_users(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List users with how many live keys each has."""
    with open_memoir() as memoir:
        users = service.users(memoir)
    if as_json:
        print_json(
            [
                {
                    "name": u.name,
                    "created_at": u.created_at.isoformat() if u.created_at else None,
                    "keys": u.keys,
                }
                for u in users
            ]
        )
        return
    if not users:
        console.print("No users yet: memoir users add NAME")
        return
    table = Table(title="users")
    for column in ("name", "created", "live keys"):
        table.add_column(column)
    for u in users:
        created = u.created_at.strftime("%Y-%m-%d %H:%M") if u.created_at else ""
        table.add_row(u.name, created, str(u.keys))
    console.print(table)


@users_app.command("revoke")
def revoke(name: str = typer.Argument(..., help="The user whose keys to revoke.")) -> None:
    """Revoke every API key of a user (the user and its sessions stay)."""
    with open_memoir() as memoir:
        count = service.revoke_keys(memoir, name)
    console.print(f"Revoked {count} key(s) of {name}.")


# ---- memoir jobs ----

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


# ---- memoir usage ----


@app.command()
def usage(
    days: int = typer.Option(
        0, "--days", min=0, help="Only the last N days (0 = everything recorded)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show model calls (ok / failed) and tokens in/out, by day and model."""
    since = datetime.now(UTC) - timedelta(days=days) if days else None
    try:
        with open_memoir(existing=True) as memoir:
            totals = service.usage_report(memoir, since)
    except NotFound:  # no archive yet: no calls either, and none is made by asking
        totals = []
    if as_json:
        rows = [asdict(t) for t in totals]
        print_json(
            {
                "totals": rows,
                "calls": sum(t.calls for t in totals),
                "input_tokens": sum(t.input_tokens for t in totals),
                "output_tokens": sum(t.output_tokens for t in totals),
                "redacted": sum(t.redacted for t in totals),
            }
        )
        return
    if not totals:
        console.print("No model calls recorded yet.")
        return
    table = Table(title="model usage")
    for name in ("day", "model", "calls", "ok", "failed", "tokens in", "tokens out", "redacted"):
        table.add_column(
            name,
            justify="right" if name not in ("day", "model") else "left",
            no_wrap=name == "model",
        )
    for t in totals:
        table.add_row(
            t.day,
            t.model,
            str(t.calls),
            str(t.ok),
            str(t.failed),
            f"{t.input_tokens:,}",
            f"{t.output_tokens:,}",
            str(t.redacted),
        )
    table.add_row(
        "total",
        "",
        str(sum(t.calls for t in totals)),
        str(sum(t.ok for t in totals)),
        str(sum(t.failed for t in totals)),
        f"{sum(t.input_tokens for t in totals):,}",
        f"{sum(t.output_tokens for t in totals):,}",
        str(sum(t.redacted for t in totals)),
    )
    console.print(table)


# ---- memoir stats and verify ----


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
    from memoir.ingest.archive import sync_lock, sync_lock_to_read

    settings = Settings.from_env()
    if not repair:  # --repair rebuilds a lost database; a plain check makes none
        service.require_archive(settings, archive_will_do=True)
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


# ---- memoir config ----


def env_name(setting: str) -> str:
    """The environment variable that sets a setting: ``llm_timeout_s`` →
    ``MEMOIR_LLM_TIMEOUT_S`` (every setting is read from ``MEMOIR_`` + its name, checked by
    ``tests/cli/test_help_text.py`` against ``Settings.from_env``)."""
    return f"MEMOIR_{setting.upper()}"


@app.command()
def config(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the effective settings and where each one came from (secrets masked); exit 2
    when one of them would be refused.

    Each setting is named by the environment variable that sets it (MEMOIR_LLM_TIMEOUT_S);
    --json keys them by field name (llm_timeout_s), each with its "env"."""
    settings = Settings.from_env()
    rows = settings.describe()
    problems = service.settings_problems(settings)
    if as_json:
        data: dict[str, dict[str, object]] = {}
        for name, _, source in rows:  # JSON keeps types: null, numbers, lists
            data[name] = {"env": env_name(name), "value": settings.shown(name), "source": source}
            if name in problems:
                data[name]["problem"] = problems[name]
        print_json(data)
    else:
        table = Table(title="memoir settings", show_lines=False)
        table.add_column("variable")
        table.add_column("value")
        table.add_column("from")
        for name, value, source in rows:
            mark = " [red](refused)[/red]" if name in problems else ""
            table.add_row(escape(env_name(name)) + mark, escape(value), escape(source))
        console.print(table)
        for problem in problems.values():
            err_console.print(f"[red]error:[/red] {escape(problem)}", soft_wrap=True)
    if problems:
        raise typer.Exit(2)
