"""`memoir search` and `memoir show`: the read commands.

`memoir search`: full-text, semantic or hybrid search over past exchanges.

`memoir show`: a stored conversation as a readable transcript — a whole session, or one
exchange from `memoir search` (``SESSION:N``) with the exchanges around it.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer

from memoir import SearchFilters, service
from memoir.cli import app as cli
from memoir.cli.app import app, open_memoir, print_json, printable, require_query, write_plain
from memoir.errors import MemoirError, NotFound
from memoir.model import Event, EventKind, Exchange, Harness, exchanges_around, speaker_of
from memoir.search.hits import split_marks

if TYPE_CHECKING:
    from rich.text import Text

    from memoir.search.hits import SearchHit

__all__ = ["render_snippet", "search_command", "show"]


# ---- memoir search ----

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
            from memoir.search.hits import mask_hits

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


# ---- memoir show ----

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["show"]


@app.command()
def show(
    target: str = typer.Argument(
        ...,
        metavar="SESSION",
        help="A session id (or a unique prefix), or an exchange id from `memoir search`.",
    ),
    context: int = typer.Option(
        1, "--context", "-C", min=0, help="With an exchange id: exchanges shown on each side."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the session and its events."),
    full: bool = typer.Option(False, "--full", help="Do not shorten tool input/output."),
    meta: bool = typer.Option(False, "--meta", help="Also show meta and thinking events."),
    reveal: bool = typer.Option(
        False,
        "--reveal",
        help="Show secrets (API keys, passwords, private keys) as stored; by default each "
        "is shown as a placeholder such as [redacted: AWS access key].",
    ),
) -> None:
    """Print a stored conversation, or one exchange of it in context, as a transcript."""
    from rich.markup import escape
    from rich.text import Text

    with open_memoir(existing=True) as memoir:
        sid, focus = _resolve(memoir, target)
        info = service.find_session(memoir, sid)
        if info is None:  # removed between the two reads
            raise NotFound(f"no session {sid!r} in this Memoir home")
        window: list[Exchange] = []
        if focus is None:
            events = memoir.events(sid)
        else:
            window = exchanges_around(memoir.exchanges(sid), focus, context)
            first, last = window[0].first_ordinal, window[-1].last_ordinal
            events = memoir.events(sid, after=first - 1, upto=last)
        body = _summary_body(memoir, sid)
        if not reveal and body:  # shown masked; the store keeps the text as it was
            body = _mask(body)
        if not reveal and as_json:  # the text view masks what it shows of each event
            events = _masked(events)
        cited = service.memory_citations(memoir, sid)  # evidence of memory items, by event
        if as_json:
            data: dict[str, Any] = {
                "session": {
                    "id": sid,
                    "project": info.project,
                    "harness": info.harness.value,
                    "source_path": info.source_path,
                    "flags": {k: getattr(info.flags, k) for k in info.flags.__slots__},
                    "cwd": info.cwd,
                },
                "summary": body,
            }
            if focus is not None:
                data["exchange"] = focus
                data["exchanges"] = [x.id for x in window]
            data["events"] = [_event_json(e, cited.get(e.ordinal, [])) for e in events]
            print_json(data)
            return
        project = escape(printable(info.project))
        if info.cwd:  # the real folder, as it is stored; the name is what --project takes
            project = f"{escape(printable(info.cwd))} [dim](project {project})[/dim]"
        cli.console.print(f"[bold]{escape(sid)}[/bold] · {project} · {info.harness.value}")
        body = printable(body) if body else body
        if body and focus is None:
            cli.console.print(f"[italic]{escape(body)}[/italic]\n", soft_wrap=True)
        elif body:  # one exchange: the summary's opening line orients, the rest would bury it
            cli.console.print(
                f"[dim]summary: {escape(body.splitlines()[0])}[/dim]\n", soft_wrap=True
            )
        hit = next((x for x in window if x.id == focus), None)
        hidden = (EventKind.META, EventKind.THINKING)
        pending = Text()  # printed in one call: one print per event took 6 s at 2,500
        for event in events:
            if hit is not None and event.ordinal == hit.first_ordinal:
                pending = _flush(pending)
                _rule(f"exchange {escape(hit.id)}")
            if meta or event.kind not in hidden:
                _event_text(event, full, reveal, pending, cited.get(event.ordinal, []))
            if hit is not None and event.ordinal == hit.last_ordinal and event is not events[-1]:
                pending = _flush(pending)
                _rule("")
        _flush(pending)


def _flush(pending: Text) -> Text:
    from rich.text import Text

    if pending.plain:
        cli.console.print(pending, soft_wrap=True, end="")
    return Text()


def _resolve(memoir: Any, target: str) -> tuple[str, str | None]:
    """The session ``target`` names, and the exchange when it is an exchange id
    (``SESSION:N``, the session part may be a unique prefix; read as an exchange before
    the whole string is taken as a session id: :func:`memoir.mcp.reading.read_target`)."""
    from memoir.mcp.reading import read_target

    return read_target(
        target,
        resolve=lambda ref: service.session_id(memoir, ref),
        is_session=lambda sid: service.find_session(memoir, sid) is not None,
        is_exchange=lambda xid: service.has_exchange(memoir, xid),
    )


def _mask(text: str) -> str:
    from memoir.secrets import mask  # detect-secrets loads on use

    return mask(text)


def _masked(events: list[Event]) -> list[Event]:
    """The events with each secret in their text and payload replaced by its placeholder."""
    from memoir.secrets import mask, mask_json

    out: list[Event] = []
    for e in events:
        text, payload = mask(e.text), mask_json(e.payload)
        changed = text is not e.text or payload is not e.payload
        out.append(replace(e, text=text, payload=payload) if changed else e)
    return out


_HEAD, _TAIL = 200, 100  # what a shortened tool event shows of its start and its end
_MARGIN = 500  # read around each shown part: a secret's line or quote reaching into it
_PLACEHOLDER = "[redacted: "


def _shortened(text: str, reveal: bool) -> str:
    """A long tool input or output as shown: its start and its end (where errors are).
    Masked, only the parts shown are scanned (with a margin, so that a secret the cut
    splits is still found whole): a 3 MB tool dump costs two small scans, not one of 3 MB.
    A private key block may be longer than any margin: text holding one is scanned whole."""
    if len(text) <= _HEAD + _TAIL:
        return text if reveal else _mask(text)
    if reveal:
        return f"{text[:_HEAD]} … {text[-_TAIL:]}"
    if "PRIVATE KEY" in text or "PuTTY-User-Key" in text:
        whole = _mask(text)
        if len(whole) <= _HEAD + _TAIL:
            return whole
        head, tail = whole[: _HEAD + _MARGIN], whole[-(_TAIL + _MARGIN) :]
    else:
        head, tail = _mask(text[: _HEAD + _MARGIN]), _mask(text[-(_TAIL + _MARGIN) :])
    return f"{_upto(head, _HEAD)} … {_from(tail, _TAIL)}"


def _upto(text: str, n: int) -> str:
    """The first ``n`` characters, or through the placeholder the cut would split."""
    at = text.rfind(_PLACEHOLDER, 0, n + len(_PLACEHOLDER) - 1)
    if 0 <= at < n:
        close = text.find("]", at)
        if close >= n:
            return text[: close + 1]
    return text[:n]


def _from(text: str, n: int) -> str:
    """The last ``n`` characters, or from the placeholder the cut would split."""
    cut = max(0, len(text) - n)
    at = text.rfind(_PLACEHOLDER, 0, cut + len(_PLACEHOLDER) - 1)
    if 0 <= at < cut and text.find("]", at) >= cut:
        return text[at:]
    return text[cut:]


def _summary_body(memoir: Any, session_id: str) -> str | None:
    try:
        return service.summary_body(memoir, session_id)
    except (MemoirError, OSError):
        return None


def _event_json(e: Event, memories: list[str]) -> dict[str, Any]:
    return {
        "memories": memories,  # ids of the memory items quoting this event
        "ordinal": e.ordinal,
        "kind": e.kind.value,
        "author": e.author.value,
        "text": e.text,
        "timestamp": e.timestamp.isoformat() if e.timestamp else None,
        "time_inferred": e.time_inferred,  # the source gave none: the nearest known time
        "tool_name": e.tool_name,
        "call_id": e.call_id,
        "payload": e.payload,
        "line": e.source_line,
    }


_STYLE = {
    EventKind.USER_TEXT: ("user", "bold green"),
    EventKind.ASSISTANT_TEXT: ("assistant", "bold blue"),
    EventKind.THINKING: ("thinking", "dim italic"),
    EventKind.TOOL_CALL: ("→ tool", "magenta"),
    EventKind.TOOL_RESULT: ("← result", "dim"),
    EventKind.ATTACHMENT: ("attachment", "dim"),
    EventKind.META: ("meta", "dim"),
    EventKind.COMPACTION: ("compaction", "yellow"),
    EventKind.HARNESS: ("harness", "dim"),  # the CLI's words in the user's place
}


def _event_text(e: Event, full: bool, reveal: bool, out: Text, memories: list[str]) -> None:
    """Append one event — its label line, its text (its secrets masked unless ``reveal``),
    a blank line — to ``out``; an event that is evidence for memory items says so
    (``memoir memories show ID``)."""
    label, style = _STYLE[e.kind]
    if e.kind in (EventKind.TOOL_CALL, EventKind.TOOL_RESULT) and e.tool_name:
        label = f"{label} {e.tool_name}"
    elif e.kind is EventKind.HARNESS and isinstance(shape := e.payload.get("harness"), str):
        label = f"{label} · {shape}"
    elif speaker := speaker_of(e):
        label = f"{label} · {speaker}"
    if not full and e.kind not in (EventKind.USER_TEXT, EventKind.ASSISTANT_TEXT):
        text = _shortened(e.text, reveal)  # errors end it
    else:
        text = e.text if reveal else _mask(e.text)
    when = f"{e.timestamp:%Y-%m-%d %H:%M}" if e.timestamp else ""
    if when and e.time_inferred:  # the source gave it no time: the nearest known one
        when = f"~{when}"
    out.append(printable(label), style=style)
    out.append(f" #{e.ordinal} {when}", style="dim")
    if memories:
        out.append(f"  ◆ memory {', '.join(m[:8] for m in memories)}", style="bold cyan")
    out.append("\n")
    out.append(printable(text) + "\n\n", style="dim" if e.kind is EventKind.HARNESS else "")


def _rule(title: str) -> None:
    """A line around the exchange asked for: the terminal's width, or 80 columns when the
    output goes to a pipe or a file (where the console does not wrap at all)."""
    if cli.console.width > 200:
        cli.console.print(f"──── {title} ────" if title else "─" * 80, style="yellow")
    else:
        cli.console.rule(title, style="yellow")
