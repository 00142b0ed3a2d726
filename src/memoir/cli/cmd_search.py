"""`memoir search`: full-text, semantic or hybrid search over past exchanges."""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer

from memoir import SearchFilters, service
from memoir.cli import app as cli
from memoir.cli.app import app, open_memoir, print_json, printable, require_query, write_plain
from memoir.model import Harness
from memoir.search.hits import split_marks

if TYPE_CHECKING:
    from rich.text import Text

    from memoir.search.hits import SearchHit

__all__ = ["render_snippet", "search_command"]


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    tool = "tool"


class Mode(StrEnum):
    text = "text"
    vector = "vector"
    hybrid = "hybrid"


def render_snippet(snippet: str) -> Text:
    """The snippet with its ``\\x02 … \\x03`` marks shown as highlighted text."""
    from rich.text import Text

    plain, spans = split_marks(snippet)
    out = Text(printable(plain))  # one character for one: the spans still fit
    for start, end in spans:
        out.stylize("bold yellow", start, end)
    return out


@app.command("search")
def search_command(
    query: str = typer.Argument(
        ...,
        help="Words to look for (any text is safe). A query that starts with -word goes after "
        'the options and `--` (memoir search --mode text -- "-postgres redis"), or write '
        "NOT postgres.",
    ),
    project: str | None = typer.Option(None, "--project", "-p", help="Only this project."),
    session: str | None = typer.Option(
        None, "--session", help="Only this session (its id or a unique prefix)."
    ),
    harness: Harness | None = typer.Option(
        None,
        "--harness",
        help="Only sessions from claude-code, codex, gemini-cli, opencode, aider, generic or api.",
    ),
    role: Role | None = typer.Option(
        None,
        "--role",
        help="Where the words must match (text search); by meaning, exchanges that have that part.",
    ),
    after: str | None = typer.Option(
        None,
        "--after",
        help="On or after this date: 2026-03-05, 2026-03, an ISO datetime, or words "
        "(yesterday, '2 weeks ago'); UTC when no zone.",
    ),
    before: str | None = typer.Option(
        None,
        "--before",
        help="On or before this date, as --after takes it (a day or month includes all of it).",
    ),
    include_subagents: bool = typer.Option(
        False, "--include-subagents", help="Also search subagent sessions (their own transcripts)."
    ),
    limit: int = typer.Option(10, "--limit", "-n", min=1, max=1000, help="Most hits to show."),
    mode: Mode | None = typer.Option(
        None, "--mode", help="text, vector or hybrid (default: hybrid when embeddings exist)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of hits."),
    reveal: bool = typer.Option(
        False,
        "--reveal",
        help="Show secrets (API keys, passwords, private keys) in snippets as stored; by "
        "default each is shown as a placeholder such as [redacted: AWS access key].",
    ),
) -> None:
    """Search past exchanges by words and (with the embeddings extra) by meaning."""
    require_query(query)
    filters = SearchFilters(
        project=project,
        session_id=session,
        harness=harness.value if harness else None,
        role=role.value if role else None,
        after=_when(after, "--after") if after else None,
        before=_when(before, "--before", end_of_day=True) if before else None,
        include_subagents=include_subagents,
    )
    with open_memoir(existing=True) as memoir:
        if session is not None:  # a unique prefix, as `show` and `summarize` take
            filters = replace(filters, session_id=service.session_id(memoir, session))
        if project is not None:
            filters = replace(filters, project=service.project(memoir, project))
        hits = memoir.search(query, filters=filters, mode=mode.value if mode else None, limit=limit)
        if not reveal and hits:  # shown masked; the store keeps the text as it was
            from memoir.search.masking import mask_hits  # detect-secrets loads on use

            hits = mask_hits(hits, service.exchanges_by_id(memoir, [h.exchange_id for h in hits]))
        if as_json:
            print_json([hit.to_json() for hit in hits])
            return
        folders = service.project_folders(memoir) if hits else {}
        lines = _plain_lines(query, hits, folders)
        if lines is None or not write_plain(lines):
            _print_hits(query, hits, folders)
        if mode is not Mode.text and not any(h.vector_rank for h in hits):
            _hint_backlog(memoir)


def _when(value: str, option: str, *, end_of_day: bool = False) -> Any:
    from memoir.search.request import parse_when

    return parse_when(value, end_of_day=end_of_day, option=option)


def _hint_backlog(memoir: Any) -> None:
    """Say so when semantic ranking is installed but has nothing to rank yet."""
    from memoir.search.embedders import TokenEmbedder, load_embedder

    embedder = load_embedder(memoir.settings.embedder)
    with_tokens = isinstance(embedder, TokenEmbedder)
    waiting = embedder is not None and service.embeddings_wait(
        memoir, embedder.name, with_tokens=with_tokens
    )
    if waiting and not write_plain([_WAITING], stderr=True):
        cli.err_console.print(_WAITING, style="dim")


_WAITING = "semantic ranking is waiting for vectors: run `memoir embed`"


def _no_matches(query: str) -> str:
    shown = query if len(query) <= 80 else query[:79] + "…"
    return f"no matches for '{printable(shown)}'"


def _plain_lines(
    query: str, hits: list[SearchHit], folders: dict[str, str | None]
) -> list[str] | None:
    """What :func:`_print_hits` prints, as plain lines (its text without its styles); None
    when rich may print otherwise: a query that markup or an emoji code could change."""
    if not hits:
        shown = _no_matches(query)
        return None if any(ch in shown for ch in ":[\\") else [shown]
    lines: list[str] = []
    for number, hit in enumerate(hits, start=1):
        when = hit.timestamp.strftime("%Y-%m-%d %H:%M") if hit.timestamp else "(no date)"
        where = printable(folders.get(hit.project) or hit.project or "-")
        lines.append(f"{number:>2}. {when}  {where}  {hit.exchange_id}")
        lines.append("    " + printable(split_marks(hit.snippet.replace("\n", " "))[0]))
        if hit.summary:
            lines.append(f"    summary: {printable(_first_line(hit.summary))}")
    plural = "s" if len(hits) != 1 else ""
    lines.append(f"{len(hits)} hit{plural} · `memoir show ID` reads one in context")
    return lines


def _first_line(summary: str) -> str:
    first = summary.strip().splitlines()[0]
    return first if len(first) <= 160 else first[:157] + "…"


def _print_hits(query: str, hits: list[SearchHit], folders: dict[str, str | None]) -> None:
    """``folders``: each project's real folder, shown in place of its name when known."""
    from rich.markup import escape
    from rich.text import Text

    console = cli.console
    if not hits:
        console.print(escape(_no_matches(query)))
        return
    for number, hit in enumerate(hits, start=1):
        when = hit.timestamp.strftime("%Y-%m-%d %H:%M") if hit.timestamp else "(no date)"
        head = Text(f"{number:>2}. ", style="bold")
        head.append(when, style="cyan")
        head.append(f"  {printable(folders.get(hit.project) or hit.project or '-')}", style="green")
        head.append(f"  {hit.exchange_id}", style="dim")
        console.print(head)
        body = Text("    ")
        body.append_text(render_snippet(hit.snippet.replace("\n", " ")))
        console.print(body)
        if hit.summary:
            console.print(Text(f"    summary: {printable(_first_line(hit.summary))}", style="dim"))
    plural = "s" if len(hits) != 1 else ""
    console.print(
        Text(f"{len(hits)} hit{plural} · `memoir show ID` reads one in context", style="dim")
    )
