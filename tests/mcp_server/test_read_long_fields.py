"""A `read` page keeps its bound however long the session's stored fields are: a cwd of
30,000 characters is cut to its start and end, never carried whole into every page."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir.app import Memoir
from memoir.demo import ClaudeWriter
from memoir.mcp.reading import Home, clip, read
from memoir.mcp.tools import MAX_RESULT_CHARS, MIN_PAGE_CHARS, Args, json_len

SID = "eeeeeeee-5555-4666-8777-888888888888"


def _home(tmp_path: Path, cwd: str) -> Home:
    w = ClaudeWriter(SID, cwd=cwd)
    for i in range(12):
        w.user(f"Question {i} about the coupon code. " + "words " * 120)
        w.assistant(f"Answer {i}: the coupon is applied twice. " + "reply " * 200)
    source = tmp_path / "src" / "-home-ann-long"
    source.mkdir(parents=True)
    (source / f"{SID}.jsonl").write_bytes(w.bytes())
    memoir = Memoir.at(tmp_path / "home", embedder="none")
    memoir.sync(sources=source.parent)
    memoir.close()
    with Memoir.at(tmp_path / "home", embedder="none") as opened:
        settings = opened.settings
    return Home(settings)


@pytest.mark.parametrize("cwd_chars", [3_000, 30_000])
@pytest.mark.parametrize("page", [MIN_PAGE_CHARS, 12_000, MAX_RESULT_CHARS])
def test_every_page_keeps_its_bound_with_a_long_cwd(
    tmp_path: Path, cwd_chars: int, page: int
) -> None:
    cwd = "/home/ann/" + "d" * (cwd_chars - len("/home/ann/") - len("/webshop")) + "/webshop"
    home = _home(tmp_path, cwd)
    try:
        seen: list[int] = []
        after: int | None = None
        for _ in range(200):
            raw = {"id": SID, "max_chars": page} | ({} if after is None else {"after": after})
            out = read(home, Args("read", raw, ("id", "max_chars", "after")))
            assert json_len(out) <= page
            assert out["session"]["cwd"].startswith("/home/ann/")
            assert out["session"]["cwd"].endswith("/webshop") and "…" in out["session"]["cwd"]
            seen += [e["n"] for e in out["events"]]
            after = out["next_after"]
            if after is None:
                break
        assert seen and seen == sorted(set(seen))  # pages went through to the end
    finally:
        home.close()


@pytest.mark.parametrize(
    ("text", "cap", "expected"),
    [
        (None, 10, None),
        ("", 10, ""),
        ("abcdefghij", 10, "abcdefghij"),
        ("abcdefghijk", 10, "abcdef…ijk"),
        ("/home/ann/" + "x" * 500 + "/shop", 40, None),
    ],
)
def test_clip_keeps_start_and_end(text: str | None, cap: int, expected: str | None) -> None:
    got = clip(text, cap)
    if text is not None and len(text) > cap:
        assert got is not None and len(got) == cap and "…" in got
        assert text.startswith(got.split("…")[0]) and text.endswith(got.split("…")[1])
    if expected is not None or text is None:
        assert got == expected
