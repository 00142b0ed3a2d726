"""`memoir mcp`: the MCP server over stdio, and `memoir mcp install --codex | --claude`.

``memoir mcp`` serves search, read, summary, remember, memories and forget to an agent
(the ``mcp`` extra). ``install --codex`` writes the server's entry into Codex CLI's
``$CODEX_HOME/config.toml`` (``~/.codex``): merged with what is there, the previous file
kept as ``config.toml.memoir.bak``, written atomically; installing twice changes nothing.
``install --claude`` prints how to install the Claude Code plugin (``integrations/
claude-code`` in the repository), which bundles this server, the session-start sync hook
and a skill saying when to search.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import typer

from memoir.cli.app import app, console, print_json
from memoir.config import Settings
from memoir.distribution import install_hint
from memoir.errors import ConfigError
from memoir.model.session import LOCAL_USER

__all__ = ["codex_config_path", "memoir_executable", "plugin_dir"]

mcp_app = typer.Typer(
    help="Serve Memoir's tools to an agent over MCP on stdio (search, read, summary, "
    "remember, memories, forget); `memoir mcp install` wires the server into Codex or "
    "Claude Code.",
    invoke_without_command=True,
)
app.add_typer(mcp_app, name="mcp")

BACKUP_SUFFIX = ".memoir.bak"


_USER_HELP = (
    "The user the server acts for: every tool reads and changes this user's conversations "
    "and memories only (default: `memoir --user`, MEMOIR_USER, else local)."
)


@mcp_app.callback(invoke_without_command=True)
def serve(
    ctx: typer.Context,
    user: str | None = typer.Option(None, "--user", metavar="NAME", help=_USER_HELP),
) -> None:
    """Serve Memoir's tools over MCP on stdin/stdout (an agent starts this; see `memoir mcp
    install`)."""
    ctx.meta["memoir_mcp_user"] = user
    if ctx.invoked_subcommand is not None:
        return
    who = _mcp_user(user)
    settings = Settings.from_env()
    # where the agent works: Claude Code names its project directory; others start us there
    workdir = Path(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())
    try:
        import mcp  # noqa: F401  (the extra; the server itself loads it)
    except ImportError:
        raise ConfigError(f"memoir mcp needs the mcp extra: {install_hint('mcp')}") from None
    from memoir.mcp import serve as run

    run(settings, workdir, who)


def _mcp_user(given: str | None) -> str:
    """``--user`` of ``memoir mcp``, else the global one (``memoir --user``, MEMOIR_USER)."""
    from memoir.cli.app import state

    if given is None:
        return state.user
    if not given.strip() or given != given.strip():
        raise ConfigError(f"--user: give a user's name, not {given!r}")
    return given


def memoir_executable() -> str:
    """The absolute path of this memoir executable (an agent's PATH may not hold it)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "memoir" and argv0.exists():
        return str(argv0.resolve())
    if found := shutil.which("memoir"):
        return str(Path(found).resolve())
    beside = Path(sys.executable).with_name("memoir")
    if beside.exists():
        return str(beside)
    raise ConfigError("cannot find the memoir executable on PATH; install memoir first")


def codex_config_path() -> Path:
    home = os.environ.get("CODEX_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".codex") / "config.toml"


def plugin_dir() -> Path | None:
    """The Claude Code plugin of this checkout (None for an installed wheel)."""
    found = Path(__file__).resolve().parents[3] / "integrations" / "claude-code"
    return found if (found / ".claude-plugin" / "plugin.json").is_file() else None


def _install_codex(path: Path, user: str | None = None) -> dict[str, Any]:
    from memoir.atomic import write_text_atomic
    from memoir.cli.cmd_hook import pinned_settings
    from memoir.mcp.codex import CodexEntry, with_entry

    entry = CodexEntry.make(memoir_executable(), pinned_settings(Settings.from_env()), user)
    path = path.resolve()  # through a symlink (a dotfiles checkout) to the file it names
    try:
        text = path.read_text(encoding="utf-8")
        existed = True
    except FileNotFoundError:
        text, existed = "", False
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    new, changed = with_entry(text, entry, str(path))
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        if existed:
            write_text_atomic(backup, text, tag="memoir", keep_mode=False)
            shutil.copymode(path, backup)  # it may hold keys: as private as the file
        write_text_atomic(path, new, tag="memoir", keep_mode=True)
    return {
        "config": str(path),
        "changed": changed,
        "backup": str(backup) if changed and existed else None,
        "command": entry.command,
        "args": list(entry.args),
    }


def _claude_steps() -> list[str]:
    where = plugin_dir()
    if where is None:
        return [
            "The plugin lives in the Memoir repository at integrations/claude-code:",
            "  git clone <memoir repository> && cd memoir",
            "  claude plugin marketplace add ./integrations/claude-code",
            "  claude plugin install memoir@memoir",
        ]
    return [
        f"claude plugin marketplace add {where}",
        "claude plugin install memoir@memoir",
        f"(or for one session: claude --plugin-dir {where})",
        "memoir must be on the PATH Claude Code starts commands with.",
    ]


@mcp_app.command("install")
def install(
    ctx: typer.Context,
    codex: bool = typer.Option(False, "--codex", help="Write the entry into Codex's config."),
    claude: bool = typer.Option(False, "--claude", help="Print how to install the plugin."),
    config: Path | None = typer.Option(
        None, "--config", help="Codex config file (default $CODEX_HOME/config.toml)."
    ),
    user: str | None = typer.Option(
        None,
        "--user",
        metavar="NAME",
        help="Record this user in the entry: the server acts for them only (default: "
        "`memoir mcp --user`, `memoir --user` or MEMOIR_USER when given, else local).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Wire the MCP server into an agent: Codex CLI's config.toml, or the Claude Code plugin."""
    if not codex and not claude:
        raise ConfigError("say which agent: memoir mcp install --codex, or --claude")
    given = user or ctx.meta.get("memoir_mcp_user")  # `memoir mcp --user NAME install`
    chosen = _mcp_user(given)
    recorded = None if chosen == LOCAL_USER and given is None else chosen
    out: dict[str, Any] = {}
    if codex:
        out["codex"] = _install_codex(config or codex_config_path(), recorded)
    if claude:
        out["claude"] = {"plugin": str(plugin_dir() or ""), "steps": _claude_steps()}
    if as_json:
        print_json(out)
        return
    if codex:
        done = out["codex"]
        if done["changed"]:
            console.print(f"Codex: Memoir's MCP server added to {done['config']}", soft_wrap=True)
            if done["backup"]:
                console.print(f"  the previous file is kept as {done['backup']}", soft_wrap=True)
        else:
            console.print(f"Codex: already installed in {done['config']}", soft_wrap=True)
    if claude:
        console.print("Claude Code: install the plugin with", soft_wrap=True)
        for step in out["claude"]["steps"]:
            console.print(f"  {step}", soft_wrap=True, markup=False)
