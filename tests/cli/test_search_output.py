"""`memoir search` read through a pipe writes its text without rich (issue 39): the bytes
are the ones rich writes, hit for hit — checked through the real entry point against the
same search with ``COLUMNS`` at the width a pipe gets (rich then writes it), on hits with
secrets, highlights, summaries, wide and combining characters, markup-like text, control
characters and tabs (which rich expands: written by rich still)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoir.cli.app import PIPE_WIDTH, plain_text
from memoir.demo import ClaudeWriter, tool_use_block

SID = "5ec7e7a1-0000-4000-8000-00000000c0de"
SAYINGS = [
    "Deploy zanzibar; my AWS key is AKIAQYLPMN5HHHFPZAM2 and DB_PASSWORD=s3cr3tV4lue.",
    "zanzibar 注文一覧のページが遅いです 😀 naïve café [bold]not markup[/bold] :smile: \\o/",
    "zanzibar with an escape \x1b[31mred\x1b[0m and a bell \x07 in the log",
    "zanzibar\tindented\twith tabs",
    "zanzibar " + "long line of words " * 40,
]
# query: whether every line is plain (rich is not imported)
QUERIES = {
    "zanzibar": False,  # every saying: one holds a tab, so rich writes them
    "deploy": True,
    "café": True,
    "bell": True,
    "words": True,
    "indented": False,
    "nothing-such": True,
    "zzyzx:smile:": False,  # "no matches" with an emoji code: rich's
}
_RUN = (
    "import sys\nfrom memoir.cli import main\ntry:\n    main(sys.argv[1:])\n"
    "except SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
    "sys.stdout.flush()\nprint(json.dumps([code, 'rich' in sys.modules]), file=sys.__stderr__)"
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search-output")
    writer = ClaudeWriter(SID, cwd="/home/ann/code/zanzibar")
    for n, saying in enumerate(SAYINGS):
        writer.user(saying)
        writer.assistant(tool_use_block(f"call-{n}", "Bash", {"command": f"echo {n}"}))
        writer.tool(f"call-{n}", f"done {n}: {saying}")
        writer.assistant(f"Done: {saying}")
    source = root / "src" / "projects" / "-home-ann-code-zanzibar"
    source.mkdir(parents=True)
    (source / f"{SID}.jsonl").write_bytes(writer.bytes())
    env = _env(root / "home", COLUMNS="")
    done = subprocess.run(
        [sys.executable, "-m", "memoir.cli", "sync", "--source", str(source.parent), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["exchanges_added"] == len(SAYINGS)
    return root / "home"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        env.pop(name, None)
    return {**env, "MEMOIR_HOME": str(home), "MEMOIR_EMBEDDER": "none", **extra}


def _search(home: Path, args: list[str], **extra: str) -> tuple[bytes, bytes, bool]:
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + _RUN, "search", *args],
        capture_output=True,
        env=_env(home, **extra),
        timeout=120,
    )
    *err, status = done.stderr.splitlines()
    code, rich_loaded = json.loads(status)
    assert code == 0, done.stderr
    return done.stdout, b"\n".join(err), rich_loaded


@pytest.mark.parametrize(("query", "plain"), QUERIES.items())
def test_search_through_a_pipe_writes_what_rich_writes(home: Path, query: str, plain: bool) -> None:
    out, err, rich_loaded = _search(home, ["--mode", "text", "--", query], COLUMNS="")
    by_rich, err_by_rich, _ = _search(
        home, ["--mode", "text", "--", query], COLUMNS=str(PIPE_WIDTH)
    )
    assert out == by_rich
    assert err == err_by_rich
    assert rich_loaded is not plain
    text = out.decode()
    assert text.endswith("\n")
    assert "AKIAQYLPMN5HHHFPZAM2" not in text and "s3cr3tV4lue" not in text
    # every hit's session summary quotes the first saying, masked
    assert ("[redacted: AWS access key]" in text) is not text.startswith("no matches")


def test_the_hint_on_stderr_is_the_same_plain() -> None:
    from memoir.cli.cmd_read import _WAITING

    assert plain_text(_WAITING) and not any(ch in _WAITING for ch in "[\\")


def test_json_is_the_same_through_a_pipe_and_a_terminal_width(home: Path) -> None:
    piped, _, rich_loaded = _search(home, ["deploy", "--json"], COLUMNS="")
    wide, _, _ = _search(home, ["deploy", "--json"], COLUMNS="100")
    assert piped == wide and not rich_loaded
    hits = json.loads(piped)
    assert hits and all("AKIAQYLPMN5HHHFPZAM2" not in h["snippet"] for h in hits)
    assert any("[redacted: AWS access key]" in h["snippet"] for h in hits)


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("a line", True),
        ("a\nline", True),
        ("wide 注文 😀", True),
        ("a\ttab", False),
        ("an \x1b escape", False),
        ("\x85 next line", False),
        ("x" * (PIPE_WIDTH // 2), True),
        ("x" * (PIPE_WIDTH // 2 + 1), False),
    ],
)
def test_plain_text(text: str, plain: bool) -> None:
    assert plain_text(text) is plain


@pytest.mark.parametrize("columns", ["", str(PIPE_WIDTH)])
def test_search_to_a_reader_that_went_away_ends_quietly(home: Path, columns: str) -> None:
    """Plain or through rich, a closed pipe ends the command with SIGPIPE's status and
    says nothing."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoir.cli", "search", "deploy", "--mode", "text"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(home, COLUMNS=columns),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert (proc.wait(timeout=120), err) == (141, "")
