"""`memoir remember` and `memoir memories …`: long-term memory from the user's own words."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from memoir.cli.app import app, console, err_console, open_memoir, print_json, require_query
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
    from memoir.secrets import mask  # shown masked, as the JSON is (memory.present)

    table = Table(title=title)
    for name in ("id", "kind", "scope", "memory", "keys", "session"):
        table.add_column(name, overflow="fold")
    for i in items:
        table.add_row(
            i.id[:8], i.kind, i.scope, escape(mask(i.content)), ", ".join(i.keys), i.session_id[:12]
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


_KIND_HELP = "fact, preference, decision, plan or constraint (repeat for several)."


@memories.command("list")
def list_items(
    project: str | None = typer.Option(None, "--project", help="Only this project."),
    session: str | None = typer.Option(None, "--session", help="Only this session."),
    kind: str | None = typer.Option(
        None, "--kind", help="fact, preference, decision, plan or constraint."
    ),
    history: bool = typer.Option(
        False, "--history", help="Superseded items too (what was true before)."
    ),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List remembered items, newest first."""
    with open_memoir(existing=True) as memoir:
        items = memoir.store.memory_items.find(
            project=_project(memoir, project),
            session_id=session,
            kind=kind,
            limit=limit,
            history=history,
        )
        if as_json:
            print_json({"items": _json_items(memoir, items)})
            return
    if not items:
        console.print("No memories yet (`memoir remember SESSION`, or compact a session).")
        return
    console.print(_table(items, f"{len(items)} memories"))


def _project(memoir: Any, project: str | None) -> str | None:
    """``--project`` as a name, a folder or the folder's last part."""
    if project is None:
        return None
    from memoir.ingest.detect import project_name
    from memoir.search.session_ref import resolve_project

    return resolve_project(memoir.store.sessions, project, safe=project_name)


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
    """One item with each quote it came from, the exchange that holds it, and its history
    (what it superseded, what superseded it)."""
    from memoir.secrets import mask  # shown masked, as the item's JSON is

    with open_memoir(existing=True) as memoir:
        item = _item(memoir, item_id)
        (data,) = _json_items(memoir, [item])
        chain = memoir.memory_history(item.id)
        data["history"] = [
            {"id": c.id, "content": mask(c.content), **_validity(c)}
            for c in chain
            if c.id != item.id
        ]
    if as_json:
        print_json(data)
        return
    console.print(f"[bold]{escape(data['content'])}[/bold]")
    state = (
        "current" if data["superseded_by"] is None else f"superseded by {data['superseded_by'][:8]}"
    )
    console.print(
        f"{data['kind']} · {data['scope']} · keys: {escape(', '.join(data['keys']))} · "
        f"project {escape(data['project'])} · {data['created_at'][:19]} · {state}",
        soft_wrap=True,
    )
    for src in data["sources"]:
        console.print(f"  “{escape(src['quote'])}”")
        console.print(f"    memoir show {src['exchange_id'] or data['session_id']}", style="dim")
    for h in data["history"]:
        when = f"{(h['valid_from'] or '')[:10]} → {(h['valid_until'] or 'now')[:10]}"
        console.print(f"  history {h['id'][:8]} ({when}): {escape(h['content'])}", style="dim")


def _validity(item: MemoryItemRow) -> dict[str, str | None]:
    return {
        "valid_from": item.valid_from.isoformat() if item.valid_from else None,
        "valid_until": item.valid_until.isoformat() if item.valid_until else None,
    }


@memories.command()
def search(
    query: str = typer.Argument(..., help="What to recall (words of the items and their keys)."),
    project: str | None = typer.Option(
        None, "--project", help="This project's items, with the global ones."
    ),
    scope: str | None = typer.Option(None, "--scope", help="global or project."),
    kind: list[str] = typer.Option([], "--kind", help=_KIND_HELP),
    as_of: str | None = typer.Option(
        None, "--as-of", help="What was true then (a date or time, as search --after takes it)."
    ),
    history: bool = typer.Option(False, "--history", help="Superseded items too."),
    limit: int = typer.Option(10, "--limit", min=1, max=1000),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Recall remembered items: full text over their words and keys, fused with meaning
    when semantic search is installed; each with the quotes it came from."""
    require_query(query)
    at = _when(as_of)
    with open_memoir(existing=True) as memoir:
        found = memoir.recall(
            query,
            project=_project(memoir, project),
            scope=scope,
            kinds=kind,
            as_of=at,
            history=history,
            limit=limit,
        )
        items = [r.item for r in found]
        if as_json:
            rows = _json_items(memoir, items)
            for row, r in zip(rows, found, strict=True):
                row["score"] = round(r.score, 6)
            print_json({"query": query, "items": rows})
            return
    if not items:
        console.print(f"No memory answers {escape(query)!r}.")
        return
    console.print(_table(items, f"memories for {escape(query)!r}"))


def _when(raw: str | None) -> datetime | None:
    from memoir.search.dates import parse_when

    return None if raw is None else parse_when(raw, option="--as-of")


@memories.command()
def context(
    project: str | None = typer.Option(
        None, "--project", help="This project's items, with the global ones."
    ),
    budget: int = typer.Option(800, "--budget", min=0, help="At most this many tokens."),
    query: str | None = typer.Option(None, "--query", help="Rank by this instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The block of memories an agent prepends to its system prompt, within a budget."""
    with open_memoir(existing=True) as memoir:
        block = memoir.memory_context(
            project=_project(memoir, project), budget_tokens=budget, query=query
        )
    if as_json:
        print_json(block.as_json())
        return
    if not block.text:
        err_console.print("No memories fit (or none yet).")
        return
    typer.echo(block.text)
    err_console.print(
        f"{len(block.items)} item(s), {block.tokens} of {budget} tokens"
        + (f"; {block.left_out} left out" if block.left_out else "")
    )


@memories.command()
def export(
    out: Path | None = typer.Option(None, "--out", help="Write to this file (default: stdout)."),
) -> None:
    """Every item (history included) and tombstone as JSON Lines, for `memories import`."""
    with open_memoir(existing=True) as memoir:
        lines = [line + "\n" for line in memoir.export_memories()]
    if out is None:
        typer.echo("".join(lines), nl=False)
    else:
        from memoir.atomic import write_atomic

        data = "".join(lines).encode("utf-8")
        write_atomic(out, lambda f: f.write(data))
        err_console.print(f"{len(lines)} line(s) written to {out}")


@memories.command("import")
def import_(
    path: Path = typer.Argument(..., help="A file `memoir memories export` wrote ('-': stdin)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Read an export into this home; items already here gain the quotes they lacked.
    Every line is checked first: one bad line and nothing is imported."""
    import sys

    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    with open_memoir() as memoir:
        report = memoir.import_memories(text.splitlines())
    if as_json:
        print_json(asdict(report))
        return
    console.print(
        f"Imported {report.items} new item(s); {report.merged} merged into items already "
        f"here, {report.already} already here, {report.forgotten} left out (forgotten "
        f"here); {report.tombstones} tombstone(s)."
    )


@memories.command()
def forget(
    item_id: str | None = typer.Argument(None, help="Item id (or a unique prefix)."),
    session: str | None = typer.Option(None, "--session", help="Every item with evidence in it."),
    project: str | None = typer.Option(None, "--project", help="Every item of this project."),
    matching: str | None = typer.Option(
        None, "--matching", help="Every item holding all these words."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Forget items (with what they superseded): they are deleted, and the quotes they came
    from are never extracted again. The conversation itself stays in the archive."""
    chosen = [x for x in (item_id, session, project, matching) if x is not None]
    if len(chosen) != 1:
        raise ConfigError("give one of: ITEM_ID, --session, --project, --matching")
    with open_memoir(existing=True) as memoir:
        if item_id is None and not yes:
            what = (
                f"session {session}"
                if session
                else (f"project {project}" if project else f"items matching {matching!r}")
            )
            if not typer.confirm(f"Forget every memory of {what}?", err=True):
                raise typer.Exit(1)
        gone = memoir.forget_memories(
            item=item_id, session=session, project=project, matching=matching
        )
    from memoir.secrets import mask  # shown masked, as every item is

    if as_json:
        print_json({"forgotten": [{"id": i.id, "content": mask(i.content)} for i in gone]})
        return
    if not gone:
        console.print("Nothing to forget.")
        return
    for i in gone:
        console.print(f"Forgot {i.id[:8]}: {escape(mask(i.content))}")


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
