"""`memoir users add|key|key rotate|list|revoke`: the users of `memoir serve` and their API
keys. A key is printed once, alone on stdout; only its hash is stored.

`local` owns the sessions synced from this machine: `users add` refuses the name, `users
key local` makes it a key (for the page over a non-loopback address, or another client)."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table
from typer.core import TyperGroup

from memoir import service
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
