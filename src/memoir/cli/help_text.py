"""How ``memoir --help`` reads: commands listed in the order a user reaches for them, each
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
import re
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import ArgumentInfo

from memoir.cli.top_help import COMMAND_ORDER, COMMANDS, ordered

__all__ = [
    "COMMANDS",
    "COMMAND_ORDER",
    "LazyGroup",
    "OrderedGroup",
    "ordered",
    "short_help",
    "tidy_help",
]

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
