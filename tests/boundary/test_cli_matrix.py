"""Every CLI command, enumerated from the CLI's command tree, run as ``memoir --user
alice …`` through the real entry point: on her own object it works; on Bob's and on one
that does not exist the exit status and output are the same (the echoed id aside); lists
and searches name nothing of Bob's; nothing of Bob's changes. Commands that work on the
whole home (sync, verify, embed, serve, the users' keys …) are the home owner's and are
listed as such. A command this file does not classify fails the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from cli_run import run_cli
from memoir import service
from memoir.cli.app import _discover_all, app

from .conftest import A_SESSION, A_STORED, B_SESSION, B_STORED, A, B, World
from .matrix import Refs, dumps, no_leak, refs, same_refusal

# command → the runs made of it: (kind, arguments with "{ref}"); kinds as in the HTTP
# matrix, and "job" (a job's id)
COMMANDS: dict[str, list[tuple[str, list[str]]]] = {
    "remember": [("session", ["remember", "{ref}"])],
    "show": [("session", ["show", "{ref}"]), ("session", ["show", "{ref}:1", "--json"])],
    "summarize": [("session", ["summarize", "{ref}"])],
    "compact": [("session", ["compact", "--session", "{ref}", "--window", "200000"])],
    "search": [
        ("wide", ["search", "prefer cluster tabs", "--json"]),
        ("session", ["search", "prefer", "--session", "{ref}"]),
        ("project", ["search", "prefer", "--project", "{ref}"]),
    ],
    "usage": [("wide", ["usage", "--json"])],
    "jobs list": [("wide", ["jobs", "list", "--json"])],
    "jobs show": [("job", ["jobs", "show", "{ref}"])],
    "jobs cancel": [("job", ["jobs", "cancel", "{ref}"])],
    "memories list": [
        ("wide", ["memories", "list", "--json"]),
        ("session", ["memories", "list", "--session", "{ref}"]),
        ("project", ["memories", "list", "--project", "{ref}"]),
    ],
    "memories show": [("item", ["memories", "show", "{ref}"])],
    "memories search": [
        ("wide", ["memories", "search", "prefer cluster", "--json"]),
        ("project", ["memories", "search", "prefer", "--project", "{ref}"]),
    ],
    "memories context": [
        ("wide", ["memories", "context", "--json"]),
        ("project", ["memories", "context", "--project", "{ref}"]),
    ],
    "memories export": [("wide", ["memories", "export"])],
    "memories import": [("wide", ["memories", "import", "{export}", "--json"])],
    "memories receipts": [
        ("wide", ["memories", "receipts", "--json"]),
        ("session", ["memories", "receipts", "--session", "{ref}"]),
    ],
    "memories off": [
        ("session", ["memories", "off", "--session", "{ref}"]),
        ("project", ["memories", "off", "--project", "{ref}"]),
    ],
    "memories on": [
        ("session", ["memories", "on", "--session", "{ref}"]),
        ("project", ["memories", "on", "--project", "{ref}"]),
    ],
    "memories forget": [
        ("wide", ["memories", "forget", "--matching", "nothing-like-this", "--yes"]),
        ("item", ["memories", "forget", "{ref}", "--yes"]),
        ("session", ["memories", "forget", "--session", "{ref}", "--yes"]),
        ("project", ["memories", "forget", "--project", "{ref}", "--yes"]),
    ],
}
# the home owner's commands: they work on the whole home (its transcripts, index, vectors,
# settings, users and keys, agents' configuration), not on one user's data
HOME = {
    "sync",
    "verify",
    "stats",  # the home's size and health (archive, index, embeddings): every user's rows
    "embed",
    "worker",
    "serve",
    "config",
    "demo",
    "memories recover",
    "users add",
    "users key new",
    "users key rotate",
    "users list",
    "users revoke",
    "hook install",
    "hook uninstall",
    "hook status",
    "mcp install",
    "bench locomo",
    "bench memories",
    "bench summaries",
    "bench compaction",
}


def _leaves() -> set[str]:
    _discover_all()
    found: set[str] = set()

    def walk(command: object, path: list[str]) -> None:
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            found.add(" ".join(path))

    walk(typer.main.get_command(app), [])
    return found


def test_every_command_is_classified() -> None:
    leaves = _leaves()
    assert leaves - set(COMMANDS) - HOME == set(), "commands the matrix does not classify"
    assert (set(COMMANDS) | HOME) - leaves == set(), "the matrix names commands there are not"
    assert not set(COMMANDS) & HOME


@pytest.fixture
def cli_world(
    world: World, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[World, dict[str, str]]:
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    jobs = {
        user: service.regenerate_summary(world.memoir, user, sid).id
        for user, sid in ((A, A_SESSION), (B, B_SESSION))
    }
    return world, jobs


def _refs(world: World, jobs: dict[str, str], kind: str) -> Refs:
    if kind == "job":
        return Refs(jobs[A], jobs[B], "0" * len(jobs[A]))
    return refs(world, kind)


def _run(args: list[str], ref: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, out, err = run_cli(["--user", A, *(a.replace("{ref}", ref) for a in args)], capsys)
    return code, out + err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_as_alice(
    cli_world: tuple[World, dict[str, str]],
    name: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    world, jobs = cli_world
    bob_before = world.snapshot(B)
    export = tmp_path / "alice.jsonl"
    export.write_text("".join(f"{line}\n" for line in world.memoir.as_user(A).memories.export()))
    for kind, raw in COMMANDS[name]:
        args = [a.replace("{export}", str(export)) for a in raw]
        if kind == "wide":
            code, text = _run(args, "", capsys)
            assert code == 0, (args, text)
            no_leak(world, text)
            continue
        r = _refs(world, jobs, kind)
        other = _run(args, r.other, capsys)
        missing = _run(args, r.missing, capsys)
        assert other[0] != 0, (args, other)
        same_refusal(other, missing, r)
        no_leak(world, other[1].replace(r.other, ""))
        code, text = _run(args, r.own, capsys)  # last: it may change her own
        assert code == 0, (args, text)
        no_leak(world, text)
    assert dumps(world.snapshot(B)) == dumps(bob_before), "something of Bob's changed"


def test_the_owner_acts_for_another_user_by_name(
    cli_world: tuple[World, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --user the CLI acts for local (nothing here); MEMOIR_USER or --user names
    whom it acts for."""
    world, _ = cli_world
    code, out, _ = run_cli(["memories", "list", "--json"], capsys)
    assert code == 0 and json.loads(out)["items"] == []
    code, out, _ = run_cli(["--user", B, "memories", "list", "--json"], capsys)
    assert [i["id"] for i in json.loads(out)["items"]] == [world.b_item]
    code, out, _ = run_cli(["--user", A, "search", "prefer", "--json"], capsys)
    assert {h["session_id"] for h in json.loads(out)} == {A_STORED}
    # a query word starting with "-" is an exclusion after the global option too
    code, out, _ = run_cli(["--user", B, "search", "prefer", "-tabs", "--json"], capsys)
    assert code == 0 and {h["session_id"] for h in json.loads(out)} == {B_STORED}
