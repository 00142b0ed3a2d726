"""What `memoir sync` and `memoir verify` say of sources they cannot read as asked: a file
deleted between the scan and the read, a folder that cannot be listed, a source that is no
folder, a folder whose transcripts are all symlinks left out. Through the real entry
point."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

from cli_run import run_cli
from memoir.cli.cmd_sync import empty_scan_line
from memoir.demo import ClaudeWriter
from memoir.ingest import sync as sync_module
from memoir.ingest.discover import broken_link

discover = importlib.import_module("memoir.ingest.discover")  # the package names a function so

UUIDS = ["aaaaaaaa-1111-4222-8333-44444444444" + str(n) for n in range(3)]


@pytest.fixture
def src(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "src"
    for n, uuid in enumerate(UUIDS):
        folder = root / f"-tmp-proj{n}"
        folder.mkdir(parents=True)
        data = ClaudeWriter(uuid).user(f"question number{n}").assistant("answer").bytes()
        (folder / f"{uuid}.jsonl").write_bytes(data)
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(root))
    return root


def _sync(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    code, out, err = run_cli(["sync", "--no-summaries", "--json"], capsys)
    return code, json.loads(out), err


def test_a_file_deleted_between_scan_and_read_is_passed_over(
    src: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, report, _ = _sync(capsys)
    assert code == 0 and report["files_indexed"] == 3
    gone = src / "-tmp-proj1" / f"{UUIDS[1]}.jsonl"
    for path in src.rglob("*.jsonl"):  # all grown: all to be read
        with open(path, "ab") as fp:
            fp.write(ClaudeWriter(path.stem).user("and then?").bytes())
    real = sync_module.ingest_file

    def deleted_first(
        run: object, cand: sync_module.FoundFile, *args: object, **kw: object
    ) -> None:
        if cand.path == gone:
            gone.unlink()
            gone.parent.rmdir()
        real(run, cand, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "ingest_file", deleted_first)
    code, report, err = _sync(capsys)
    assert code == 0, err
    assert report["errors"] == [] and report["files_vanished"] == 1
    assert report["files_indexed"] == 2
    code, out, err = run_cli(["sync", "--no-summaries"], capsys)
    assert code == 0 and "warning" not in err and "could not be read" not in err
    # what was synced of it stays searchable
    code, out, _ = run_cli(["search", "number1", "--json"], capsys)
    assert code == 0 and f"{UUIDS[1]}:1" in out
    code, out, _ = run_cli(["verify"], capsys)
    assert code == 0 and "verify: ok" in out


def test_a_folder_sync_could_not_list_is_listed_by_verify(
    src: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = src / "-tmp-proj2"
    real = os.scandir

    def refusing(path: str) -> object:
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(discover.os, "scandir", refusing)
    code, report, _ = _sync(capsys)
    assert code == 1
    assert report["errors"] == [f"{locked}: folder not readable: Permission denied"]
    code, out, _ = run_cli(["verify", "--json"], capsys)
    assert code == 1
    problems = json.loads(out)["problems"]
    assert [(p["kind"], p["where"]) for p in problems] == [("unreadable_file", str(locked))]
    assert "could not list" in problems[0]["detail"]
    monkeypatch.setattr(discover.os, "scandir", real)  # readable again
    code, report, _ = _sync(capsys)
    assert code == 0 and report["files_indexed"] == 1
    code, out, _ = run_cli(["verify"], capsys)
    assert code == 0 and "verify: ok" in out


@pytest.mark.parametrize("kind", ["device", "file"])
def test_a_source_in_the_environment_that_is_no_folder_is_refused(
    src: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    named = "/dev/null" if kind == "device" else str(next(src.rglob("*.jsonl")))
    monkeypatch.setenv("MEMOIR_SOURCES", named)
    code, _, err = run_cli(["sync", "--no-summaries"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: MEMOIR_SOURCES names {named}, which is not a folder; name the folders "
        "your transcripts are in"
    ]
    code, _, err = run_cli(["sync", "--no-summaries", "--source", named], capsys)
    assert code == 2 and "is not a folder" in err


def test_a_folder_whose_transcripts_are_all_left_out_says_so(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(ClaudeWriter(UUIDS[0]).user("hi").bytes())
    folder = tmp_path / "src" / "-tmp-p"
    folder.mkdir(parents=True)
    (folder / "out.jsonl").symlink_to(outside)
    (folder / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_SOURCES", str(tmp_path / "src"))
    code, out, err = run_cli(["sync", "--no-summaries"], capsys)
    assert code == 0
    out, err = _bare(out), _bare(err)  # rich wraps long lines, even inside a path
    assert "pass--source" not in out
    assert _bare(f"no transcripts read under {tmp_path / 'src'}: 3 left out") in out
    assert _bare(f"{folder / 'out.jsonl'} -> {outside}: a symlink out of its source") in err
    assert _bare(f"{folder / 'dangling.jsonl'}: a dangling symlink") in err
    assert _bare(f"{folder / 'loop.jsonl'}: a symlink loop") in err


def _bare(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize(
    ("roots", "left_out", "line"),
    [
        (
            [],
            0,
            "no transcripts found (no sources configured); pass --source DIR or set MEMOIR_SOURCES",
        ),
        (["/a", "/b"], 0, "no transcripts (*.jsonl, *.json) found under /a, /b"),
        (["/a"], 2, "no transcripts read under /a: 2 left out (listed below)"),
    ],
)
def test_what_an_empty_scan_says(roots: list[str], left_out: int, line: str) -> None:
    assert empty_scan_line(roots, left_out) == line


@pytest.mark.parametrize(
    ("make", "why"),
    [
        ("file", None),
        ("dangling", "a dangling symlink"),
        ("loop", "a symlink loop"),
        ("link", None),
    ],
)
def test_broken_links(tmp_path: Path, make: str, why: str | None) -> None:
    target = tmp_path / "t.jsonl"
    target.write_text("{}\n")
    path = tmp_path / "x.jsonl"
    if make == "file":
        path.write_text("{}\n")
    elif make == "dangling":
        path.symlink_to(tmp_path / "missing.jsonl")
    elif make == "loop":
        path.symlink_to(path)
    else:
        path.symlink_to(target)
    found = broken_link(str(path))
    assert (found is None) if why is None else (found is not None and found.startswith(why))
