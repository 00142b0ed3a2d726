"""How the CLI reads and fails: its help text, its plain parameters, its error output, and
the command line before the parser reads it (the global options, a query's dash words).

How the CLI says that something went wrong: one line on stderr, or under ``--json`` one
JSON object, ``{"error": {"code": …, "message": …}}``, with the same exit status.

A bad value given to a flag reads as a plain sentence naming the flag (``--limit must be 1
or more``), whatever phrasing the argument parser (typer, which checks values with
pydantic) produced. The decisions are pure functions, tested with tables
(``tests/cli/test_failures.py``).

typer (0.29) converts every argument of a command through a pydantic ``TypeAdapter``,
which imports pydantic when any command runs: about a third of what ``memoir search``
imports before it searches. Memoir's arguments are mostly plain (a string, a whole
number in range, a choice of an enum), and their values come as they are.

:func:`plain_value` decides, for one annotation and one value, the result typer's
adapter would give when that result is certain: a ``str`` for a string, an ``int``
for digits within the option's range, the enum member a choice names (through typer's
own choice matching). Anything else — a negative or out-of-range number, a path, a
date, a parser, an unknown choice — is left to typer's adapter, so its conversion and
its error messages stay exactly typer's. :func:`install` puts the decision in front of
typer's, once; a typer without the hooks it needs is left as it is. Tests:
``tests/cli/test_plain_params.py``.

How ``memoir --help`` reads: commands listed in the order a user reaches for them, each
with a one-line description that ends where its first sentence does, flags that take no
value shown without a type, and arguments named one way (``QUERY``, ``SESSION``).

Commands keep their full docstrings for ``memoir CMD --help``; :func:`tidy_help` derives
what the lists show from them once the ``cmd_*`` modules are imported. The decisions are
pure functions (``tests/cli/test_help_text.py``).

The top-level list is known before any ``cmd_*`` module is: :data:`COMMANDS`
(:mod:`memoir.cli.top_help`, which prints ``memoir --help`` without typer) names each
command's module and its one line, so a command imports only its own
(:class:`LazyGroup`). A test holds the table to what the modules register
(``tests/test_light_imports.py``).
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import ArgumentInfo

from memoir.cli.top_help import COMMAND_ORDER, COMMANDS, ordered
from memoir.errors import ConfigError, MemoirError

__all__ = [
    "COMMANDS",
    "COMMAND_ORDER",
    "NOT_PLAIN",
    "LazyGroup",
    "OrderedGroup",
    "dash_query",
    "error_code",
    "error_document",
    "exit_status",
    "global_options",
    "install_plain_params",
    "ordered",
    "plain_reason",
    "plain_value",
    "short_help",
    "tidy_help",
    "usage_message",
    "wants_json",
]


# ---- failures ----


def wants_json(argv: list[str]) -> bool:
    """``--json`` among the options (not after ``--``, where it would be a query word)."""
    head = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in head


def error_code(exc: BaseException) -> str:
    """A stable, machine-readable name for an error: the class name in snake case without
    a trailing ``_error`` (``NotFound`` → ``not_found``, ``ConfigError`` → ``config``); a
    command-line usage error is ``usage``; anything not Memoir's own is ``internal``."""
    if isinstance(exc, MemoirError):
        name = type(exc).__name__
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
        return snake.removesuffix("_error") or "memoir"
    if _is_usage(exc):
        return "usage"
    return "internal"


def exit_status(exc: BaseException) -> int:
    """2 for a bad setting or argument, 1 for any other error."""
    if isinstance(exc, ConfigError) or (not isinstance(exc, MemoirError) and _is_usage(exc)):
        return 2
    return 1


def error_document(code: str, message: str) -> str:
    """The JSON an error is under ``--json``: one line, ending in a newline."""
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False) + "\n"


def _is_usage(exc: BaseException) -> bool:
    """The argument parser's usage errors (typer vendors click: matched by shape)."""
    return hasattr(exc, "format_message") and getattr(exc, "exit_code", None) == 2


_REASONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.DOTALL), replacement)
    for pattern, replacement in (
        (r"Input should be greater than or equal to (\S+?)\.?$", r"must be \1 or more"),
        (r"Input should be greater than (\S+?)\.?$", r"must be more than \1"),
        (r"Input should be less than or equal to (\S+?)\.?$", r"must be \1 or less"),
        (r"Input should be less than (\S+?)\.?$", r"must be less than \1"),
        (r"Input should be a valid integer.*", "must be a whole number"),
        (r"Input should be a valid number.*", "must be a number"),
        (r"Input should be a valid boolean.*", "must be true or false"),
        (r"Input should be a valid (date|datetime).*", r"must be a \1"),
    )
)
_NOT_ONE_OF = re.compile(r"^(?P<value>'.*?'|\S+) is not one of (?P<choices>.+?)\.?$", re.DOTALL)


def plain_reason(message: str, value: str | None = None) -> str:
    """What was wrong with a flag's value, as the end of a sentence that starts with the
    flag's name: ``must be 1 or more``, ``must be one of text, vector, hybrid, not 'foo'``.
    ``value``: what the user typed, when known, added where the reason does not say it.
    A reason in no known phrasing is kept (without pydantic's ``Value error, ``). Pure."""
    text = message.strip().removeprefix("Value error, ")
    found = _NOT_ONE_OF.match(text)
    if found:
        choices = ", ".join(c.strip().strip("'\"") for c in found["choices"].split(","))
        return f"must be one of {choices}, not {found['value']}"
    for pattern, replacement in _REASONS:
        if pattern.fullmatch(text):
            plain = pattern.sub(replacement, text)
            return plain if value is None else f"{plain}, not {value!r}"
    return text[:1].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text


def _flag_name(exc: Any) -> str | None:
    hint = getattr(exc, "param_hint", None)
    if isinstance(hint, str):
        return hint.strip("'\"")
    if isinstance(hint, (list, tuple)) and hint:
        return str(hint[0]).strip("'\"")
    param = getattr(exc, "param", None)
    if param is None:
        return None
    opts = [o for o in getattr(param, "opts", []) if isinstance(o, str)]
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(getattr(param, "name", "") or "").upper() or None
    return next((o for o in opts if o.startswith("--")), opts[0])


def usage_message(exc: Any, argv: list[str] | None = None) -> str:
    """One sentence for a usage error of the argument parser: a bad value names the flag
    and says what it must be (``--limit must be 1 or more, not '0'``); any other (an
    unknown option, a missing argument) keeps the parser's own words, without its
    ``Error:`` box."""
    name = type(exc).__name__
    if name == "BadParameter" or (name != "MissingParameter" and getattr(exc, "param", None)):
        flag = _flag_name(exc)
        reason = str(getattr(exc, "message", "") or exc)
        param = getattr(exc, "param", None)
        opts = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
        value = _value_given([o for o in opts if isinstance(o, str)], argv or [])
        if flag:
            return f"{flag} {plain_reason(reason, value)}"
    text: str = exc.format_message()
    return text.replace("Invalid value: ", "")


def _value_given(opts: list[str], argv: list[str]) -> str | None:
    """The value typed after one of a flag's names (``--limit 0``, ``-n 0``,
    ``--limit=0``), the last one given; None when there is none. Pure."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in opts and arg.startswith("-") and i + 1 < len(argv):
            found = argv[i + 1]
        elif "=" in arg and arg.split("=", 1)[0] in opts:
            found = arg.split("=", 1)[1]
    return found


# ---- plain_params ----

NOT_PLAIN: Any = object()  # plain_value's answer when typer's adapter must decide


def plain_value(annotation: Any, info: Any, value: Any, ctx: Any = None) -> Any:
    """What typer's adapter makes of ``value`` for ``annotation`` (with ``info``, the
    parameter's ``ParameterInfo``; ``ctx`` the click context a choice is matched in), or
    :data:`NOT_PLAIN` when that is not certain. Pure."""
    if getattr(info, "parser", None) is not None:
        return NOT_PLAIN
    if annotation is str:
        if type(value) is str and _utf8(value):
            return value
        return NOT_PLAIN
    if annotation is int:
        if type(value) is int:
            number = value
        elif type(value) is str and value.isascii() and value.isdigit():
            number = int(value)
        else:
            return NOT_PLAIN
        low, high = getattr(info, "min", None), getattr(info, "max", None)
        if (low is not None and number < low) or (high is not None and number > high):
            return NOT_PLAIN  # refused or clamped: typer says which
        return number
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        from typer._param_types import coerce_cli_choice

        try:
            return coerce_cli_choice(
                value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx
            )
        except Exception:  # not one of them: typer's message
            return NOT_PLAIN
    return NOT_PLAIN


def _utf8(text: str) -> bool:
    """Whether ``text`` is whole Unicode (an argument of undecodable bytes holds lone
    surrogates, which pydantic judges itself)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def install_plain_params() -> None:
    """Make typer's parameters try :func:`plain_value` before building their pydantic
    adapter (built, as before, when a value is not plain). Done once."""
    try:
        from typer import _coercion
        from typer.core import _TyperParameter
    except ImportError:  # another typer: its own conversion
        return
    runtime = getattr(_TyperParameter, "get_runtime_param", None)
    base = getattr(_coercion, "RuntimeParam", None)
    if runtime is None or base is None or getattr(runtime, "_memoir_plain", False):
        return

    @dataclass(frozen=True)
    class PlainFirst(base):  # type: ignore[misc, valid-type]
        """Typer's runtime conversion with :func:`plain_value` in front of it."""

        descriptor: Any = None
        built: list[Any] = field(default_factory=list)  # typer's own, once needed

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            plain = plain_value(self.annotation, self.parameter_info, value, ctx)
            if plain is not NOT_PLAIN:
                return plain
            if not self.built:
                self.built.append(_coercion.build_runtime_param(self.descriptor))
            return self.built[0]._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            descriptor = self.type_descriptor
            if descriptor.file_annotation is None:
                self._runtime_param = PlainFirst(
                    parameter_info=descriptor.parameter_info,
                    annotation=descriptor.annotation,
                    descriptor=descriptor,
                )
        return runtime(self)

    get_runtime_param._memoir_plain = True  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]


# ---- help_text ----

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def short_help(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, its lines joined: what a
    command list shows beside the name. Pure."""
    if not doc:
        return ""
    first = inspect.cleandoc(doc).split("\n\n", 1)[0]
    joined = " ".join(line.strip() for line in first.splitlines())
    return _SENTENCE_END.split(joined, 1)[0].strip()


class OrderedGroup(TyperGroup):
    """A command group that lists its commands in :data:`COMMAND_ORDER`."""

    def list_commands(self, ctx: Any) -> list[str]:
        return ordered(super().list_commands(ctx))


class _Unloaded(TyperCommand):
    """A command of :data:`COMMANDS` whose module is not imported yet: its name and one
    line, enough for a command list; asked for to run, :class:`LazyGroup` loads it."""


class LazyGroup(OrderedGroup):
    """The top-level group: every command of :data:`COMMANDS` is listed from the table, and
    a command's module is imported only when the command itself is asked for (to run, or
    for its own help) — by :attr:`load`, which registers it on the typer app and returns
    the click command made of it. While the group prints its own help, the table's lines
    stand in for what is not loaded."""

    load: Any = None  # (name) -> the command: set by memoir.cli.app
    _listing = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, (_, line) in COMMANDS.items():
            if name not in self.commands:
                self.commands[name] = _Unloaded(name=name, short_help=line, callback=None)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if isinstance(command, _Unloaded) and not self._listing and self.load is not None:
            command = self.commands[cmd_name] = self.load(cmd_name)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def tidy_help(app: typer.Typer) -> None:
    """Give every command of ``app`` (and of its groups, recursively) a one-line
    ``short_help`` from its docstring or help unless it has one, and upper-case argument
    names; show flags without a type; a group given alone shows its help. Idempotent."""
    _flags_show_no_type()
    if app.registered_callback is not None:
        _tidy_params(app.registered_callback.callback)
    for command in app.registered_commands:
        if command.short_help is None:
            command.short_help = short_help(command.help or inspect.getdoc(command.callback))
        _tidy_params(command.callback)
    for group in app.registered_groups:
        sub = group.typer_instance
        if sub is None:
            continue
        own = sub.info
        doc = group.help or own.help or inspect.getdoc(group.callback or own.callback)
        if group.short_help is None:
            group.short_help = short_help(doc if isinstance(doc, str) else None)
        callback = sub.registered_callback
        runs_alone = any(
            info is not None and info.invoke_without_command is True
            for info in (group, own, callback)
        )
        if not runs_alone and own.no_args_is_help is not True:
            own.no_args_is_help = True  # `memoir jobs` alone: its help, not "Missing command"
        tidy_help(sub)


def _tidy_params(callback: Any) -> None:
    if callback is None:
        return
    for name, param in inspect.signature(callback).parameters.items():
        info = param.default
        if isinstance(info, ArgumentInfo) and info.metavar is None:
            info.metavar = name.upper()


def _flags_show_no_type() -> None:
    """typer shows ``<bool>`` beside a flag (``--json``, ``--help``) as if it took a value;
    a flag's type column is left empty instead. Done once; a typer without that method is
    left as it is (``tests/cli/test_help_text.py`` reads every command's help)."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or hasattr(shown, "__wrapped__"):
        return

    @functools.wraps(shown)
    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and not getattr(self, "count", False):
            return None
        result: str | None = shown(self, ctx)
        return result

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


# ---- the command line before the parser reads it ----


def global_options(args: list[str]) -> int:
    """How many of ``args`` are options of ``memoir`` itself, before the command (``--debug``,
    ``--user NAME``, ``--user=NAME``). Pure."""
    n = 0
    while n < len(args):
        if args[n] in ("--debug", "--version") or args[n].startswith("--user="):
            n += 1
        elif args[n] == "--user" and n + 1 < len(args):
            n += 2
        else:
            break
    return n


def dash_query(
    argv: list[str], known: set[str], valued: frozenset[str] | set[str] = frozenset()
) -> list[str]:
    """``memoir search -prisma``: a word that starts with ``-`` but is no option of the
    command (``known``; ``valued``: those taking a value) is part of the query (an
    exclusion), not a bundle of short options (``-p risma``). When there is one, the
    query's words — positional ones and such dash words, in order — move behind ``--`` as
    one query. Pure."""
    rest = argv[1:]
    if "--" in rest:
        return argv
    options: list[str] = []
    words: list[str] = []
    dashed = False
    i = 0
    while i < len(rest):
        arg = rest[i]
        name = arg.split("=", 1)[0]
        if name in known:
            options.append(arg)
            if name in valued and "=" not in arg and i + 1 < len(rest):
                options.append(rest[i + 1])
                i += 1
        elif (arg.startswith("-") and not arg.startswith("--") and len(arg) > 2) or (
            arg.startswith("--") and any(c.isspace() for c in name)
        ):  # -prisma, or "--flag foo" in one argument: no option has a space in its name
            words.append(arg)
            dashed = True
        elif arg.startswith("-"):
            options.append(arg)  # an unknown option (a typo of one?): the parser says so
        else:
            words.append(arg)
        i += 1
    return [*argv[:1], *options, "--", " ".join(words)] if dashed else argv
