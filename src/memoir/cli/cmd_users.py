"""`memoir users add|key|list|revoke`: the users of `memoir serve` and their API keys.

`local` owns the sessions synced from this machine: `users add` refuses the name, `users
key local` makes it a key (for the page over a non-loopback address, or another client)."""

from __future__ import annotations

import typer
from rich.table import Table

from memoir.cli.app import app, console, open_memoir, print_json

__all__ = ["users_app"]

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
        key = memoir.store.users.add(name, label=label)
    typer.echo(key)  # stdout holds the key alone: KEY=$(memoir users add NAME)
    typer.echo(f"the API key of {name}, shown once: only its hash is stored", err=True)


@users_app.command("key")
def key(
    name: str = typer.Argument(..., help="An existing user, or `local` (your synced sessions)."),
    label: str = typer.Option("", "--label", help="What this key is for (shown in list)."),
) -> None:
    """Print a new API key for an existing user, or for `local` — the owner of the sessions
    synced from this machine — once: only its hash is stored. Earlier keys stay valid
    (`memoir users revoke NAME` ends them all)."""
    with open_memoir() as memoir:
        made = memoir.store.users.new_key(name, label=label)
    typer.echo(made)  # stdout holds the key alone: KEY=$(memoir users key local)
    typer.echo(f"a new API key of {name}, shown once: only its hash is stored", err=True)


@users_app.command("list")
def list_users(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List users with how many live keys each has."""
    with open_memoir() as memoir:
        users = memoir.store.users.list()
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
        count = memoir.store.users.revoke(name)
    console.print(f"Revoked {count} key(s) of {name}.")
