"""What a start costs: ``import memoir`` and ``memoir --version`` import nothing heavy,
``memoir --help`` lists every command without importing one, and ``memoir search`` imports
no vector library when no vector is needed (issue 39). Each case runs in a fresh
interpreter and reads its ``sys.modules``; the timings are bench/cli_startup_bench.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memoir.cli import asks_version
from memoir.cli.conventions import COMMANDS
from memoir.cli.top_help import asks_top_help

ROOT = Path(__file__).resolve().parents[1]

# named by the issue, and what else only some commands need
HEAVY = {
    "numpy",
    "openai",
    "anthropic",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "yake",
    "dateparser",
    "onnxruntime",
    "tokenizers",
    "torch",
    "detect_secrets",
    "tiktoken",
    "psycopg",
    "redis",
    "httpx",
}
# what `--version` and `import memoir` do without: the CLI framework, and the library itself
FRAMEWORK = {"typer", "click", "rich", "pydantic"}

_DUMP = "import json, sys; print(json.dumps(sorted(sys.modules)), file=sys.__stderr__)"


def _modules(code: str, *args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (its SystemExit
    caught), then those modules' top-level packages too."""
    script = f"import sys\ntry:\n    {code}\nexcept SystemExit:\n    pass\n{_DUMP}"
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=True,
    )
    names = set(json.loads(out.stderr.strip().splitlines()[-1]))
    return names | {n.split(".")[0] for n in names}


def _cli(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules ``memoir ARGS`` holds when it ends (the console script's ``main``)."""
    code = "from memoir.cli import main; main(sys.argv[1:])"
    return _modules(code, *args, env={"COLUMNS": "100", **(env or {})})


def test_import_memoir_imports_only_the_package() -> None:
    loaded = _modules("import memoir")
    assert not loaded & (HEAVY | FRAMEWORK)
    assert {n for n in loaded if n.startswith("memoir")} == {"memoir"}


def test_a_public_name_is_there_when_used() -> None:
    import memoir

    assert memoir.Memoir.__module__ == "memoir.app"
    assert memoir.NotFound.__module__ == "memoir.errors"
    assert set(memoir.__all__) <= set(dir(memoir))
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        memoir.Nothing  # noqa: B018


def test_the_version_is_the_one_pyproject_builds() -> None:
    import memoir

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert memoir.__version__ == project["version"]


def test_version_imports_no_framework() -> None:
    loaded = _cli("--version")
    assert not loaded & (HEAVY | FRAMEWORK)
    # the package and the entry point, which writes the line itself (stdlib only)
    assert {n for n in loaded if n.startswith("memoir")} == {"memoir", "memoir.cli"}
    assert "typing" not in loaded  # `import memoir` costs no typing (12 ms)


@pytest.mark.parametrize("args", [["--help"], [], ["--debug", "--user", "bob", "--help"]])
def test_top_level_help_imports_no_framework(args: list[str]) -> None:
    """``memoir --help`` (and ``memoir`` alone) is Memoir's own text: no command module,
    and neither typer, click, rich nor pydantic."""
    loaded = _cli(*args)
    assert not loaded & (HEAVY | FRAMEWORK)
    assert {n for n in loaded if n.startswith("memoir")} == {
        "memoir",
        "memoir.cli",
        "memoir.cli.top_help",
    }


def test_a_command_imports_its_own_module_only() -> None:
    loaded = _cli("config", "--help")
    assert {n for n in loaded if n.startswith("memoir.cli.cmd_")} == {"memoir.cli.cmd_admin"}


def test_help_lists_what_the_commands_register() -> None:
    """The table :data:`COMMANDS` against the modules: every command a ``cmd_*`` module
    registers is in it, under that module, with the line its docstring gives; and
    ``memoir --help``, with nothing imported, lists every command of the fully loaded typer
    app with its one line, and every option of its root with its help, value, environment
    variable and default."""
    script = (
        "from memoir.cli.app import _discover_all, app\n"
        "_discover_all()\n"
        "import json, typer\n"
        "def module(info):\n"
        "    return info.callback.__module__\n"
        "def group_module(group):\n"
        "    sub = group.typer_instance\n"
        "    found = [c.callback for c in sub.registered_commands] + [sub.registered_callback"
        " and sub.registered_callback.callback]\n"
        "    return next(f.__module__ for f in found if f)\n"
        "rows = {(c.name or c.callback.__name__.replace('_command', '')): [module(c),"
        " c.short_help] for c in app.registered_commands}\n"
        "rows.update({g.name: [group_module(g), None] for g in app.registered_groups})\n"
        "root = typer.main.get_command(app)\n"
        "ctx = root.make_context('memoir', ['--help'], resilient_parsing=True)\n"
        "lines = {n: c.get_short_help_str(10_000) for n, c in root.commands.items()}\n"
        "params = [[p.opts, p.help, p.metavar, p.envvar, p.default,"
        " getattr(p, 'is_flag', False)] for p in root.get_params(ctx)]\n"
        "print(json.dumps([rows, lines, params, list(root.list_commands(ctx))]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    registered, lines, params, listed = json.loads(done.stdout)
    assert set(registered) == set(COMMANDS)
    for name, (module, line) in registered.items():
        assert module == f"memoir.cli.{COMMANDS[name][0]}", name
        if line is not None:
            assert line == COMMANDS[name][1], name
    shown = subprocess.run(
        [sys.executable, "-m", "memoir.cli", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "90"},
        check=True,
    ).stdout
    flat = " ".join(shown.split())
    assert shown.startswith("Usage: memoir [OPTIONS] COMMAND [ARGS]...\n")
    commands = shown.split("\nCommands:\n", 1)[1]
    rows = [line.split()[0] for line in commands.splitlines() if line[2:3].strip()]
    assert rows == listed  # every command, in the typer app's order
    for name in listed:
        assert f" {name} {lines[name]}" in flat, name
    options = shown.split("\nOptions:\n", 1)[1].split("\nCommands:\n", 1)[0]
    names = [line.split()[0] for line in options.splitlines() if line[2:3].strip()]
    assert names == [opts[0] for opts, *_ in params]
    for (name, *_), help_, metavar, envvar, default, is_flag in params:
        shown_name = name if is_flag or name == "--help" else f"{name} {metavar}"
        assert f" {shown_name} {help_}" in flat, name
        if envvar:
            assert f"[env var: {envvar}]" in flat
        if not is_flag and default is not None:
            assert f"[default: {default}]" in flat
    assert max(len(line) for line in shown.splitlines()) <= 90


@pytest.mark.parametrize(
    ("args", "top"),
    [
        ([], True),
        (["--help"], True),
        (["--debug", "--help"], True),
        (["--user", "bob", "--help"], True),
        (["--user=bob", "--help"], True),
        (["--version", "--help"], True),  # help wins, as in the parser
        (["--help", "search"], True),  # the root's --help, before the command
        (["search", "--help"], False),  # the command's own
        (["--debug"], False),  # typer's "Missing command"
        (["--user", "--help"], False),  # the name of a user: left to the parser
        (["sync"], False),
    ],
)
def test_asks_top_help(args: list[str], top: bool) -> None:
    assert asks_top_help(args) is top


def test_search_without_vectors_imports_no_vector_library(tmp_path: Path) -> None:
    """A home synced without an embedder: ``memoir search`` imports neither numpy nor the
    model's runtime, nor pydantic, with the embedder off and with it on ``auto`` (installed
    or not)."""
    from memoir.demo.make_corpus import corpus_sources

    env = {
        "MEMOIR_HOME": str(tmp_path / "home"),
        "MEMOIR_SOURCES": ":".join(str(p) for p in corpus_sources()),
        "MEMOIR_EMBEDDER": "none",
    }
    synced = subprocess.run(
        [sys.executable, "-m", "memoir.cli", "sync", "--no-summaries", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["exchanges_added"] >= 1
    for embedder in ("none", "auto"):
        loaded = _cli("search", "coupon", env={**env, "MEMOIR_EMBEDDER": embedder})
        assert "memoir.search.engine" in loaded  # it did search
        assert not loaded & {"numpy", "onnxruntime", "tokenizers"}, embedder
        assert "pydantic" not in loaded, embedder  # arguments converted plainly (plain_params)
    # read through a pipe (no COLUMNS): hits masked with no detect-secrets plugin (none
    # of their regexes matches these hits: memoir.secrets.screen), written without rich
    for args in (["coupon"], ["coupon", "--json"], ["timezone flaky"], ["zzyzx"]):
        loaded = _cli("search", *args, env={**env, "COLUMNS": ""})
        assert "memoir.search.engine" in loaded, args
        assert ("memoir.secrets" in loaded) is (args[0] != "zzyzx"), args  # hits were masked
        assert not loaded & (SEARCH_NEVER | {"rich"}), (args, loaded & SEARCH_NEVER)


# what `memoir search` on a home without vectors never imports (issue 39): no vector
# library, no provider SDK, no server, no argument validation, no detect-secrets plugin
# unless a hit may hold a secret they find (requests comes with them)
SEARCH_NEVER = {
    "numpy",
    "onnxruntime",
    "tokenizers",
    "detect_secrets",
    "requests",
    "fastapi",
    "starlette",
    "mcp",
    "openai",
    "anthropic",
    "pydantic",
    "httpx",
}


@pytest.mark.parametrize(
    ("args", "version"),
    [
        (["--version"], True),
        (["--debug", "--version"], True),
        (["--user", "bob", "--version"], True),
        (["--user=bob", "--version"], True),
        (["--version", "search", "x"], True),
        (["--version", "--help"], False),  # help wins, as in the parser
        (["search", "--version"], False),  # the command's own (unknown) option
        (["--user", "--version"], False),  # the name of a user
        (["--user"], False),
        ([], False),
        (["sync"], False),
    ],
)
def test_asks_version(args: list[str], version: bool) -> None:
    assert asks_version(args) is version
