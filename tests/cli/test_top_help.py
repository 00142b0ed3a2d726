"""``memoir --help`` as Memoir lays it out (:mod:`memoir.cli.top_help`): every command and
root option at any width, no line wider than the terminal, through the console script."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memoir.cli.top_help import COMMAND_ORDER, COMMANDS, ROOT_OPTIONS, top_help


@pytest.mark.parametrize("width", [44, 60, 80, 132])
def test_top_help_fits_the_width_and_keeps_every_line(width: int) -> None:
    text = top_help(width)
    wide = [line for line in text.splitlines() if len(line) > width]
    assert all(len(line.split()) == 1 for line in wide), wide  # only a word longer than a row
    assert len(wide) <= (1 if width < 60 else 0)
    flat = " ".join(text.split())
    for name, (_, line) in COMMANDS.items():
        assert f" {name} {line}" in flat, name
    for option in ROOT_OPTIONS:
        assert f" {option.help}" in flat, option.name
    rows = [
        line.split()[0]
        for line in text.split("\nCommands:\n", 1)[1].splitlines()
        if line[2:3].strip()
    ]
    assert rows == [c for c in COMMAND_ORDER if c in COMMANDS]


@pytest.mark.parametrize(("args", "status"), [(["--help"], 0), ([], 2), (["--debug", "--help"], 0)])
def test_the_console_script_prints_it(args: list[str], status: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memoir.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "72"},
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (status, "")
    assert done.stdout == top_help(72)
