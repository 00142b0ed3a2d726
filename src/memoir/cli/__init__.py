"""The `memoir` command line: a thin adapter over the library.

:func:`main` is the console script. It answers ``memoir --version`` and the top-level
``memoir --help`` (:mod:`memoir.cli.top_help`) before importing the CLI framework, and
hands anything else to :func:`memoir.cli.app.main`, which imports only the module of the
command given.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # no typing at start-up (`memoir --version`): read by mypy only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """The ``memoir`` command (see :func:`memoir.cli.app.main`)."""
    given = list(argv if argv is not None else sys.argv[1:])
    if asks_version(given):
        from memoir import __version__

        try:  # as top_help.write_out, without importing it (shutil, dataclasses)
            sys.stdout.write(f"memoir {__version__}\n")
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(141) from None
        raise SystemExit(0)
    from memoir.cli.top_help import asks_top_help, print_top_help

    if asks_top_help(given):
        print_top_help(given)
    from memoir.cli.app import main as run

    run(argv)


def asks_version(args: list[str]) -> bool:
    """Whether ``memoir ARGS`` prints the version and exits: ``--version`` among the
    options before any command (``memoir --debug --version``, ``memoir --user NAME
    --version``), which the root's ``--version`` acts on whatever
    follows; ``--help`` anywhere wins, as it does in the parser. Pure."""
    if "--help" in args:
        return False
    n = 0
    while n < len(args):
        arg = args[n]
        if arg == "--version":
            return True
        if arg == "--debug" or arg.startswith("--user="):
            n += 1
        elif arg == "--user" and n + 1 < len(args):
            n += 2
        else:
            return False
    return False


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer application, imported when asked for
        from memoir.cli.app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
