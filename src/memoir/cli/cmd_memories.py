"""`memoir remember` and `memoir memories …`: long-term memory from the user's own words."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from memoir.cli.app import app, console, err_console, open_memoir, print_json
from memoir.errors import ConfigError, NotFound
from memoir.store.memory_rows import MemoryItemRow

__all__ = ["memories", "remember"]

memories = typer.Typer(
    help="Long-term memories: list, show, search, export, forget; switch extraction off or "
    "on; recover unsettled work.",
    no_args_is_help=True,
)
app.add_typer(memories, name="memories")


def _json_items(memoir: Any, items: list[MemoryItemRow]) -> list[dict[str, Any]]:
    from memoir.memory.present import exchange_finder, item_json  # the engine loads on use

    find = exchange_finder(memoir.store.exchanges.of)
    return [item_json(i, find) for i in items]


def _table(items: list[MemoryItemRow], title: str) -> Table:
    table = Table(title=title)
    for name in ("id", "kind", "scope", "memory", "keys", "session"):
        table.add_column(name, overflow="fold")
    for i in items:
        table.add_row(
            i.id[:8], i.kind, i.scope, escape(i.content), ", ".join(i.keys), i.session_id[:12]
        )
    return table


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
    from memoir.memory.present import receipt_json

    with open_memoir(existing=True) as memoir:
        out = memoir.remember(session, turn)
        items = _json_items(memoir, list(out.items))
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
        reason = f" ({receipt.reason})" if receipt.reason else ""
        console.print(f"Nothing to remember: {receipt.outcome}{escape(reason)}.")
        return
    console.print(f"Remembered {len(items)} item(s):")
    for item in items:
        console.print(f"  [bold]{item['id'][:8]}[/bold] {escape(item['content'])}")
        for src in item["sources"]:
            console.print(f"      “{escape(src['quote'])}” — {src['exchange_id']}", style="dim")


@memories.command("list")
def list_items(
    project: str | None = typer.Option(None, "--project", help="Only this project."),
    session: str | None = typer.Option(None, "--session", help="Only this session."),
    kind: str | None = typer.Option(
        None, "--kind", help="fact, preference, decision, plan or constraint."
    ),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List remembered items, newest first."""
    with open_memoir(existing=True) as memoir:
        items = memoir.store.memory_items.find(
            project=project, session_id=session, kind=kind, limit=limit
        )
        if as_json:
            print_json({"items": _json_items(memoir, items)})
            return
    if not items:
        console.print("No memories yet (`memoir remember SESSION`, or compact a session).")
        return
    console.print(_table(items, f"{len(items)} memories"))


def _item(memoir: Any, item_id: str) -> MemoryItemRow:
    item: MemoryItemRow | None = memoir.store.memory_items.get(item_id)
    if item is None:
        raise NotFound(f"no memory item {item_id!r} (`memoir memories list` shows their ids)")
    return item


@memories.command()
def show(
    item_id: str = typer.Argument(..., help="Item id (a unique prefix of 4+ characters)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """One item with each quote it came from and the exchange that holds it."""
    with open_memoir(existing=True) as memoir:
        (data,) = _json_items(memoir, [_item(memoir, item_id)])
    if as_json:
        print_json(data)
        return
    console.print(f"[bold]{escape(data['content'])}[/bold]")
    console.print(
        f"{data['kind']} · {data['scope']} · keys: {escape(', '.join(data['keys']))} · "
        f"project {escape(data['project'])} · {data['created_at'][:19]}",
        soft_wrap=True,
    )
    for src in data["sources"]:
        console.print(f"  “{escape(src['quote'])}”")
        console.print(f"    memoir show {src['exchange_id'] or data['session_id']}", style="dim")


@memories.command()
def search(
    query: str = typer.Argument(..., help="Words to look for in items, keys and quotes."),
    limit: int = typer.Option(20, "--limit", min=1),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Find remembered items by their words."""
    from memoir.memory.present import search_items

    with open_memoir(existing=True) as memoir:
        found = search_items(memoir.store.memory_items.find(), query, limit)
        if as_json:
            print_json({"query": query, "items": _json_items(memoir, found)})
            return
    if not found:
        console.print(f"No memory holds {escape(query)!r}.")
        return
    console.print(_table(found, f"memories matching {escape(query)!r}"))


@memories.command()
def export(
    out: Path | None = typer.Option(None, "--out", help="Write to this file (default: stdout)."),
) -> None:
    """Every item as JSON Lines (one item per line, with its quotes)."""
    with open_memoir(existing=True) as memoir:
        rows = _json_items(memoir, memoir.store.memory_items.find())
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if out is None:
        typer.echo(lines, nl=False)
    else:
        out.write_text(lines, encoding="utf-8")
        err_console.print(f"{len(rows)} item(s) written to {out}")


@memories.command()
def forget(item_id: str = typer.Argument(..., help="Item id (or a unique prefix).")) -> None:
    """Delete an item and its quotes (the conversation itself stays in the archive)."""
    with open_memoir(existing=True) as memoir:
        item = _item(memoir, item_id)
        memoir.store.memory_items.forget(item.id)
    console.print(f"Forgot {item.id[:8]}: {escape(item.content)}")


def _switch(enabled: bool, session: str | None, project: str | None) -> None:
    if (session is None) == (project is None):
        raise ConfigError("give --session SESSION or --project PROJECT")
    with open_memoir(existing=True) as memoir:
        memoir.set_memory(enabled, session=session, project=project)
    what = f"session {session}" if session else f"project {project}"
    state = "on" if enabled else "off (what is said meanwhile is never extracted)"
    console.print(f"Memory extraction for {escape(what)}: {state}.")


@memories.command()
def off(
    session: str | None = typer.Option(None, "--session"),
    project: str | None = typer.Option(None, "--project"),
) -> None:
    """Stop extracting memories from a session or a project."""
    _switch(False, session, project)


@memories.command()
def on(
    session: str | None = typer.Option(None, "--session"),
    project: str | None = typer.Option(None, "--project"),
) -> None:
    """Extract memories from a session or a project again (from now on)."""
    _switch(True, session, project)


@memories.command()
def recover(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Run memory work left unsettled: checkpoints not yet extracted, queued requests and
    pending failures (what `memoir sync` does before it returns)."""
    with open_memoir(existing=True) as memoir:
        report = memoir.recover_memories()
    if as_json:
        print_json(asdict(report))
        return
    console.print(
        f"{report.settled} operation(s) settled over {report.sessions} session(s); "
        f"{report.checkpoints} checkpoint(s) queued again, {report.pending} failure(s) "
        f"pending, {report.busy} session(s) busy elsewhere."
    )


@memories.command()
def receipts(
    session: str | None = typer.Option(None, "--session", help="Only this session."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """What each memory operation settled on (outcome, reason, range, model, prompt)."""
    from memoir.memory.present import receipt_json

    with open_memoir(existing=True) as memoir:
        rows = memoir.store.memory.receipts(session)
    data = [receipt_json(r) for r in rows]
    if as_json:
        print_json({"receipts": data})
        return
    table = Table(title=f"{len(rows)} memory receipts")
    for name in ("session", "trigger", "outcome", "reason", "events", "items", "calls"):
        table.add_column(name)
    for r in data:
        table.add_row(
            r["session_id"][:12],
            r["trigger"],
            r["outcome"],
            r["reason"] or "",
            f"{r['range'][0] + 1}–{r['range'][1]}",
            str(r["items"]),
            str(r["model_calls"]),
        )
    console.print(table)
