"""`memoir memories …`: the long-term memory kept from the user's own words — list, show,
search, context, export and import, forget, the switches, recovery and receipts (``memoir
remember``, which runs extraction now, is :mod:`memoir.cli.cmd_summarize`'s)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from memoir import service
from memoir.cli.app import (
    app,
    console,
    err_console,
    open_memoir,
    print_json,
    require_query,
)
from memoir.errors import ConfigError, NotFound, UsageError

if TYPE_CHECKING:
    from memoir.service import MemoryItem

__all__ = ["memories"]

memories = typer.Typer(
    help="Long-term memories: list, show, search, export, forget; switch extraction off or "
    "on; recover unsettled work.",
    no_args_is_help=True,
)
app.add_typer(memories, name="memories")


def _table(items: list[MemoryItem], title: str) -> Table:
    from memoir.secrets import mask  # shown masked, as the JSON is (memory.present)

    table = Table(title=title)
    for name in ("id", "kind", "scope", "memory", "keys", "session"):
        table.add_column(name, overflow="fold")
    for i in items:
        table.add_row(
            i.id[:8], i.kind, i.scope, escape(mask(i.content)), ", ".join(i.keys), i.session_id[:12]
        )
    return table


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
    _check_kind(kind)
    with open_memoir(existing=True) as memoir:
        items = service.memory_items(
            memoir,
            project=_project(memoir, project),
            session_id=_session(memoir, session),
            kind=kind,
            limit=limit,
            history=history,
        )
        if as_json:
            print_json({"items": service.memories_json(memoir, items)})
            return
    if not items:
        filtered = any(x is not None for x in (project, session, kind))
        console.print(
            "No memories match these filters."
            if filtered
            else "No memories yet (`memoir sync` extracts them from sessions once idle; "
            "`memoir remember SESSION` at once)."
        )
        return
    console.print(_table(items, f"{len(items)} memories"))


def _project(memoir: Any, project: str | None) -> str | None:
    """``--project`` as a name, a folder or the folder's last part (NotFound if none)."""
    return None if project is None else str(service.memory_project(memoir, project))


def _session(memoir: Any, session: str | None) -> str | None:
    """``--session`` as an id or a unique prefix of one (NotFound if none)."""
    if session is None:
        return None
    return service.session_id(memoir, session)  # of --user's sessions


def _check_kind(kind: str | None) -> None:
    from memoir.memory.values import ItemKind

    known = [k.value for k in ItemKind]
    if kind is not None and kind not in known:
        raise UsageError(f"--kind {kind!r} is not a kind; kinds: {', '.join(known)}")


def _item(memoir: Any, item_id: str) -> MemoryItem:
    item: MemoryItem | None = service.memory_item(memoir, item_id)
    if item is None:
        shown = item_id if len(item_id) <= 40 else item_id[:40] + "…"
        raise NotFound(f"no memory item {shown!r} (`memoir memories list` shows their ids)")
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
        (data,) = service.memories_json(memoir, [item])
        chain = memoir.memories.history(item.id)
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


def _validity(item: MemoryItem) -> dict[str, str | None]:
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
        rows = service.memories_json(memoir, [r.item for r in found])
        if as_json:
            for row, r in zip(rows, found, strict=True):
                row["score"] = round(r.score, 6)
            print_json({"query": query, "items": rows})
            return
    if not rows:
        console.print(f"No memory answers {escape(query)!r}.")
        return
    noun = "memory" if len(rows) == 1 else "memories"
    console.print(f"[bold]{len(rows)} {noun} for {escape(query)!r}[/bold], best first")
    for rank, row in enumerate(rows, 1):
        _print_ranked(rank, row)


_QUOTES_SHOWN = 3  # the rest are one `memoir memories show ID` away


def _print_ranked(rank: int, row: dict[str, Any]) -> None:
    """One recalled item: its rank, id, kind, scope and keys, its words, and the quotes it
    came from with the exchange holding each (masked, as the JSON is)."""
    state = "" if row["superseded_by"] is None else f" · superseded by {row['superseded_by'][:8]}"
    console.print(
        f"{rank:>2}. [bold]{row['id'][:8]}[/bold] {row['kind']} · {row['scope']} · "
        f"keys: {escape(', '.join(row['keys']))}{state}",
        soft_wrap=True,
    )
    console.print(f"    {escape(row['content'])}", soft_wrap=True)
    sources = row["sources"]
    for src in sources[:_QUOTES_SHOWN]:
        where = src["exchange_id"] or src["session_id"]
        console.print(
            f"      “{escape(src['quote'])}” — {escape(where)}", style="dim", soft_wrap=True
        )
    if len(sources) > _QUOTES_SHOWN:
        more = len(sources) - _QUOTES_SHOWN
        console.print(f"      … {more} more (memoir memories show {row['id'][:8]})", style="dim")


def _when(raw: str | None) -> datetime | None:
    from memoir.search.request import parse_when

    # a day, a month or a year is taken whole: what held at its end (as README says)
    return None if raw is None else parse_when(raw, end_of_day=True, option="--as-of")


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
    if query is not None:
        require_query(query)
    with open_memoir(existing=True) as memoir:
        block = memoir.context(project=_project(memoir, project), budget_tokens=budget, query=query)
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
    out: Path | None = typer.Option(
        None, "--out", help="Write to this file ('-' or none: stdout)."
    ),
) -> None:
    """Every item (history included) and tombstone as JSON Lines, for `memories import`."""
    with open_memoir(existing=True) as memoir:
        lines = [line + "\n" for line in memoir.memories.export()]
    if out is None or str(out) == "-":
        typer.echo("".join(lines), nl=False)
        return
    from memoir.home_files import write_atomic
    from memoir.memory.keeping import os_reason

    data = "".join(lines).encode("utf-8")
    try:
        write_atomic(out, lambda f: f.write(data))
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write it ({os_reason(exc)})") from None
    err_console.print(f"{len(lines)} line(s) written to {out}")


@memories.command("import")
def import_(
    path: Path = typer.Argument(..., help="A file `memoir memories export` wrote ('-': stdin)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Read an export into this home; items already here gain the quotes they lacked.
    Every line is checked first: one bad line and nothing is imported."""
    from memoir.memory.keeping import read_export

    lines = read_export(path)
    with open_memoir() as memoir:
        report = memoir.memories.import_lines(lines)
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
        None, "--matching", help="Every item holding all these words (literally, no operators)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Forget items (with what they superseded): they are deleted, and the quotes they came
    from are never extracted again. The conversation itself stays in the archive. Asks
    first unless --yes (no answer, as at the end of piped input, is no)."""
    chosen = [x for x in (item_id, session, project, matching) if x is not None]
    if len(chosen) != 1:
        raise ConfigError("give one of: ITEM_ID, --session, --project, --matching")
    if matching is not None and not service.has_words(matching):
        raise UsageError(f"--matching {matching!r} has no words to match")
    from memoir.secrets import mask  # shown masked, as every item is

    with open_memoir(existing=True) as memoir:
        # what is named must exist before anything is asked
        if item_id is not None:
            item = _item(memoir, item_id)
            item_id = item.id
            what = f"memory {item.id[:8]} ({mask(item.content)[:80]})"
        elif session is not None:
            session = _session(memoir, session)
            what = f"every memory of session {session}"
        elif project is not None:
            project = _project(memoir, project)
            what = f"every memory of project {project}"
        else:
            what = f"every memory holding all of {matching!r}"
        if not yes and not _confirm(f"Forget {what}?"):
            err_console.print("Nothing forgotten.")
            raise typer.Exit(1)
        gone = memoir.forget(item=item_id, session=session, project=project, matching=matching)
    if as_json:
        print_json({"forgotten": [{"id": i.id, "content": mask(i.content)} for i in gone]})
        return
    if not gone:
        console.print("Nothing to forget.")
        return
    for i in gone:
        console.print(f"Forgot {i.id[:8]}: {escape(mask(i.content))}")


def _confirm(question: str) -> bool:
    """Ask on stderr, read one line of stdin: yes only for y / yes; the end of the input
    (nothing piped, ^D) is no. Ctrl-C still interrupts."""
    import sys

    sys.stderr.write(f"{question} [y/N]: ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:
        sys.stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


def _switch(enabled: bool, session: str | None, project: str | None) -> None:
    if session is not None and project is not None:
        raise ConfigError("give --session SESSION or --project PROJECT, not both")
    if session is None and project is None:
        _switch_sync(enabled)
        return
    with open_memoir(existing=True) as memoir:  # NotFound unless it names one
        name = service.set_memory(memoir, enabled, session=session, project=project)
    what = f"session {name}" if session is not None else f"project {name}"
    state = "on" if enabled else "off (what is said meanwhile is never extracted)"
    console.print(f"Memory extraction for {escape(what)}: {state}.")


def _switch_sync(enabled: bool) -> None:
    """The home-wide switch of memory from sync (no session, no project named)."""
    with open_memoir() as memoir:
        on, why = service.set_memory_from_sync(memoir, enabled)
    if on != enabled:  # an environment variable outranks the stored switch
        err_console.print(
            f"Memory from sync stays {'on' if on else 'off'}: {escape(why)} decides "
            f"(unset it, or set it to {'on' if enabled else 'off'})."
        )
        raise typer.Exit(1)
    if on:
        console.print(
            "Memory from sync: on. `memoir sync` (and the hook's background sync) extract "
            "memories from sessions once they are idle."
        )
    else:
        console.print(
            "Memory from sync: off. `memoir sync` no longer extracts memories; `memoir "
            "remember`, compaction and the agent's extract still do (`memoir memories on` "
            "switches it back)."
        )


@memories.command()
def off(
    session: str | None = typer.Option(None, "--session", help="Only this session."),
    project: str | None = typer.Option(None, "--project", help="Only this project."),
) -> None:
    """Stop extracting memories: from a session or a project (every trigger), or with
    neither, from what `memoir sync` reads (home-wide; `remember` still works)."""
    _switch(False, session, project)


@memories.command()
def on(
    session: str | None = typer.Option(None, "--session", help="Only this session."),
    project: str | None = typer.Option(None, "--project", help="Only this project."),
) -> None:
    """Extract memories again, from now on: from a session or a project, or with neither,
    from what `memoir sync` reads."""
    _switch(True, session, project)


@memories.command()
def recover(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Run memory work left unsettled: checkpoints not yet extracted, queued requests and
    pending failures (what `memoir sync` does before it returns)."""
    with open_memoir(existing=True) as memoir:
        report = service.recover_memories(memoir)
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
    from memoir.memory.recall import receipt_json

    with open_memoir(existing=True) as memoir:
        rows = service.memory_receipts(memoir, _session(memoir, session))
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
