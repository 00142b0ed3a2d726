"""`memoir serve`, `memoir mcp` and `memoir hook`: the commands that serve Memoir to other
programs and wire it into the agents that start it.

`memoir serve`: the HTTP API (FastAPI under uvicorn, parsed by httptools:
:func:`memoir.server.plumbing.http_protocol`), with job workers on request (`--workers N`).

On a loopback address (the default 127.0.0.1) it prints, once it listens, a sign-in link
to the page for ``local`` — the owner of the sessions synced from this machine — on stdout:
the token in it works once, for 15 minutes (:mod:`memoir.server.auth`). On any other
address it prints none: ``local``'s data then needs a key (``memoir users key local``).

`memoir mcp`: the MCP server over stdio, and `memoir mcp install --codex | --claude`.

``memoir mcp`` serves search, read, summary, remember, memories and forget to an agent
(the ``mcp`` extra). ``install --codex`` writes the server's entry into Codex CLI's
``$CODEX_HOME/config.toml`` (``~/.codex``): merged with what is there, the previous file
kept as ``config.toml.memoir.bak``, written atomically; installing twice changes nothing.
``install --claude`` writes the Claude Code plugin (``integrations/claude-code`` in the
repository: this server, the session-start sync hook and a skill saying when to search)
into ``<home>/claude-code-plugin`` and prints how to add it to Claude Code.

Both record how to start the memoir that installs them — its absolute path, or its
interpreter with ``-m memoir.cli`` (:func:`memoir.mcp.memoir_command`) — so an
agent starts it whatever its PATH holds (a venv's ``bin``, pipx's or uv's tools).

`memoir hook install | uninstall | status`: the Claude Code SessionStart hook, or with
``--gemini`` Gemini CLI's (``~/.gemini/settings.json``: the same shape, no matcher: Gemini
CLI matches events by exact name, and the hook runs on ``startup``, ``resume``, ``clear``).

The hook runs ``<absolute path of memoir> sync --background >/dev/null 2>&1`` (led by
``MEMOIR_HOME=…`` / ``MEMOIR_SOURCES=…`` when those were set for the install; the path is
this memoir's, :func:`memoir_command`, so the hook needs no PATH) whenever Claude Code
starts or resumes a session (silent: a hook's output would land in the agent's context; the
background sync logs to ``<home>/logs/``). Installing merges into Claude Code's settings
file atomically (other hooks and settings kept; installing twice changes nothing; a moved
executable is updated in place). Uninstalling removes only Memoir's hook. What the hook
and the entries hold is :mod:`memoir.mcp`'s; these commands write the files.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer

from memoir import service
from memoir.cli.app import app, console, print_json
from memoir.config import Settings
from memoir.errors import ConfigError, install_hint
from memoir.model.event import LOCAL_USER

__all__ = ["PLUGIN_FOLDER", "hook_app", "install", "mcp_app", "serve"]


# ---- memoir serve ----


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8420, "--port", min=0, max=65535, help="Port to listen on."),
    workers: int = typer.Option(
        1,
        "--workers",
        min=0,
        max=64,
        help="Background job workers to run in this process (0: leave jobs to `memoir worker`).",
    ),
    log_level: str = typer.Option("info", "--log-level", help="debug | info | warning."),
) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) and the web page. On a
    loopback address, print a one-time sign-in link to the page for your own synced
    sessions (user `local`). Same settings as the CLI; SIGTERM stops admitting requests and
    lets running ones finish."""
    try:
        import uvicorn

        from memoir.server import create_app
        from memoir.server.plumbing import JsonFormatter, http_protocol

        protocol = http_protocol()  # httptools, in the server extra
    except ImportError as exc:
        raise ConfigError(
            f"memoir serve needs the server extra: {install_hint('server')} ({exc})"
        ) from exc
    from memoir.app import Memoir
    from memoir.model.event import LOCAL_USER
    from memoir.server.auth import LINK_TTL_S, SignInLinks, is_loopback, link_url

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("memoir", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(log_level.upper())
        logger.propagate = False
    memoir = Memoir.open()
    service.recover_memories_in_background(memoir)  # what a killed process left, run eventually
    stop = threading.Event()
    threads = service.start_workers(memoir, workers, stop)
    web = create_app(memoir)
    announce: Callable[[int], None] | None = None
    if is_loopback(host):
        links = web.state.sign_in_links = SignInLinks()

        def announce(bound: int) -> None:
            url = link_url(host, bound, links.issue(LOCAL_USER))
            print(f"Sign in to your own sessions (user {LOCAL_USER}): {url}", flush=True)
            print(
                f"  (the link works once, within {LINK_TTL_S // 60} minutes; "
                f"a key for later: memoir users key {LOCAL_USER})",
                flush=True,
            )

    config = uvicorn.Config(
        web,
        host=host,
        port=port,
        http=protocol,
        log_config=None,
        access_log=False,  # the app logs each request as JSON, with its request id
        timeout_graceful_shutdown=30,
        lifespan="on",
    )
    server = _server_class(uvicorn, announce)(config)
    # what exists now lives as long as the process: out of the collector's walks, which
    # then cover only what requests make (docs/benchmarks.md, "Eighth pass")
    gc.freeze()
    try:
        server.run()  # SIGINT / SIGTERM: stop accepting, finish running requests, return
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        memoir.close()


def _server_class(uvicorn: Any, announce: Callable[[int], None] | None = None) -> Any:
    """uvicorn's server, except that a SIGTERM/SIGINT it shut down gracefully for is not
    raised again once it has (uvicorn re-raises it, which would end this process before the
    workers are stopped and the store closed): ``memoir serve`` then exits 0. Once it
    listens, ``announce`` is called with the port it bound (``--port 0`` picks one)."""

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if announce is not None and self.started and self.servers:
                announce(int(self.servers[0].sockets[0].getsockname()[1]))

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                captured = getattr(self, "_captured_signals", None)
                if isinstance(captured, list):
                    captured.clear()

    return Server


# ---- memoir mcp ----

mcp_app = typer.Typer(
    help="Serve Memoir's tools to an agent over MCP on stdio (search, read, summary, "
    "remember, memories, forget); `memoir mcp install` wires the server into Codex or "
    "Claude Code.",
    invoke_without_command=True,
)
app.add_typer(mcp_app, name="mcp")

BACKUP_SUFFIX = ".memoir.bak"
PLUGIN_FOLDER = "claude-code-plugin"  # under the home: where --claude writes the plugin


_USER_HELP = (
    "The user the server acts for: every tool reads and changes this user's conversations "
    "and memories only (default: `memoir --user`, MEMOIR_USER, else local)."
)


@mcp_app.callback(invoke_without_command=True)
def mcp_serve(
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


def _install_codex(path: Path, user: str | None = None) -> dict[str, Any]:
    from memoir.home_files import write_text_atomic
    from memoir.mcp import CodexEntry, memoir_command, pinned_settings, with_entry

    entry = CodexEntry.make(memoir_command(), pinned_settings(Settings.from_env()), user)
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


def _read_plugin(folder: Path) -> dict[str, str]:
    """The plugin's files (relative path → text); hidden editor and cache files skipped."""
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if not path.is_file() or "__pycache__" in rel or rel.endswith(("~", ".swp", ".pyc")):
            continue
        try:
            files[rel] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
    return files


def _install_claude(
    source: Path | None, target: Path | None, user: str | None = None
) -> dict[str, Any]:
    from memoir.home_files import private_dir, write_text_atomic
    from memoir.mcp import (
        hook_command,
        installed_files,
        is_memoir_hook,
        is_plugin,
        memoir_command,
        pinned_settings,
        plugin_dir,
        plugin_mcp_command,
    )

    settings = Settings.from_env()
    source = source or plugin_dir()
    if source is None:
        raise ConfigError(
            "the plugin's files live in the Memoir repository: clone it, then run "
            "memoir mcp install --claude --from ./memoir/integrations/claude-code"
        )
    target = (target or settings.home / PLUGIN_FOLDER).expanduser().absolute()
    pinned = pinned_settings(settings)
    files = installed_files(
        _read_plugin(source.expanduser()),
        mcp_argv=(*memoir_command(), "mcp", *(("--user", user) if user else ())),
        hook=hook_command(pinned),
        env=pinned,
        is_memoir_hook=is_memoir_hook,
    )
    there = _read_plugin(target) if target.is_dir() else {}
    if there and not is_plugin(there):
        raise ConfigError(
            f"{target} holds files that are not Memoir's plugin; give --dir a new folder"
        )
    changed = False
    for rel, text in files.items():
        if there.get(rel) != text:
            private_dir((target / rel).parent)  # the home's folders are owner-only
            write_text_atomic(target / rel, text, tag="memoir", keep_mode=False)
            changed = True
    for rel in set(there) - set(files):  # dropped from the plugin since the last install
        (target / rel).unlink()
        changed = True
    return {
        "plugin": str(target),
        "changed": changed,
        "command": plugin_mcp_command(files),
        "steps": [
            f"claude plugin marketplace add {target}",
            "claude plugin install memoir@memoir",
            f"(or for one session: claude --plugin-dir {target})",
        ],
    }


@mcp_app.command("install")
def install(
    ctx: typer.Context,
    codex: bool = typer.Option(False, "--codex", help="Write the entry into Codex's config."),
    claude: bool = typer.Option(
        False, "--claude", help="Write the Claude Code plugin, pointing at this memoir."
    ),
    config: Path | None = typer.Option(
        None, "--config", help="Codex config file (default $CODEX_HOME/config.toml)."
    ),
    source: Path | None = typer.Option(
        None,
        "--from",
        help="The plugin folder to install from (default: this checkout's "
        "integrations/claude-code).",
    ),
    target: Path | None = typer.Option(
        None, "--dir", help=f"Where to write the plugin (default <home>/{PLUGIN_FOLDER})."
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
    """Wire the MCP server into an agent: Codex CLI's config.toml, or the Claude Code plugin,
    each starting this memoir by its absolute path (no PATH needed)."""
    if not codex and not claude:
        raise ConfigError("say which agent: memoir mcp install --codex, or --claude")
    given = user or ctx.meta.get("memoir_mcp_user")  # `memoir mcp --user NAME install`
    chosen = _mcp_user(given)
    recorded = None if chosen == LOCAL_USER and given is None else chosen
    out: dict[str, Any] = {}
    if codex:
        from memoir.mcp import codex_config_path

        out["codex"] = _install_codex(config or codex_config_path(), recorded)
    if claude:
        out["claude"] = _install_claude(source, target, recorded)
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
        done = out["claude"]
        what = "written to" if done["changed"] else "already up to date in"
        console.print(f"Claude Code: the plugin is {what} {done['plugin']}", soft_wrap=True)
        console.print("  add it to Claude Code (once):", soft_wrap=True)
        for step in done["steps"]:
            console.print(f"  {step}", soft_wrap=True, markup=False)


# ---- memoir hook ----

hook_app = typer.Typer(
    help="The Claude Code (or, with --gemini, Gemini CLI) hook that runs "
    "`memoir sync --background` at session start: install it, uninstall it, or see its status."
)
app.add_typer(hook_app, name="hook")


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it, then run again") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; fix it, then run again")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    """Write the settings in one rename — through a symlink to the file it names (a
    dotfiles checkout), keeping that file's permissions (it may hold keys)."""
    from memoir.home_files import write_text_atomic

    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_text_atomic(path, text, tag="memoir", keep_mode=True)


_SETTINGS_OPT = typer.Option(
    None,
    "--settings",
    help="The agent's settings file (default ~/.claude/settings.json, with --gemini "
    "~/.gemini/settings.json).",
)
_GEMINI_OPT = typer.Option(False, "--gemini", help="Gemini CLI's hook, not Claude Code's.")


@hook_app.command("install")
def hook_install(
    settings: Path | None = _SETTINGS_OPT,
    gemini: bool = _GEMINI_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Add the SessionStart hook that runs `memoir sync --background`."""
    from memoir.mcp import (
        HOOK_MATCHER,
        add_hook,
        default_settings_path,
        hook_command,
        pinned_settings,
    )

    path = settings or default_settings_path(gemini)
    command = hook_command(pinned_settings(Settings.from_env()))
    data, changed = add_hook(_load(path), command, None if gemini else HOOK_MATCHER)
    if changed:
        _save(path, data)
    if as_json:
        print_json({"settings": str(path), "command": command, "changed": changed})
    elif changed:
        console.print(f"Installed the SessionStart hook in {path}:\n  {command}")
    else:
        console.print(f"The hook is already installed in {path}.")


@hook_app.command("uninstall")
def hook_uninstall(
    settings: Path | None = _SETTINGS_OPT,
    gemini: bool = _GEMINI_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remove Memoir's SessionStart hook (other hooks are kept)."""
    from memoir.mcp import default_settings_path, remove_hook

    path = settings or default_settings_path(gemini)
    removed = 0
    if path.exists():
        data, removed = remove_hook(_load(path))
        if removed:
            _save(path, data)
    if as_json:
        print_json({"settings": str(path), "removed": removed})
    else:
        console.print(
            f"Removed {removed} Memoir hook(s) from {path}." if removed else "No Memoir hook found."
        )


@hook_app.command("status")
def hook_status(
    settings: Path | None = _SETTINGS_OPT,
    gemini: bool = _GEMINI_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show whether the hook is installed and the command it runs."""
    from memoir.mcp import default_settings_path, memoir_hooks

    path = settings or default_settings_path(gemini)
    commands = memoir_hooks(_load(path)) if path.exists() else []
    if as_json:
        print_json({"settings": str(path), "installed": bool(commands), "commands": commands})
    else:
        console.print(f"installed: {commands[0]}" if commands else f"not installed in {path}")
