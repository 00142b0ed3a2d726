"""``memoir --help`` without the CLI framework: the top-level command list and the root's
options as data, and the text made of them. The console script answers ``memoir``,
``memoir --help`` (and ``memoir --debug --help`` …) from here before typer, click or rich
is imported; ``memoir CMD --help`` is typer's.

:data:`COMMANDS` names each command's module and its one line (what the command's
docstring gives, :func:`memoir.cli.conventions.short_help`); :data:`ROOT_OPTIONS` what the
typer callback declares. Tests hold both to the fully loaded typer app
(``tests/test_light_imports.py``). The rest is pure: :func:`asks_top_help` reads the
arguments, :func:`top_help` lays the text out for a width.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

__all__ = [
    "COMMANDS",
    "COMMAND_ORDER",
    "DESCRIPTION",
    "ROOT_OPTIONS",
    "RootOption",
    "asks_top_help",
    "ordered",
    "print_top_help",
    "top_help",
    "write_out",
]

DESCRIPTION = "Memoir: a memory engine for long LLM conversations."


@dataclass(frozen=True, slots=True)
class RootOption:
    """An option of ``memoir`` itself, as its help lists it (and typer declares it)."""

    name: str
    help: str
    metavar: str | None = None  # the value it takes; None: a flag
    envvar: str | None = None
    default: str | None = None  # shown as ``[default: …]``


ROOT_OPTIONS = (
    RootOption("--debug", "Show tracebacks and debug logs."),
    RootOption("--version", "Print the version and exit."),
    RootOption(
        "--user",
        "Act for this user: read and change their conversations and memories only "
        "(default local: the sessions synced from this machine).",
        metavar="NAME",
        envvar="MEMOIR_USER",
        default="local",
    ),
    RootOption("--help", "Show this message and exit."),
)
ROOT_OPTION = {o.name: o for o in ROOT_OPTIONS}

# what a user does first comes first: archive and find, read and condense, remember,
# then serve, wire into an agent, maintain, configure, try, measure
COMMAND_ORDER = (
    "sync",
    "search",
    "show",
    "summarize",
    "compact",
    "remember",
    "memories",
    "serve",
    "worker",
    "users",
    "jobs",
    "mcp",
    "hook",
    "embed",
    "stats",
    "verify",
    "usage",
    "config",
    "demo",
    "bench",
)


def ordered(names: Iterable[str], order: tuple[str, ...] = COMMAND_ORDER) -> list[str]:
    """``names`` in ``order``; any not named there after them, alphabetically. Pure."""
    rank = {name: i for i, name in enumerate(order)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


# each top-level command: the ``memoir.cli`` module that registers it, and what the
# command list shows beside it (its docstring's first sentence, as :func:`tidy_help` makes it)
COMMANDS: dict[str, tuple[str, str]] = {
    "sync": (
        "cmd_sync",
        "Archive and index new or grown transcripts, then refresh due summaries and keep "
        "memories from the sessions gone idle.",
    ),
    "search": (
        "cmd_read",
        "Search past exchanges by words and (with the embeddings extra) by meaning.",
    ),
    "show": (
        "cmd_read",
        "Print a stored conversation, or one exchange of it in context, as a transcript.",
    ),
    "summarize": (
        "cmd_summarize",
        "Summarize a long session episode by episode and save the result.",
    ),
    "compact": (
        "cmd_summarize",
        "Compact an agent's context below window × MEMOIR_COMPACT_THRESHOLD_RATIO: a summary "
        "of the older messages, then the most recent kept verbatim (MEMOIR_COMPACT_TAIL_RATIO "
        "of the threshold), a message too large for that kept as a stand-in.",
    ),
    "remember": (
        "cmd_summarize",
        "Remember what the user said in a session: durable facts, preferences and decisions, "
        "each with the exact words it came from (runs now; prints what was saved, or why not).",
    ),
    "memories": (
        "cmd_memories",
        "Long-term memories: list, show, search, export, forget; switch extraction off or "
        "on; recover unsettled work.",
    ),
    "serve": (
        "cmd_serve",
        "Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) and the web page.",
    ),
    "worker": (
        "cmd_admin",
        "Run background jobs until SIGTERM or Ctrl-C: abandoned jobs are resumed first, then "
        "queued ones taken; on stop, no new job is taken and the running one finishes or goes "
        "back to the queue for another worker.",
    ),
    "users": ("cmd_admin", "Users of the HTTP API (memoir serve) and their API keys."),
    "jobs": ("cmd_admin", "Background jobs (summary regenerations): list, show, cancel."),
    "mcp": (
        "cmd_serve",
        "Serve Memoir's tools to an agent over MCP on stdio (search, read, summary, remember, "
        "memories, forget); `memoir mcp install` wires the server into Codex or Claude Code.",
    ),
    "hook": (
        "cmd_serve",
        "The Claude Code (or, with --gemini, Gemini CLI) hook that runs "
        "`memoir sync --background` at session start: install it, uninstall it, or see its "
        "status.",
    ),
    "embed": (
        "cmd_sync",
        "Embed the exchanges that have no vector yet, or no token states for re-ranking, then "
        "redo vectors embedded from an older release's recipe (needs the embeddings extra).",
    ),
    "stats": (
        "cmd_admin",
        "Counts of what this Memoir home holds, for every user: the home owner's view of its "
        "size and health (the project list is `--user`'s).",
    ),
    "verify": (
        "cmd_admin",
        "Check the index against the archive: exit 0 when intact (warnings, such as lines a "
        "transcript holds that could not be read, are listed and counted), 1 when damaged.",
    ),
    "usage": ("cmd_admin", "Show model calls (ok / failed) and tokens in/out, by day and model."),
    "config": (
        "cmd_admin",
        "Show the effective settings and where each one came from (secrets masked); exit 2 "
        "when one of them would be refused.",
    ),
    "demo": (
        "cmd_bench",
        "Sync a bundled sample corpus into a home of its own and tour what Memoir found.",
    ),
    "bench": (
        "cmd_bench",
        "Benchmarks: retrieval and long-term memory quality on LoCoMo, compaction retention.",
    ),
}


def asks_top_help(args: list[str]) -> bool:
    """Whether ``memoir ARGS`` prints the top-level help: no argument at all, or
    ``--help`` among the root's options before any command (``memoir --debug --help``,
    ``memoir --help search``); ``memoir search --help`` is the command's own. Pure."""
    if not args:
        return True
    n = 0
    while n < len(args):
        arg = args[n]
        if arg == "--help":
            return True
        if arg in ("--debug", "--version") or arg.startswith("--user="):
            n += 1
        elif arg == "--user" and n + 1 < len(args):
            n += 2
        else:
            return False
    return False


_GAP = 2  # spaces between a name column and its text


def top_help(width: int) -> str:
    """The top-level help laid out for ``width`` columns: the usage line, what Memoir is,
    the root's options, then every command in :data:`COMMAND_ORDER` with its one line,
    each text wrapped beside its name. Pure."""
    width = max(width, 40)
    options = [(_option_name(o), _option_text(o)) for o in ROOT_OPTIONS]
    commands = [(name, COMMANDS[name][1]) for name in ordered(COMMANDS)]
    lines = [
        "Usage: memoir [OPTIONS] COMMAND [ARGS]...",
        "",
        *textwrap.wrap(DESCRIPTION, width - 2, initial_indent="  ", subsequent_indent="  "),
        "",
        "Options:",
        *_rows(options, width),
        "",
        "Commands:",
        *_rows(commands, width),
    ]
    return "\n".join(lines) + "\n"


def _option_name(option: RootOption) -> str:
    return f"{option.name} {option.metavar}" if option.metavar else option.name


def _option_text(option: RootOption) -> str:
    """The option's help, then its environment variable and default, a line each."""
    lines = [option.help]
    if option.envvar:
        lines.append(f"[env var: {option.envvar}]")
    if option.default is not None:
        lines.append(f"[default: {option.default}]")
    return "\n".join(lines)


def _rows(rows: list[tuple[str, str]], width: int) -> list[str]:
    """Two columns: the names, and beside them their text (its lines) wrapped to ``width``."""
    column = 2 + max(len(name) for name, _ in rows) + _GAP
    out: list[str] = []
    for name, text in rows:
        wrapped = [
            piece
            for line in text.splitlines()
            for piece in textwrap.wrap(
                line, max(width - column, 20), break_long_words=False, break_on_hyphens=False
            )
        ] or [""]
        out.append(f"  {name}".ljust(column) + wrapped[0])
        out += [" " * column + more for more in wrapped[1:]]
    return out


def print_top_help(args: list[str]) -> NoReturn:
    """Print the top-level help for the terminal's width (``COLUMNS``; 80 into a pipe) and
    exit: 0 when asked for, 2 for ``memoir`` alone (a command is missing), as typer does."""
    write_out(top_help(shutil.get_terminal_size().columns))
    raise SystemExit(0 if args else 2)


def write_out(text: str) -> None:
    """``text`` on stdout; a reader gone away (``memoir --help | head -1``) ends the
    program quietly, with SIGPIPE's status."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(141) from None
