"""`memoir compact FILE --window N [--json]` end to end (offline model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoir.cli.app import main
from memoir.compaction import validate_sequence

from .helpers import call, result, system, user


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(home))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def giant_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    messages = [
        system("You are a coding agent."),
        user("Read the log file and tell me what failed."),
        call(("c1", "read_file"), text="I will read the log."),
        result("c1", "data" + " x" * 225_009),
    ]
    path = tmp_path_factory.mktemp("cli") / "giant.json"
    path.write_text(json.dumps(messages))
    return path


def test_giant_file_compacts_identically_twice(
    capsys: pytest.CaptureFixture[str], giant_file: Path
) -> None:
    code, first, err = run(capsys, "compact", str(giant_file), "--window", "32000", "--json")
    assert code == 0, err
    data = json.loads(first)
    assert list(data)[:7] == [
        "messages",
        "strategy",
        "tokens_before",
        "tokens_after",
        "removed_count",
        "omitted",
        "kept_verbatim",
    ]
    assert data["strategy"] == "stand_in"  # the one giant result stood in, the rest kept
    assert data["tokens_before"] > 225_000 and data["tokens_after"] < 24_000
    assert validate_sequence(data["messages"]) == []
    assert data["omitted"][0]["tool"] == "read_file" and "x x" not in json.dumps(data["omitted"])
    code, second, _ = run(capsys, "compact", str(giant_file), "--window", "32000", "--json")
    assert code == 0 and second == first


def test_under_threshold_is_unchanged_and_jsonl_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    messages: list[dict[str, Any]] = [user("hi"), {"role": "assistant", "content": "hello"}]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    code, out, err = run(capsys, "compact", str(path), "--window", "8000", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["strategy"] == "none" and data["messages"] == messages
    assert data["removed_count"] == 0 and data["omitted"] == []


def test_table_shows_before_and_after(capsys: pytest.CaptureFixture[str], giant_file: Path) -> None:
    code, out, _ = run(capsys, "compact", str(giant_file), "--window", "32000")
    assert code == 0
    assert "tokens" in out and "→" in out and "read_file" in out and "24000" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json\n{", "neither JSON nor JSON Lines"), ('{"messages": 3}', "list of message")],
)
def test_bad_file_is_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, _, err = run(capsys, "compact", str(path), "--window", "100")
    assert code == 1 and message in err and "Traceback" not in err
    assert err.strip().count("\n") == 0


def test_missing_file_and_bad_window(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "compact", str(tmp_path / "none.json"), "--window", "100")
    assert code == 2 and "none.json does not exist" in err  # a bad argument, as the docs say
    code, _, err = run(capsys, "compact", str(tmp_path), "--window", "100")
    assert code == 2 and "is a folder" in err
    path = tmp_path / "m.json"
    path.write_text(json.dumps([user("hi")]))
    code, _, err = run(capsys, "compact", str(path), "--window", "0")
    assert code == 2 and "--window" in err and "Traceback" not in err  # a usage error


def test_facade_builds_a_compactor_with_the_configured_ratio(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoir.app import Memoir
    from memoir.compaction import Compactor

    monkeypatch.setenv("MEMOIR_COMPACT_THRESHOLD_RATIO", "0.6")
    with Memoir.open() as memoir:
        compactor = memoir.compactor()
        assert isinstance(compactor, Compactor)
        res = compactor.compact([user("hi")], window=1_000, session_id="s1")
        assert res.threshold == 600
        assert res.threshold_source == "env MEMOIR_COMPACT_THRESHOLD_RATIO"
        assert memoir.store.traces.find("s1", "compaction")[0].data["strategy"] == "none"


def test_a_summarizer_that_fails_is_said_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMOIR_LLM", "openai:gpt-x")
    monkeypatch.setenv("MEMOIR_LLM_API_KEY", "sk-test")
    monkeypatch.setenv("MEMOIR_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.setenv("MEMOIR_LLM_RETRY_BUDGET", "1")
    turns = [system("You are a coding agent.")]
    for i in range(60):
        turns += [user(f"step {i}"), {"role": "assistant", "content": "done, " * 60}]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(turns))
    code, out, err = run(capsys, "compact", str(path), "--window", "4000", "--json")
    data = json.loads(out)
    assert code == 0 and data["strategy"] == "truncate"
    assert data["reason"].startswith(
        "summarizer failed: Transient: cannot reach http://127.0.0.1:9"
    )
    assert "warning: no summary was written (summarizer failed: Transient" in " ".join(err.split())
    assert "older message(s) were dropped, not summarized" in " ".join(err.split())


def _long_history() -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [system("You are a coding agent.")]
    for i in range(40):
        turns += [
            user(f"step {i}: " + "details " * 40),
            {"role": "assistant", "content": "ok " * 80},
        ]
    return turns


def _write(path: Path, shape: str, messages: list[dict[str, Any]]) -> None:
    if shape == "array":
        path.write_text(json.dumps(messages))
    elif shape == "object":
        path.write_text(json.dumps({"model": "gpt-x", "messages": messages, "n": 1}))
    else:
        path.write_text("".join(json.dumps(m) + "\n" for m in messages))


def _read_back(text: str, shape: str) -> tuple[Any, list[dict[str, Any]]]:
    if shape == "jsonl":
        return None, [json.loads(line) for line in text.splitlines()]
    value = json.loads(text)
    return value, value["messages"] if shape == "object" else value


@pytest.mark.parametrize("shape", ["array", "object", "jsonl"])
def test_output_writes_the_compacted_messages_in_the_inputs_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, shape: str
) -> None:
    source = tmp_path / f"history.{'jsonl' if shape == 'jsonl' else 'json'}"
    _write(source, shape, _long_history())
    code, report, err = run(capsys, "compact", str(source), "--window", "2000", "--json")
    assert code == 0, err
    expected = json.loads(report)["messages"]
    assert len(expected) < len(_long_history())  # it did compact
    target = tmp_path / "out" / source.name
    target.parent.mkdir()
    code, out, err = run(capsys, "compact", str(source), "--window", "2000", "-o", str(target))
    assert code == 0, err
    assert "tokens" in out and f"wrote {len(expected)} message(s)" in err  # the report stays
    value, messages = _read_back(target.read_text(), shape)
    assert messages == expected
    if shape == "object":  # the other keys of the request kept
        assert (value["model"], value["n"]) == ("gpt-x", 1)
    code, piped, err = run(capsys, "compact", str(source), "--window", "2000", "--output", "-")
    assert code == 0 and piped == target.read_text()  # stdout holds only the messages
    assert "tokens" in err  # the report went to stderr
    # the output is itself a messages file memoir compact reads back, already compact
    code, again, _ = run(capsys, "compact", str(target), "--window", "2000", "--json")
    assert code == 0 and json.loads(again)["strategy"] == "none"


def test_output_refusals_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tmp_path = tmp_path / "work"
    tmp_path.mkdir()
    source = tmp_path / "m.json"
    source.write_text(json.dumps([user("hi")]))
    code, out, err = run(capsys, "compact", str(source), "-w", "100", "-o", "-", "--json")
    assert (code, out) == (2, "") and "--output - and --json" in err
    code, _, err = run(
        capsys, "compact", str(source), "-w", "100", "-o", str(tmp_path / "no" / "x")
    )
    assert code == 2 and "does not exist" in err
    code, _, err = run(capsys, "compact", str(source), "-w", "100", "-o", str(tmp_path))
    assert code == 2 and "is a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # nothing half written


@pytest.mark.parametrize(
    ("shape", "messages", "expected"),
    [
        (
            "array",
            [{"role": "user", "content": "é"}],
            '[\n  {\n    "role": "user",\n    "content": "é"\n  }\n]\n',
        ),
        (
            "jsonl",
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
            '{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n',
        ),
        ("transcript", [{"role": "user", "content": "a"}], '{"role": "user", "content": "a"}\n'),
        ("jsonl", [], ""),
    ],
)
def test_render_messages_table(shape: str, messages: list[dict[str, Any]], expected: str) -> None:
    from memoir.cli.cmd_summarize import MessagesFile, render_messages

    assert render_messages(MessagesFile([], shape), messages) == expected  # type: ignore[arg-type]


def test_render_keeps_the_envelope() -> None:
    from memoir.cli.cmd_summarize import MessagesFile, render_messages

    source = MessagesFile([], "object", {"messages": [1], "tools": [{"name": "t"}]})
    assert json.loads(render_messages(source, [{"role": "user", "content": "x"}])) == {
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"name": "t"}],
    }
