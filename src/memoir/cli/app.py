"""The typer application and what every command shares.

Commands live in ``cmd_*.py`` modules of this package; each registers itself on ``app``
(``@app.command()`` or ``app.add_typer``), and :data:`memoir.cli.conventions.COMMANDS` names
the module of each, so a run imports only the module of the command it runs (``--help``
none). Adding a command means adding one module and its line in that table. Errors: a
:class:`memoir.errors.MemoirError` becomes one line on stderr and exit code 1 (2 for
configuration errors); ``--debug`` shows the traceback.

Every command acts for one user: ``--user NAME`` (before the command) or ``MEMOIR_USER``,
default ``local`` (the owner of the sessions synced from this machine). The owner of the
home acts for another user by naming them; nothing answers across users.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import os
import pkgutil
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from memoir.cli.conventions import (
    COMMANDS,
    LazyGroup,
    dash_query,
    error_code,
    error_document,
    exit_status,
    global_options,
    install_plain_params,
    tidy_help,
    usage_message,
    wants_json,
)
from memoir.cli.top_help import DESCRIPTION, ROOT_OPTION, asks_top_help
from memoir.config import Settings
from memoir.errors import MemoirError, UsageError
from memoir.model.event import LOCAL_USER

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "app",
    "console",  # noqa: F822 (made on first use: rich is imported then)
    "err_console",  # noqa: F822
    "main",
    "open_memoir",
    "print_json",
    "printable",
    "require_query",
    "state",
    "write_plain",
]

install_plain_params()  # arguments converted without pydantic where typer's result is certain
app = typer.Typer(
    name="memoir",
    help=DESCRIPTION,
    no_args_is_help=True,
    cls=LazyGroup,
    pretty_exceptions_enable=False,
    add_completion=False,
)
PIPE_WIDTH = 10_000  # output read by a program or kept in a file: lines whole, values uncut


def _stop_quietly(console: Console | None = None, *, stderr: bool = False) -> NoReturn:
    """What a console does when its reader went away (``memoir search x | head -1``):
    no more output (``console``, when given, is made quiet), the stream pointed at the
    null device (so the exit's own flush meets no closed pipe and prints no "Exception
    ignored"), and exit 141 — the status a program killed by SIGPIPE has (128 + 13, as
    ``ls`` or ``git`` give), not 1, which this CLI uses for errors."""
    if console is not None:
        console.quiet = True
        stderr = console.stderr
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, (sys.stderr if stderr else sys.stdout).fileno())
    raise SystemExit(141)


def _quiet_typer_consoles() -> None:
    """typer prints help (``memoir --help | head -1``) through consoles it makes itself,
    one per help text, whose broken-pipe handling is rich's: exit 1, this CLI's status for
    an error. Each such console is given :func:`_stop_quietly` instead (its theme and
    width stay typer's). Done once; a typer without that factory is left as it is."""
    from typer import rich_utils

    make = getattr(rich_utils, "_get_rich_console", None)
    if make is None or hasattr(make, "__wrapped__"):  # not there, or given already
        return

    @functools.wraps(make)
    def make_quiet(stderr: bool = False) -> Console:
        made: Console = make(stderr=stderr)
        made.on_broken_pipe = functools.partial(_stop_quietly, made)  # type: ignore[method-assign]
        return made

    rich_utils._get_rich_console = make_quiet


def _console(*, stderr: bool) -> Console:
    """A console that wraps to the terminal, or, writing to a pipe or a file (and with no
    COLUMNS set), not at all: ``memoir config | grep home`` must see the whole value. Its
    reader going away ends the command quietly (:func:`_stop_quietly`)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            _stop_quietly(self)

    stream = sys.stderr if stderr else sys.stdout
    to_terminal = hasattr(stream, "isatty") and stream.isatty()
    width = None if to_terminal or os.environ.get("COLUMNS") else PIPE_WIDTH
    return _Console(stderr=stderr, highlight=False, width=width)


_CONSOLES: dict[bool, Console] = {}


def _get_console(*, stderr: bool = False) -> Console:
    """The command's console for stdout (or stderr), made on first use."""
    if stderr not in _CONSOLES:
        _CONSOLES[stderr] = _console(stderr=stderr)
    return _CONSOLES[stderr]


def __getattr__(name: str) -> Console:
    """``console`` and ``err_console``: rich's consoles, made (and rich imported) when a
    command first asks for one; ``memoir search`` writes plain text without them when it
    can (:func:`write_plain`)."""
    if name in ("console", "err_console"):
        return _get_console(stderr=name == "err_console")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def write_plain(lines: list[str], *, stderr: bool = False) -> bool:
    """Write ``lines`` (each ended by a newline) as plain text when the stream takes them
    as they are and rich would write exactly them (:func:`_plain_stream`,
    :func:`plain_text`); False, having written nothing, when rich must."""
    stream = _plain_stream(stderr=stderr)
    if stream is None or not all(plain_text(line) for line in lines):
        return False
    try:
        stream.write("".join(line + "\n" for line in lines))
        stream.flush()
    except BrokenPipeError:
        _stop_quietly(stderr=stderr)
    return True


def _plain_stream(*, stderr: bool = False) -> Any:
    """The stream (stdout, or stderr) when what :func:`console` would write there is each
    text as it is, unstyled and unwrapped, so a command may write plain text there without
    importing rich: a pipe or a file (not a terminal, and neither ``FORCE_COLOR`` nor
    ``TTY_COMPATIBLE`` says otherwise), with no COLUMNS to wrap at, outside Jupyter and
    Windows' legacy console. None when rich must write it. A text that holds a tab, a
    control character or more than :data:`PLAIN_MAX` characters is rich's still (it
    expands tabs and wraps at :data:`PIPE_WIDTH` cells): :func:`plain_text`."""
    if sys.platform == "win32" or os.environ.get("COLUMNS"):
        return None
    if any(name in os.environ for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return None
    import builtins

    if hasattr(builtins, "get_ipython") or getattr(sys.stdin, "__module__", "").startswith(
        "idlelib"
    ):
        return None
    stream = sys.stderr if stderr else sys.stdout
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty is None or isatty():
            return None
    except ValueError:
        return None
    return stream


PLAIN_MAX = PIPE_WIDTH // 2  # characters: a line this long fits the width whatever they are
_NOT_PLAIN = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def plain_text(text: str) -> bool:
    """Whether rich writes ``text`` (a line or several) to a plain stream as it is: no
    tab (rich expands them), no control character (it drops some), no line long enough
    to wrap at :data:`PIPE_WIDTH` cells. Pure."""
    return _NOT_PLAIN.search(text) is None and all(
        len(line) <= PLAIN_MAX for line in text.split("\n")
    )


@dataclass
class _State:
    debug: bool = False
    command: tuple[str, ...] = ()  # the (sub)command :func:`main` runs: ("memories", "search")
    user: str = LOCAL_USER  # whom the command acts for (--user, MEMOIR_USER)


state = _State()


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from memoir.errors import DISTRIBUTION

        _get_console().print(f"memoir {version(DISTRIBUTION)}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help=ROOT_OPTION["--debug"].help),
    _version: bool = typer.Option(
        False, "--version", help=ROOT_OPTION["--version"].help, callback=_print_version
    ),
    user: str = typer.Option(
        LOCAL_USER,
        "--user",
        envvar=ROOT_OPTION["--user"].envvar,
        metavar=ROOT_OPTION["--user"].metavar,
        help=ROOT_OPTION["--user"].help,
    ),
) -> None:
    state.debug = debug
    if not user.strip() or user != user.strip():
        raise UsageError(f"--user: give a user's name, not {user!r}")
    state.user = user
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not debug:  # the driver's pool narrates reconnects; Memoir says what failed itself
        logging.getLogger("psycopg").setLevel(logging.ERROR)


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Transcript text made safe for a terminal: each control character (an escape
    sequence a tool printed could recolour the terminal or retitle its window) becomes
    one visible stand-in, so highlighted spans keep their offsets. Newlines and tabs
    stay."""
    return _UNPRINTABLE.sub(_stand_in, text)


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␛ for ESC
    return "␡" if code == 0x7F else "�"


def require_query(query: str, *, operators: bool | None = None) -> None:
    """A search or recall query with no word in it (``memoir search ""``) is a bad
    argument (exit 2), not a search that finds nothing. ``operators``: whether the command
    reads phrases in quotes and ``-word`` exclusions (``memoir search`` does, memory recall
    does not); by default, whether the running command is ``memoir search``, so the hint
    names only what the command can take."""
    from memoir.service import has_words

    if has_words(query):
        return
    if operators is None:
        operators = state.command[:1] != ("memories",)
    hint = "a word, a phrase in quotes, or -word to exclude one" if operators else "a word"
    raise UsageError(f"QUERY {query!r} has no words to search for: give {hint}")


_JSON_PIECE = 8_192  # characters per write, well under a pipe's buffer


def print_json(value: Any) -> None:
    """Print a JSON document on stdout (dates as ISO strings)."""
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n"
    try:
        # in pieces: an unbuffered stdout (PYTHONUNBUFFERED) drops the rest of one big
        # write the pipe took only part of, and the reader's leaving would go unnoticed
        for start in range(0, len(text), _JSON_PIECE):
            sys.stdout.write(text[start : start + _JSON_PIECE])
        sys.stdout.flush()
    except BrokenPipeError:
        _stop_quietly()  # the reader went away: quietly, with SIGPIPE's status


@contextmanager
def open_memoir(*, existing: bool = False, **overrides: Any) -> Iterator[Any]:
    """Open the Memoir of the current environment for one command. ``existing``: a
    command that only reads or works on what a sync stored fails with ``NotFound`` when
    there is no SQLite archive yet (a mistyped MEMOIR_HOME), instead of creating one."""
    from memoir import service
    from memoir.app import Memoir

    settings = Settings.from_env(**overrides)
    if existing:
        service.require_archive(settings)
    memoir = Memoir.open(settings, user=state.user)
    try:
        yield memoir
    finally:
        memoir.close()


def _discover(argv: list[str] | None = None) -> None:
    """Import the ``cmd_*`` module of the command ``argv`` names (after the global options),
    which registers it on ``app``; none for no command or an unknown one (the help, or the
    parser's "No such command", lists every command from the table)."""
    given = list(argv if argv is not None else sys.argv[1:])
    args = given[global_options(given) :]
    if args and args[0] in COMMANDS:
        importlib.import_module(f"memoir.cli.{COMMANDS[args[0]][0]}")
    tidy_help(app)


def _discover_all() -> None:
    """Import every ``cmd_*`` module beside this one: the whole command tree, for what
    walks it (the tests that run every command)."""
    here = [str(Path(__file__).resolve().parent)]
    for info in sorted(pkgutil.iter_modules(here), key=lambda i: i.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"memoir.cli.{info.name}")
    tidy_help(app)


def _load(name: str) -> Any:
    """The click command of the top-level command ``name``, its module imported (what
    :class:`LazyGroup` asks for when a command not loaded yet is run or asked for help)."""
    importlib.import_module(f"memoir.cli.{COMMANDS[name][0]}")
    tidy_help(app)
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


LazyGroup.load = staticmethod(_load)


# the commands whose words are a query: a word starting with "-" there may be an exclusion
_QUERY_COMMANDS = (("search",), ("memories", "search"))


def _command_path(args: list[str]) -> tuple[list[str], Any]:
    """The (sub)command names ``args`` start with, as deep as they name subcommands, and
    that command."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    for name in args:
        sub = command.commands.get(name) if hasattr(command, "commands") else None
        if sub is None:
            break
        command, path = sub, [*path, name]
    return path, command


def _dash_queries(args: list[str]) -> list[str]:
    """:func:`dash_query` for ``memoir search`` and ``memoir memories search``; the
    arguments of any other command are left to the parser, which takes a value starting
    with ``-`` after an option that needs one (``memories list --project -home-ann-code``)."""
    path, command = _command_path(args)
    if tuple(path) not in _QUERY_COMMANDS:
        return args
    known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    valued = {
        o
        for p in command.params
        if getattr(p, "param_type_name", "") == "option" and not getattr(p, "is_flag", False)
        for o in p.opts
    }
    known |= {"--help", "--debug"}
    return [*path[:-1], *dash_query(args[len(path) - 1 :], known, valued)]


def main(argv: list[str] | None = None) -> None:
    """The ``memoir`` command. Every error ends here: one line on stderr (``error: …``),
    or under ``--json`` the JSON of :func:`memoir.cli.conventions.error_document`, and the
    exit status the README lists (1 an error, 2 a bad setting or argument, 130
    interrupted)."""
    given = list(argv if argv is not None else sys.argv[1:])
    if asks_top_help(given):  # Memoir's own list, as the console script gives it
        from memoir.cli.top_help import print_top_help

        print_top_help(given)
    debug = "--debug" in given
    as_json = wants_json(given)
    try:
        _discover(argv)  # inside: a Ctrl-C while the commands load is a clean stop too
        lead = global_options(given)  # memoir --user NAME search …
        args = list(given[lead:])
        path, command = _command_path(args)
        state.command = tuple(path)
        if "--help" in given or hasattr(command, "commands"):  # help may be printed (a
            _quiet_typer_consoles()  # group alone shows its own): only then typer's module
        if args[:1] in (["search"], ["memories"]):
            argv = [*given[:lead], *_dash_queries(args)]
        rc = app(args=argv, prog_name="memoir", standalone_mode=False)
        if rc == 130:  # typer's answer to Ctrl-C inside a command
            raise KeyboardInterrupt
        if isinstance(rc, int) and rc:
            raise SystemExit(rc)
    except MemoirError as exc:
        if debug:
            raise
        _fail(error_code(exc), str(exc), exit_status(exc), as_json)
    except KeyboardInterrupt:
        _fail("interrupted", _INTERRUPTED, 130, as_json)
    except SystemExit:
        raise
    except Exception as exc:  # click usage errors (typer vendors click) and the unexpected
        name = type(exc).__name__
        if name == "Exit":
            raise SystemExit(getattr(exc, "exit_code", 0)) from None
        if name == "Abort":  # click's form of Ctrl-C
            _fail("interrupted", _INTERRUPTED, 130, as_json)
        if name == "NoArgsIsHelpError" and hasattr(exc, "show"):
            exc.show()  # `memoir sync-less-group` alone: the group's help
            raise SystemExit(2) from None
        if error_code(exc) == "usage":
            command = getattr(getattr(exc, "ctx", None), "command_path", None) or "memoir"
            message = usage_message(exc, given) + _query_hint(exc, command)
            suffix = "" if as_json else f" (see `{command} --help`)"
            _fail("usage", message + suffix, exit_status(exc), as_json)
        if debug:
            raise
        _fail("internal", f"{name}: {exc} (run with --debug for details)", 1, as_json)


def _query_hint(exc: Exception, command: str) -> str:
    """How to search for a word that looks like an option (``memoir search --flag``): an
    unknown ``--word`` is refused as a mistyped option, never searched for silently."""
    option = getattr(exc, "option_name", None)
    if type(exc).__name__ != "NoSuchOption" or not command.endswith(" search") or not option:
        return ""
    return f"; to search for {option!r}, put the query after --: `{command} -- {option}`"


_INTERRUPTED = "interrupted: what was committed stays; run the command again"


def _fail(code: str, message: str, status: int, as_json: bool) -> NoReturn:
    """Say what went wrong on stderr, one line (JSON under ``--json``), and exit."""
    if as_json:
        try:
            sys.stderr.write(error_document(code, message))
            sys.stderr.flush()
        except BrokenPipeError:
            _stop_quietly(stderr=True)
    elif code == "interrupted":
        _get_console(stderr=True).print(message)
    else:
        from rich.markup import escape

        _get_console(stderr=True).print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise SystemExit(status) from None
