"""`memoir config`: the effective settings and where each came from."""

from __future__ import annotations

import typer
from rich.table import Table

from memoir.cli.app import app, console, print_json
from memoir.config import Settings

__all__ = ["config"]


@app.command()
def config(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the effective settings and where each one came from (secrets masked)."""
    settings = Settings.from_env()
    rows = settings.describe()
    if as_json:
        print_json({name: {"value": value, "source": source} for name, value, source in rows})
        return
    table = Table(title="memoir settings", show_lines=False)
    table.add_column("setting")
    table.add_column("value")
    table.add_column("from")
    for name, value, source in rows:
        table.add_row(name, value, source)
    console.print(table)
