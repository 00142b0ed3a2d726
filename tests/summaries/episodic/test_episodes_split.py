"""Pure decisions: where episodes and halves are cut (tool pairs, Unicode), how much one
run takes on, and what follows a failed call."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from memoir.llm import ScriptedModel
from memoir.llm import port as E
from memoir.llm.port import Purpose
from memoir.model import EventKind
from memoir.summaries.calls import Recovery, next_action, retry_delay
from memoir.summaries.episodes import (
    HistoryItem,
    clip_middle,
    cut_allowed,
    grapheme_boundaries,
    normalise,
    pack,
    run_scope,
    safe_cut,
    split_point,
)
from memoir.summaries.episodic import EpisodicSummarizer
from memoir.summaries.offline import UnusableAnswer

from .episode_helpers import Oracle, event, transcript_of

# --- halves: Unicode-safe split points -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "preferred", "acceptable", "expected"),
    [
        ("aaaa\n\nbbbb", (), (), 6),  # blank line beats the exact middle
        ("aaaa bbbb", (), (), 5),  # after whitespace
        ("第一句。第二句", (), (), 4),  # after a Chinese full stop
        ("abcdefgh", (), (), 4),  # no structure: the middle
        ("abcdefghijkl", (5,), (6,), 5),  # a preferred message boundary wins
        ("abcdefghijkl", (), (7,), 7),  # then an acceptable one
        ("abcdefghijkl", (1,), (), 6),  # a boundary outside the middle third is ignored
        ("a", (), (), None),  # cannot be cut
        ("e\u0301", (), (), None),  # one grapheme (e + combining acute) cannot be cut
    ],
)
def test_split_point_table(
    text: str, preferred: tuple[int, ...], acceptable: tuple[int, ...], expected: int | None
) -> None:
    assert split_point(text, preferred, acceptable) == expected


def test_split_point_never_cuts_a_grapheme_cluster() -> None:
    family = "👨\u200d👩\u200d👧\u200d👦"  # one cluster of 7 code points
    text = "x" * 5 + family * 3 + "y" * 5
    clusters = {5 + len(family) * k for k in range(4)}  # offsets between the families
    at = split_point(text)
    assert at in clusters and at == 5 + len(family)  # the cluster edge nearest the middle


# each of these is one whole grapheme cluster, and no two of them join when adjacent,
# so the cumulative offsets of a list of them are exactly its grapheme boundaries
GRAPHEMES = ["a", " ", "。", "中", "é", "e\u0301", "👍🏽", "🇯🇵", "\n", "한", "\u1100\u1161"]
graphemes = st.sampled_from(GRAPHEMES)


def offsets(parts: list[str]) -> set[int]:
    out, pos = {0}, 0
    for part in parts:
        pos += len(part)
        out.add(pos)
    return out


@given(st.lists(graphemes, min_size=1, max_size=60))
def test_halves_rejoin_and_cut_on_grapheme_boundaries(parts: list[str]) -> None:
    text = "".join(parts)
    at = split_point(text)
    assert grapheme_boundaries(text) == sorted(offsets(parts))
    if len(parts) == 1:
        assert at is None
        return
    assert at is not None and 0 < at < len(text) and at in offsets(parts)
    assert text[:at] + text[at:] == text


@given(st.lists(graphemes, max_size=80), st.integers(min_value=0, max_value=400))
def test_safe_cut_is_a_grapheme_boundary(parts: list[str], at: int) -> None:
    text = "".join(parts)
    cut = safe_cut(text, at)
    assert cut in offsets(parts)
    assert cut == max(o for o in offsets(parts) if o <= max(0, min(at, len(text))))


def test_clip_middle_keeps_head_and_tail() -> None:
    text = "H" * 500 + "M" * 2000 + "T" * 500
    clipped = clip_middle(text, 1000)
    assert clipped.startswith("H" * 500) and clipped.endswith("T" * 250)
    assert "characters omitted" in clipped and len(clipped) < 1100
    assert clip_middle("short", 10) == "short"


def test_a_chinese_history_is_split_on_a_code_point_boundary_after_a_sentence() -> None:
    sentence = "小明在北京的公司里修复了数据库迁移的问题，并且写了新的测试。"
    message = "".join(f"{sentence[:-1]}第{i}次。" for i in range(40))
    history = [event(1, EventKind.USER_TEXT, message)]
    oracle = Oracle({(Purpose.EPISODE, None): [E.Truncated("cut", partial='{"narrative": "小明')]})
    model = ScriptedModel(default=oracle)
    summary = EpisodicSummarizer(model, retry_backoff_s=0).summarize(history)
    halves = [transcript_of(r) for r in model.requests if r.meta.purpose is Purpose.HALF]
    assert len(halves) == 2 and summary.splits == 1
    assert halves[0] + halves[1] == "User: " + message
    assert halves[0].endswith("。") and halves[1].startswith(sentence[:5])
    for half in halves:
        half.encode("utf-8")  # no lone surrogate: whole code points on both sides
    middle = len(halves[0]) / len("User: " + message)
    assert 0.4 < middle < 0.6


# --- episodes: tool pairs are never split ------------------------------------------------


def items(spec: str) -> list[HistoryItem]:
    """'u', 'a', 'c1' (call 1), 'r1' (result of call 1) separated by spaces."""
    out: list[HistoryItem] = []
    for tok in spec.split():
        if tok[0] == "c":
            out.append(HistoryItem("assistant", tok, opens=(tok[1:],)))
        elif tok[0] == "r":
            out.append(HistoryItem("tool", tok, answers=(tok[1:],)))
        else:
            out.append(HistoryItem("user", tok))
    return out


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ("u a u a", [True, True, True, True]),
        ("u c1 r1 a", [True, True, False, True]),
        ("u c1 c2 r2 r1 a", [True, True, False, False, False, True]),
        ("c1 u r1", [True, False, False]),
        ("u c1 a", [True, True, True]),  # a call never answered constrains nothing
        ("r9 u", [True, True]),  # a result with no call neither
        ("c1 r1 c2 r2", [True, False, True, False]),
        # an id used again later pairs with its nearest call, not the first one
        ("u c1 r1 u c1 r1", [True, True, False, True, True, False]),
        ("u c1 c1 r1 u", [True, True, True, False, True]),  # a call opened again: the later
    ],
)
def test_cut_allowed_table(spec: str, allowed: list[bool]) -> None:
    assert cut_allowed(items(spec)) == allowed


@given(st.lists(st.sampled_from(["u", "a", "c1", "c2", "c3", "r1", "r2", "r3"]), max_size=30))
def test_cut_allowed_matches_a_brute_force_oracle(tokens: list[str]) -> None:
    seq = items(" ".join(tokens))
    pairs = []  # each answer with the latest call of its id not answered since
    for j, item in enumerate(seq):
        for cid in item.answers:
            calls = [
                i
                for i in range(j)
                if cid in seq[i].opens and not any(cid in seq[k].answers for k in range(i, j))
            ]
            if calls:
                pairs.append((max(calls), j))
    expected = [cut == 0 or not any(i < cut <= j for i, j in pairs) for cut in range(len(seq))]
    assert cut_allowed(seq) == expected


@pytest.mark.parametrize(
    ("sizes", "allowed", "budget", "expected"),
    [
        ([100] * 8, [True] * 8, 250, [(0, 2), (2, 4), (4, 6), (6, 8)]),
        ([100] * 3, [True] * 3, 1000, [(0, 3)]),
        ([100, 100, 100], [True, False, True], 150, [(0, 2), (2, 3)]),  # pair kept whole
        ([500, 10], [True, True], 100, [(0, 1), (1, 2)]),  # oversized single item alone
        ([60, 60, 60, 60, 60], [True] * 5, 200, [(0, 3), (3, 5)]),
        ([], [], 100, []),
    ],
)
def test_pack_table(
    sizes: list[int], allowed: list[bool], budget: int, expected: list[tuple[int, int]]
) -> None:
    assert pack(sizes, allowed, budget) == expected


@given(
    st.lists(st.tuples(st.integers(1, 300), st.booleans()), min_size=1, max_size=40),
    st.integers(50, 1000),
)
def test_pack_cuts_only_where_allowed_and_covers_everything(
    rows: list[tuple[int, bool]], budget: int
) -> None:
    sizes = [s for s, _ in rows]
    allowed = [True] + [a for _, a in rows[1:]]
    ranges = pack(sizes, allowed, budget)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(sizes)
    for (_, end), (start, _) in itertools.pairwise(ranges):
        assert end == start and allowed[start]
    for start, end in ranges:
        # over budget only when the range is one indivisible group
        if sum(sizes[start:end]) > budget:
            assert not any(allowed[start + 1 : end])


def test_an_episode_is_never_split_inside_a_tool_pair() -> None:
    big = "output line\n" * 150
    history = [event(1, EventKind.USER_TEXT, "MARK1 run the tests")]
    for k in range(6):
        history.append(
            event(
                len(history) + 1,
                EventKind.TOOL_CALL,
                f"pytest -k t{k}",
                tool_name="Bash",
                call_id=f"c{k}",
            )
        )
        history.append(
            event(len(history) + 1, EventKind.TOOL_RESULT, big, tool_name="Bash", call_id=f"c{k}")
        )
    model = ScriptedModel(default=Oracle())
    summary = EpisodicSummarizer(model, episode_tokens=700).summarize(history)
    episodes = [transcript_of(r) for r in model.requests if r.meta.purpose is Purpose.EPISODE]
    assert summary.episodes == len(episodes) >= 3
    for text in episodes:
        calls = regex.findall(r"Assistant called Bash: pytest -k t(\d)", text)
        assert calls
        assert text.count("Tool result (Bash)") == len(calls)


def test_normalise_handles_anthropic_blocks_and_skips_thinking() -> None:
    history: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "data"}],
                }
            ],
        },
        event(9, EventKind.THINKING, "secret reasoning"),
        event(10, EventKind.META, "meta"),
    ]
    got = normalise(history)
    assert [(i.text, i.opens, i.answers, i.index) for i in got] == [
        ("User: hi", (), (), 0),
        ("Assistant: [called Read: {'p': 1}]", ("t1",), (), 1),
        ("User: [tool result: data]", (), ("t1",), 2),
    ]
    assert cut_allowed(got) == [True, True, False]


# --- run scope, failure decisions, backoff ---------------------------------------------


@pytest.mark.parametrize(
    ("sizes", "incremental", "max_tokens", "max_episodes", "expected"),
    [
        ([100, 100], False, 1000, 10, 2),
        ([600, 600], False, 1000, 10, None),
        ([100] * 5, False, 1000, 4, None),
        ([600, 600], True, 1000, 10, 1),
        ([100] * 5, True, 1000, 4, 4),
        ([5000, 10], True, 1000, 10, 1),  # always at least one episode
        ([], True, 1000, 10, 0),
    ],
)
def test_run_scope_table(
    sizes: list[int], incremental: bool, max_tokens: int, max_episodes: int, expected: int | None
) -> None:
    got = run_scope(
        sizes, incremental=incremental, max_tokens=max_tokens, max_episodes=max_episodes
    )
    assert got == expected


@pytest.mark.parametrize(
    ("error", "can_split", "expected"),
    [
        (E.Truncated("t", partial="{"), True, Recovery.SPLIT),
        (E.Truncated("t", partial="{"), False, Recovery.FAIL),
        (E.Truncated("t", partial=" \n"), True, Recovery.FAIL),
        (E.Refused("r"), True, Recovery.FALLBACK),
        (E.Refused("r"), False, Recovery.FALLBACK),
        (E.Unauthorized("u"), True, Recovery.FAIL),
        (E.Forbidden("f"), True, Recovery.FAIL),
        (E.OutOfCredit("c"), True, Recovery.FAIL),
        (E.RateLimited("r"), True, Recovery.RETRY),
        (E.Transient("t"), True, Recovery.RETRY),
        (E.EmptyResponse("e"), True, Recovery.RETRY),
        (E.BadResponse("b"), True, Recovery.RETRY),
        (UnusableAnswer("prose"), True, Recovery.RETRY),
        (E.ContextTooLong("c"), True, Recovery.FAIL),
        (E.OutputBudgetRejected("o"), True, Recovery.FAIL),
    ],
)
def test_next_action_table(error: BaseException, can_split: bool, expected: Recovery) -> None:
    assert next_action(error, can_split=can_split) is expected


@pytest.mark.parametrize(
    ("retry", "base", "retry_after", "expected"),
    [
        (1, 0.5, None, 0.5),
        (2, 0.5, None, 1.0),
        (6, 0.5, None, 8.0),
        (1, 0.5, 3.0, 3.0),
        (1, 0.5, 45.0, 45.0),  # never less than the provider asked
        (1, 0.5, 3600.0, None),  # a daily quota: no retry at all (the budget is kept)
        (3, 0.0, None, 0.0),
    ],
)
def test_retry_delay_table(
    retry: int, base: float, retry_after: float | None, expected: float | None
) -> None:
    assert retry_delay(retry, base=base, retry_after=retry_after) == expected


def test_named_speakers_label_their_lines() -> None:
    items = normalise(
        [
            event(1, EventKind.USER_TEXT, "Back from the lake?", payload={"speaker": "Ana"}),
            event(2, EventKind.ASSISTANT_TEXT, "Yes.", payload={"speaker": "Bo"}),
            event(3, EventKind.ASSISTANT_TEXT, "Mostly."),
        ]
    )
    assert [i.text for i in items] == [
        "Ana (user): Back from the lake?",
        "Bo (assistant): Yes.",
        "Assistant: Mostly.",
    ]
    # an agent loop's OpenAI-style messages name their speakers the same way
    dicts = normalise(
        [
            {"role": "user", "name": "Ana", "content": "Back from the lake?"},
            {"role": "assistant", "name": ["odd"], "content": "Yes."},
            {"role": "tool", "name": "lookup", "tool_call_id": "c1", "content": "42"},
        ]
    )
    assert [i.text for i in dicts] == [
        "Ana (user): Back from the lake?",
        "Assistant: Yes.",
        "Tool result (lookup): 42",
    ]
