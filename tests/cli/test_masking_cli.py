"""`memoir search` and `memoir show` through the CLI entry point mask secrets by default and
show them with ``--reveal``; the stored transcript keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir.config import Settings
from memoir.demo import ClaudeWriter, tool_use_block
from memoir.store import open_store

SID = "5ec7e7a1-0000-4000-8000-00000000beef"
AWS = "AKIAQYLPMN5HHHFPZAM2"
PASSWORD = "s3cr3tV4lue"
API_KEY = "abc123xyz789q"
PEM_BODY = "MIIEowIBAAKCAQEAv8Zp2Jx1q3Jm0q0u9s4nGf1QeXbHk3n0dJ5Lw3q"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
SECRETS = (AWS, PASSWORD, API_KEY, PEM_BODY)
SHOWN_AWS = "[redacted: AWS access key]"
SHOWN_SECRET = "[redacted: secret]"
SHOWN_KEY = "[redacted: private key]"
COMMAND = f"export DB_PASSWORD={PASSWORD}; API_KEY={API_KEY} && ./deploy zanzibar"


def _transcript(folder: Path) -> Path:
    writer = ClaudeWriter(SID, cwd="/home/ann/code/vault")
    writer.user(f"Deploy the zanzibar service; my AWS key is {AWS} for it.")
    writer.assistant(tool_use_block("call-1", "Bash", {"command": COMMAND}))
    writer.tool("call-1", f"deployed zanzibar; the host key is {PEM} (kept in the vault)")
    # a long output the default view shortens: one secret across its first cut, one at its end
    log = "x" * 185 + f" aws {AWS} " + "log line\n" * 300 + f"DB_PASSWORD={PASSWORD}\n"
    writer.assistant(tool_use_block("call-2", "Bash", {"command": "tail deploy.log"}))
    writer.tool("call-2", log)
    writer.assistant("The zanzibar service is deployed.")
    path = folder / "projects" / "-home-ann-code-vault" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.bytes())
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    return out


@pytest.fixture
def synced(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "200")
    source = _transcript(tmp_path / "src").parents[1]
    run(["sync", "--source", str(source), "--no-summaries", "--json"], capsys)
    return home


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_search_json_masks_snippets_and_keeps_highlights_right(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for query in ("zanzibar AWS key", "zanzibar deploy password", "zanzibar host key vault"):
        hits = json.loads(run(["search", query, "--json", "--mode", "text"], capsys))
        assert hits, query
        for hit in hits:
            snippet = hit["snippet"]
            _no_secret(snippet)
            words = {snippet[a:b].lower() for a, b in hit["highlights"]}
            # a query word, or the placeholder of a secret it was in ("key" in PRIVATE KEY)
            assert words and all(
                w in query.lower() or w.startswith(("deploy", "[redacted: ")) for w in words
            ), (query, snippet, words)
    (hit,) = json.loads(run(["search", "aws key", "--json", "--mode", "text"], capsys))
    assert SHOWN_AWS in hit["snippet"]


def test_search_reveal_shows_the_secrets(synced: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["search", "aws key", "--json", "--mode", "text", "--role", "user"]
    (masked,) = json.loads(run(args, capsys))
    (shown,) = json.loads(run([*args, "--reveal"], capsys))
    assert AWS in shown["snippet"] and AWS not in masked["snippet"]
    assert shown["snippet"].replace(AWS, SHOWN_AWS) == masked["snippet"]
    # the same words are highlighted in both, each span moved with the text
    assert [shown["snippet"][a:b] for a, b in shown["highlights"]] == [
        masked["snippet"][a:b] for a, b in masked["highlights"]
    ]


def test_a_snippet_cut_inside_a_key_block_masks_the_piece_it_shows(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["search", "aws key", "--json", "--mode", "text", "--role", "tool"]
    (masked,) = json.loads(run(args, capsys))
    (shown,) = json.loads(run([*args, "--reveal"], capsys))
    # FTS5's window opens inside the key block the tool printed ("…RSA PRIVATE KEY-----"),
    # which the detector alone would not know for a key: the exchange's text tells it
    assert shown["snippet"].startswith("…RSA PRIVATE KEY-----") and PEM_BODY in shown["snippet"]
    assert masked["snippet"].startswith("…[redacted: private key] (kept in the vault)")
    _no_secret(masked["snippet"])
    # "KEY" was highlighted inside the block: the highlight covers its placeholder
    words = [masked["snippet"][a:b] for a, b in masked["highlights"]]
    assert words[0] == SHOWN_KEY and "aws" in words


def test_a_search_for_the_secret_highlights_its_placeholder(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (hit,) = json.loads(run(["search", AWS, "--json", "--mode", "text"], capsys))
    assert AWS not in hit["snippet"]
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == [SHOWN_AWS]


def test_search_terminal_view_masks_and_reveals(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["search", "aws key", "--mode", "text"], capsys)
    assert SHOWN_AWS in out and AWS not in out
    out = run(["search", "aws key", "--mode", "text", "--reveal"], capsys)
    assert AWS in out and SHOWN_AWS not in out


def test_show_masks_text_and_tool_input_and_reveal_shows_them(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["show", SID, "--full"], capsys)
    _no_secret(out)
    for shown in (SHOWN_AWS, SHOWN_SECRET, SHOWN_KEY):
        assert shown in out
    assert "the host key is [redacted: private key] (kept in the vault)" in out  # the key only
    out = run(["show", SID, "--full", "--reveal"], capsys)
    assert AWS in out and PASSWORD in out and PEM_BODY in out

    data = json.loads(run(["show", SID, "--json"], capsys))
    _no_secret(json.dumps(data))
    call, _tail = [e for e in data["events"] if e["kind"] == "tool_call"]
    assert call["payload"]["input"]["command"] == (
        f"export DB_PASSWORD={SHOWN_SECRET}; API_KEY={SHOWN_SECRET} && ./deploy zanzibar"
    )
    raw = json.loads(run(["show", SID, "--json", "--reveal"], capsys))
    call, _tail = [e for e in raw["events"] if e["kind"] == "tool_call"]
    assert call["payload"]["input"]["command"] == COMMAND
    assert AWS in json.dumps(raw)


def test_show_shortens_long_tool_output_without_showing_a_piece_of_a_secret(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["show", SID], capsys)
    assert " aws [redacted: AWS access key] … " in out  # the cut moved past the placeholder
    assert f"DB_PASSWORD={SHOWN_SECRET}" in out
    assert "AKIA" not in out and PASSWORD not in out
    _no_secret(out)
    out = run(["show", SID, "--reveal"], capsys)
    assert "AKIAQYLP" in out and PASSWORD in out  # the plain cut, as before


def test_show_of_one_exchange_is_masked_too(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["show", f"{SID[:8]}:1", "--context", "0"], capsys)
    assert SHOWN_AWS in out
    _no_secret(out)


def test_the_store_keeps_the_transcript_as_it_was(
    synced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["search", "aws key", "--json"], capsys)
    run(["show", SID, "--json"], capsys)
    store = open_store(Settings.from_env({"MEMOIR_HOME": str(synced)}, sources=()))
    try:
        text = "\n".join(e.text for e in store.events.of(SID))
    finally:
        store.close()
    for secret in SECRETS:
        assert secret in text
