"""`memoir usage`: model calls and tokens by day and model, from the usage ledger."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import typer
from rich.table import Table

from memoir import service
from memoir.cli.app import app, console, open_memoir, print_json
from memoir.errors import NotFound

__all__ = ["usage"]


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
