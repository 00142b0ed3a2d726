"""Project names kept as written: the naming table (pure)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoir.model.harness import (
    HASH_CHARS,
    MAX_NAME_BYTES,
    claude_folder,
    cwd_project,
    project_name,
)

HASHED = re.compile(rf"-[0-9a-f]{{{HASH_CHARS}}}$")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("webshop", "webshop"),
        ("-home-ann-code-webshop", "-home-ann-code-webshop"),
        ("проект", "проект"),  # Cyrillic
        ("данные", "данные"),
        ("项目", "项目"),  # CJK
        ("プロジェクト", "プロジェクト"),
        ("café", "café"),  # accents
        ("cafe\u0301", "café"),  # decomposed (macOS file names) reads as composed
        ("🚀 launch", "🚀 launch"),  # emoji and a space
        ("👩\u200d💻", "👩\u200d💻"),  # a joined emoji keeps its joiner
        ("my app (v2)", "my app (v2)"),
        ("a_b", "a_b"),
    ],
)
def test_names_are_kept_as_written(name: str, expected: str) -> None:
    assert project_name(name) == expected


@pytest.mark.parametrize(
    ("name", "head"),
    [
        ("a/b", "a_b"),  # separators
        ("a\\b", "a_b"),
        ("x\x00y", "x_y"),  # control characters
        ("tab\there", "tab_here"),
        ("line\u2028break", "line_break"),
        (".hidden", "hidden"),  # leading dots
        ("..", "_"),
        (".", "_"),
        ("", "_"),
        ("../etc", "_etc"),
    ],
)
def test_unsafe_names_are_made_safe_with_a_hash(name: str, head: str) -> None:
    safe = project_name(name)
    assert HASHED.search(safe), safe
    assert safe[: -HASH_CHARS - 1] == head
    assert "/" not in safe and "\\" not in safe and not safe.startswith(".")


def test_names_that_would_collide_stay_apart() -> None:
    names = ["a/b", "a\\b", "a\x00b", "a_b", ".a_b"]
    assert len({project_name(n) for n in names}) == len(names)
    # the old scheme's collision: both were "______"
    assert project_name("проект") != project_name("данные")


def test_names_are_stable() -> None:
    assert project_name("a/b") == project_name("a/b") == "a_b-" + project_name("a/b")[-6:]
    assert project_name(project_name("a/b")) == project_name("a/b")  # safe forms are fixed


def test_long_names_are_cut_to_the_byte_limit_with_a_hash() -> None:
    for name in ("x" * 300, "я" * 150, "漢" * 100, "🚀" * 80):
        safe = project_name(name)
        assert len(safe.encode()) <= MAX_NAME_BYTES and HASHED.search(safe)
    assert project_name("x" * 300) != project_name("x" * 301)


@given(st.text(max_size=80))
def test_any_name_is_one_safe_path_component(name: str) -> None:
    safe = project_name(name)
    assert safe and "/" not in safe and "\\" not in safe and not safe.startswith(".")
    assert "\x00" not in safe and len(safe.encode("utf-8")) <= MAX_NAME_BYTES
    assert project_name(safe) == safe


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [
        ("/home/ann/app", "-home-ann-app"),  # Claude Code's spelling, unchanged
        ("/home/ann/my_app.v2/", "-home-ann-my-app-v2"),
        ("/home/ann/проект", "-home-ann-проект"),
        ("/home/ann/данные", "-home-ann-данные"),
        ("/home/ann/项目 x", "-home-ann-项目-x"),
        (None, "codex"),
        ("", "codex"),
    ],
)
def test_cwd_project(cwd: str | None, expected: str) -> None:
    assert cwd_project(cwd) == expected


def test_claude_code_folder_spelling_is_lossy() -> None:
    assert claude_folder("/home/ann/проект") == claude_folder("/home/ann/данные")
    assert claude_folder("/home/ann/code/webshop") == "-home-ann-code-webshop"
