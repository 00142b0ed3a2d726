"""The cases of issue 7, point 11, end to end through the Compactor with ScriptedModel."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoir.compaction import Compactor, validate_sequence
from memoir.compaction.sequence import MessageCounter
from memoir.errors import CompactionError
from memoir.llm import ScriptedModel, default_counter
from memoir.llm.port import (
    BadResponse,
    Completion,
    ContextTooLong,
    EmptyResponse,
    ModelError,
    OutputBudgetRejected,
    Purpose,
    RateLimited,
    Refused,
    StopReason,
    Transient,
    Truncated,
    Unauthorized,
    Usage,
)

from .helpers import GOOD, assistant, big_text, call, result, system, user

COUNTER = MessageCounter()


def exact_text(tokens: int) -> str:
    """A text of exactly ``tokens`` cl100k tokens (' x' is one token each)."""
    counter = default_counter()
    text = "data" + " x" * (tokens - 1)
    assert counter.count(text) == tokens
    return text


@pytest.fixture(scope="module")
def giant() -> str:
    return exact_text(225_010)


def giant_history(giant: str) -> list[dict[str, Any]]:
    return [
        system(),
        user("Read big.log and tell me what failed."),
        call(("c1", "read_file")),
        result("c1", giant),
    ]


def later_work(turns: int = 6) -> list[dict[str, Any]]:
    """Turns of talk (no tool output, which the tail would keep as stand-ins) larger
    than the tail: what comes before them is summarized."""
    msgs: list[dict[str, Any]] = []
    for k in range(turns):
        msgs += [assistant(f"Step {k} is done. " + big_text(500, seed=k) + ".")]
        msgs += [user(f"Next, step {k + 1}: " + big_text(1_500, seed=k + 50))]
    return msgs


def giant_then_work(giant: str) -> list[dict[str, Any]]:
    """The giant result, then more work than the tail holds: the giant is summarized."""
    return giant_history(giant) + later_work()


def assert_compacted(res: Any, threshold: int) -> None:
    assert validate_sequence(res.messages) == []
    assert res.tokens_after < threshold
    assert COUNTER.total(res.messages) == res.tokens_after


def assert_accounts_agree(res: Any, considered: int) -> None:
    """Every message compaction started from is kept verbatim, kept as a stand-in, or
    removed — and every one whose content is lost is named in ``omitted``."""
    in_context = [o for o in res.omitted if o.where == "context"]
    assert res.kept_verbatim + res.removed_count + len(in_context) == considered
    lost = [o for o in res.omitted if o.where != "context"]
    assert len(lost) <= res.removed_count
    assert len({o.position for o in res.omitted}) == len(res.omitted)
    if res.strategy == "truncate":
        assert [o.where for o in lost] == ["dropped"] * res.removed_count
    data = res.trace_data()
    assert data["kept_verbatim"] == res.kept_verbatim
    assert data["removed_count"] == res.removed_count
    assert data["omitted"] == [o.as_dict() for o in res.omitted]


# -- 225,010-token tool result in a 32k window ---------------------------------------------


def test_giant_newest_tool_result_is_kept_as_a_stand_in(giant: str) -> None:
    """Issue 26: a message too large for the tail on its own is kept as a stand-in naming
    it and where to re-read it; its neighbours stay, and nothing older needs a summary."""
    model = ScriptedModel([GOOD])
    history = giant_history(giant)
    history[2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": "big.log"})
    res = Compactor(model).compact(history, window=32_000)
    assert res.strategy == "stand_in" and model.calls == 0
    assert res.threshold == 24_000 and res.threshold_source == "default"
    assert res.tail_budget == 12_000
    assert_compacted(res, 24_000)
    assert res.messages[:3] == history[:3]  # the system prompt, the request, the call
    stand = res.messages[3]["content"]
    assert stand.startswith("[content omitted from the context: read_file result, ~225010 tokens")
    assert 'of read_file path="big.log"' in stand and "(#4 of the full history)" in stand
    assert "x x x" not in stand  # replaced whole, never sliced
    assert [o.as_dict() for o in res.omitted] == [
        {"position": 4, "role": "tool", "tool": "read_file", "tokens": 225_010, "where": "context"}
    ]
    assert_accounts_agree(res, 3)
    assert res.kept_verbatim == 2 and res.removed_count == 0


def test_giant_tool_result_covered_by_the_summary_is_stood_in_the_request(giant: str) -> None:
    model = ScriptedModel([GOOD])
    res = Compactor(model).compact(giant_then_work(giant), window=32_000)
    assert res.strategy == "summary"
    assert res.cap == 6000 and res.output_budget == 6000
    assert_compacted(res, 24_000)
    request = model.requests[0]
    text = request.messages[-1].content
    assert (
        "[tool result: read_file]\n[content omitted from this summary request: read_file "
        "result, ~225010 tokens. It ran and produced output; re-read the source for its "
        "contents rather than reconstructing them.]"
    ) in text
    assert "x x x" not in text  # replaced whole, never sliced
    assert "Read big.log and tell me what failed." in text  # the user's message stays
    assert request.meta.purpose is Purpose.COMPACTION
    assert text.count("<transcript>") == 1 and text.rstrip().endswith("</transcript>")
    assert "<summary_format>" in text and "Open errors:" in text
    sent = default_counter().count(text) + default_counter().count(request.system or "")
    assert sent + request.max_tokens <= 32_000
    assert res.omitted[0].as_dict() == {
        "position": 4,
        "role": "tool",
        "tool": "read_file",
        "tokens": 225_010,
        "where": "request",
    }
    assert_accounts_agree(res, len(giant_then_work(giant)) - 1)


def test_giant_tool_result_does_not_loop(giant: str) -> None:
    for history in (giant_history(giant), giant_then_work(giant)):
        compactor = Compactor(ScriptedModel([GOOD]))
        first = compactor.compact(history, window=32_000)
        again = compactor.compact(first.messages, window=32_000)
        assert again.strategy == "none" and again.messages == first.messages


def test_giant_tool_result_with_summarizer_down_still_progresses(giant: str) -> None:
    model = ScriptedModel(default=Transient("down"))
    compactor = Compactor(model)
    res = compactor.compact(giant_history(giant), window=32_000)
    assert res.strategy == "stand_in" and model.calls == 0  # no summary was needed
    assert_compacted(res, 24_000)
    assert res.omitted[-1].where == "context" and res.omitted[-1].tool == "read_file"
    # the newest activity is kept as a stand-in, so the agent knows the tool ran
    assert "read_file result, ~225010 tokens" in res.messages[-1]["content"]
    assert compactor.compact(res.messages, window=32_000).strategy == "none"
    down = compactor.compact(giant_then_work(giant), window=32_000)
    assert down.strategy == "truncate" and down.reason == "summarizer failed: Transient: down"
    assert_compacted(down, 24_000)
    assert_accounts_agree(down, len(giant_then_work(giant)) - 1)
    assert {"position": 4, "role": "tool", "tool": "read_file", "tokens": 225_010} in [
        {k: v for k, v in o.as_dict().items() if k != "where"} for o in down.omitted
    ]


# -- under the threshold ------------------------------------------------------------------


def test_thirty_messages_under_threshold_come_back_unchanged() -> None:
    msgs: list[dict[str, Any]] = [system()]
    for k in range(15):
        msgs += [user(f"question {k}?"), assistant(f"answer {k}.")]
    msgs = msgs[:30]
    model = ScriptedModel()
    res = Compactor(model).compact(msgs, window=32_000)
    assert res.strategy == "none" and res.removed_count == 0 and res.omitted == ()
    assert len(res.messages) == 30
    assert all(a is b for a, b in zip(res.messages, msgs, strict=True))
    assert res.tokens_before == res.tokens_after == COUNTER.total(msgs)
    assert model.calls == 0


# -- only two messages, over budget --------------------------------------------------------


TWO = {
    "system+huge user": lambda: [system(), user(big_text(40_000))],
    "user+huge assistant": lambda: [user("write it all out"), assistant(big_text(40_000) + ".")],
}


@pytest.mark.parametrize("shape", sorted(TWO))
@pytest.mark.parametrize("summarizer", ["up", "down"])
def test_two_messages_over_budget_make_progress(shape: str, summarizer: str) -> None:
    msgs = TWO[shape]()
    model = ScriptedModel([GOOD]) if summarizer == "up" else ScriptedModel(default=Transient("x"))
    res = Compactor(model).compact(msgs, window=32_000)
    assert res.strategy != "none"
    assert_compacted(res, 24_000)
    assert res.removed_count > 0 or res.omitted
    assert res.tokens_after < res.tokens_before


# -- parallel tool calls at the cut ------------------------------------------------------


def parallel_history() -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [system(), user("investigate the outage")]
    for k in range(6):
        if k:  # the user's notes between rounds: talk the tail does not stand in for
            msgs.append(user(f"note {k}: " + big_text(1_200, seed=90 + k)))
        ids = [(f"p{k}a", "grep"), (f"p{k}b", "read_file"), (f"p{k}c", "ls")]
        msgs.append(call(*ids, text=f"step {k}: looking at three sources."))
        msgs += [result(cid, big_text(1_500, seed=k * 3 + j)) for j, (cid, _) in enumerate(ids)]
    msgs.append(assistant("Found it: the cache TTL was zero."))
    msgs.append(user("fix it"))
    return msgs


@pytest.mark.parametrize("summarizer", ["up", "down"])
@pytest.mark.parametrize("tail_budget", [1_000, 2_500, 4_000, 6_000, 9_000])
def test_parallel_tool_calls_stay_together_at_the_cut(summarizer: str, tail_budget: int) -> None:
    msgs = parallel_history()
    model = ScriptedModel([GOOD]) if summarizer == "up" else ScriptedModel(default=Transient("x"))
    res = Compactor(model, tail_budget=tail_budget).compact(msgs, window=32_000)
    assert res.strategy in ("summary", "truncate")
    assert_compacted(res, 24_000)
    kept = {m.get("tool_call_id") for m in res.messages if m["role"] == "tool"}
    for k in range(6):
        group = {f"p{k}a", f"p{k}b", f"p{k}c"}
        assert group <= kept or not (group & kept)
    assert res.messages[-1]["content"].endswith("fix it")


# -- CJK ---------------------------------------------------------------------------------


def test_cjk_history_is_counted_and_compacted() -> None:
    zh = "用户要求修复登录页面的错误，并且保留所有的测试用例。" * 300
    msgs = [system("你是一个编程助手。"), user("请读取日志文件。"), call(("c1", "read_file"))]
    msgs += [result("c1", zh * 8), assistant("日志显示数据库连接超时。"), user("请修复它。")]
    assert COUNTER.count(msgs[3]) > len(zh * 8) // 4  # CJK costs more than 1 token / 4 chars
    model = ScriptedModel(["用户请求读取日志并修复数据库连接超时的问题。"])
    res = Compactor(model).compact(msgs, window=16_000)
    assert res.strategy == "stand_in"  # only the log was too large for the tail
    assert_compacted(res, 12_000)
    blob = json.dumps(res.messages, ensure_ascii=False)
    assert (
        "请修复它。" in blob and "日志显示数据库连接超时。" in blob and "请读取日志文件。" in blob
    )
    longer = msgs + [assistant("我先看一下代码。" * 400), user("继续。")] * 3
    res = Compactor(model).compact(longer, window=16_000)
    assert res.strategy == "summary"
    assert_compacted(res, 12_000)
    assert "数据库连接超时的问题。" in res.messages[1]["content"]


# -- byte-identical retries and the ladder ----------------------------------------------


def test_ladder_retries_send_byte_identical_requests(giant: str) -> None:
    reject = OutputBudgetRejected("max_tokens too large")
    model = ScriptedModel([reject, reject, GOOD])
    res = Compactor(model).compact(giant_then_work(giant), window=32_000)
    assert res.strategy == "summary" and res.output_budget == 2048
    first, *rest = model.requests
    assert [r.max_tokens for r in model.requests] == [6000, 4096, 2048]
    for r in rest:
        assert r.messages == first.messages and r.system == first.system
        assert r.meta == first.meta and r.temperature == first.temperature
    again = ScriptedModel([GOOD])
    Compactor(again).compact(giant_then_work(giant), window=32_000)
    assert again.requests[0] == first  # no clock, no request id: same input, same bytes


LADDER_CASES = [
    (0, (6000,)),
    (1, (6000, 4096)),
    (2, (6000, 4096, 2048)),
    (3, (6000, 4096, 2048, 1024)),
    (4, (6000, 4096, 2048, 1024, 256)),
    (5, (6000, 4096, 2048, 1024, 256)),
]


@pytest.mark.parametrize(("rejections", "budgets"), LADDER_CASES)
def test_provider_refusing_each_ladder_budget(
    giant: str, rejections: int, budgets: tuple[int, ...]
) -> None:
    replies: list[Any] = [OutputBudgetRejected("too large") for _ in range(rejections)]
    model = ScriptedModel([*replies, GOOD])
    res = Compactor(model).compact(giant_then_work(giant), window=32_000)
    assert tuple(r.max_tokens for r in model.requests) == budgets
    assert res.budgets_tried == budgets
    assert_compacted(res, 24_000)
    if rejections < 5:
        assert res.strategy == "summary" and res.output_budget == budgets[-1]
    else:
        assert res.strategy == "truncate"
        assert res.reason == "output budget rejected at every step"


def test_ladder_starts_below_a_small_first_budget() -> None:
    msgs = [user("go"), call(("c1", "read_file")), result("c1", big_text(20_000))]
    msgs += later_work(2)  # more than the tail holds: the big result is summarized
    model = ScriptedModel([OutputBudgetRejected("no"), GOOD])
    res = Compactor(model).compact(msgs, window=10_000)  # threshold 7500 → budget 1875
    assert [r.max_tokens for r in model.requests] == [1875, 1024]
    assert res.strategy == "summary"


# -- summarizer down or unusable → backstop ------------------------------------------------


def _reasoning_only(_: Any) -> Completion:
    return Completion("", StopReason.END, Usage(), "m", "p", extra={"reasoning": "thinking…"})


FAILURES: dict[str, Any] = {
    "transient": Transient("503"),
    "rate limited": RateLimited("429"),
    "unauthorized": Unauthorized("401"),
    "refused": Refused("flagged"),
    "empty response": EmptyResponse("nothing"),
    "context too long": ContextTooLong("too long"),
    "bad response": BadResponse("garbage"),
    "truncated": Truncated("cut", partial="The user asked"),
    "empty text": "   ",
    "reasoning only": "<think>the user wants a summary</think>",
    "reasoning trace without content": _reasoning_only,
    "open code fence": "Summary:\n```python\nprint('x')",
    "mid-sentence": "The user asked the assistant to fix the",
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_summarizer_down_or_unusable_goes_to_backstop(failure: str) -> None:
    msgs = parallel_history()
    model = ScriptedModel([FAILURES[failure]])
    res = Compactor(model).compact(msgs, window=32_000)
    assert res.strategy == "truncate" and res.summary is None and res.reason
    assert_compacted(res, 24_000)
    assert res.removed_count > 0
    assert model.calls == 1
    blob = json.dumps(res.messages)
    assert 'fix the"' not in blob and "print('x')" not in blob and "<think>" not in blob
    assert res.messages[1]["role"] == "user"


def test_no_model_at_all_uses_backstop() -> None:
    res = Compactor(None).compact(parallel_history(), window=32_000)
    assert res.strategy == "truncate" and res.reason == "no summarizer model"
    assert_compacted(res, 24_000)


def test_invalid_input_over_threshold_is_one_clear_error() -> None:
    from memoir.errors import CompactionError

    msgs = [user("x"), result("nope", big_text(30_000))]
    with pytest.raises(CompactionError, match="invalid message sequence"):
        Compactor(None).compact(msgs, window=8_000)


def test_model_error_subclass_is_never_raised_out() -> None:
    model = ScriptedModel([ModelError("weird")])
    res = Compactor(model).compact(parallel_history(), window=32_000)
    assert res.strategy == "truncate" and "ModelError" in (res.reason or "")


# -- the user's own words ------------------------------------------------------------------


def test_a_user_message_over_the_cap_is_described_not_dropped() -> None:
    """Issue 26: a user's paste over the cap gets the seed's stand-in in the summary
    request too — saying what was there — instead of crowding out the request."""
    pasted = "PASTED the build log below\n" + big_text(9_000) + "\nwhy does step 3 fail?"
    msgs = [user(pasted), assistant("Noted."), user("now summarize the paste"), assistant("OK.")]
    msgs += [user("and continue")]
    msgs += later_work()  # more recent work than the tail holds: the paste is summarized
    tokens = COUNTER.count(msgs[0]) - 4
    model = ScriptedModel([GOOD])
    res = Compactor(model).compact(msgs, window=32_000)
    assert res.strategy == "summary"
    sent = model.requests[0].messages[-1].content
    assert pasted not in sent
    assert (
        f"[user]\n[content omitted from this summary request: user message, ~{tokens} tokens; "
        '3 lines; it began: "PASTED the build log below" and ended: "why does step 3 fail?". '
        "The user sent it; re-read the source"
    ) in sent
    assert "now summarize the paste" in sent  # the small messages are read whole
    assert {"position": 1, "role": "user", "tool": None, "tokens": tokens, "where": "request"} in [
        o.as_dict() for o in res.omitted
    ]
    assert_compacted(res, 24_000)
    assert_accounts_agree(res, len(msgs))


def test_user_text_that_alone_cannot_fit_is_stood_in_and_summarized() -> None:
    """Before issue 26 this went to the backstop ("the user's own messages alone do not fit
    a summary request") and lost every message; now the paste is described."""
    msgs = [user("HUGE " + big_text(40_000)), assistant("That is a lot."), user("go on")]
    model = ScriptedModel([GOOD])
    res = Compactor(model, tail_budget=0).compact(msgs, window=32_000)
    assert model.calls == 1 and res.strategy == "summary"
    sent = model.requests[0].messages[-1].content
    assert f"user message, ~{COUNTER.count(msgs[0]) - 4} tokens; 1 line; it began:" in sent
    assert_compacted(res, 24_000)
    assert res.messages[-1]["content"].endswith("go on")


def test_media_parts_count_towards_the_window() -> None:
    """An image's bytes are not text, but a model is billed for it: a history of pictures
    reaches the threshold like one of words."""
    from memoir.compaction.sequence import MEDIA_TOKENS, content_text

    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 9_000}}
    message = {"role": "user", "content": [{"type": "text", "text": "look"}, image]}
    assert content_text(message) == "look\n[image]"
    compactor = Compactor(ScriptedModel(default="Pictures were shared."))
    assert compactor.tokens.count(message) >= MEDIA_TOKENS
    history = [message, {"role": "assistant", "content": "nice"}] * 3 + [message]
    assert compactor.should_compact(history, window=4 * MEDIA_TOKENS)
    result = compactor.compact(history, window=4 * MEDIA_TOKENS)
    assert result.strategy != "none" and result.tokens_after < 3 * MEDIA_TOKENS


def test_anthropic_tool_blocks_are_refused_not_cut() -> None:
    from memoir.compaction.sequence import validate_sequence

    history = [
        {"role": "user", "content": "start " * 2_000},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "r"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next"},
    ]
    assert validate_sequence(history)[0].startswith("message 1: a tool_use content block")
    with pytest.raises(CompactionError, match="OpenAI-style"):
        Compactor(ScriptedModel(default="S.")).compact(history, window=1_000)


@pytest.mark.parametrize("window", [None, 10.5, "32000", True])
def test_a_window_that_is_not_a_token_count_is_refused(window: object) -> None:
    with pytest.raises(CompactionError, match="positive token count"):
        history = [{"role": "user", "content": "hi"}]
        Compactor(ScriptedModel()).compact(history, window=window)  # type: ignore[arg-type]


def test_a_long_run_of_tool_output_is_summarized_not_thrown_away() -> None:
    """Hundreds of outputs too big to quote each leave a stand-in; their stand-ins alone
    must not crowd the user's few words out of the summary request."""
    from .helpers import big_text, call, result, system, user

    history: list[dict[str, Any]] = [system(), user("Fix the flaky build, one step at a time.")]
    for k in range(300):
        history += [call((f"c{k}", "bash")), result(f"c{k}", big_text(2_600, seed=k))]
    history.append(user("Where are we?"))
    model = ScriptedModel(default="We fixed most of the build; two steps remain.")
    res = Compactor(model).compact(history, window=8_000)
    assert res.strategy == "summary" and model.calls == 1
    sent = model.requests[0].messages[-1].content
    assert "messages omitted here" in sent and "Fix the flaky build" in sent
    assert validate_sequence(res.messages) == []


def test_messages_of_one_role_in_a_row_are_joined_not_refused() -> None:
    """OpenAI accepts two user (or assistant) messages in a row and agent frameworks send
    them; compaction joins them so its result alternates, instead of getting stuck."""
    from .helpers import big_text, system, user

    history: list[dict[str, Any]] = [system()]
    for k in range(8):
        history += [
            user(f"context {k}: " + big_text(120, seed=k)),
            user(f"question {k}?"),
            {"role": "assistant", "content": f"answer {k}. " + big_text(600, seed=k + 50)},
            {"role": "assistant", "content": f"and more {k}."},
        ]
    history.append(user("what now?"))
    assert validate_sequence(history)  # not alternating as given
    res = Compactor(ScriptedModel(default="Eight questions were answered.")).compact(
        history, window=6_000
    )
    assert res.strategy == "summary" and validate_sequence(res.messages) == []
    assert res.messages[-1]["content"].endswith("what now?")


def test_no_room_names_what_is_left() -> None:
    words = " ".join(f"word{i}" for i in range(200))  # far over the threshold of 75
    history = [system(words), user("hi"), assistant("hello"), user("go on")]
    with pytest.raises(CompactionError, match=r"system prompt alone is \d+ tokens") as caught:
        Compactor(ScriptedModel(default=GOOD)).compact(history, window=100)
    assert "threshold of 75" in str(caught.value)
    short = [user("hi there, can you help me with something long")]  # 14 tokens, threshold 7
    with pytest.raises(CompactionError) as caught:
        Compactor(ScriptedModel(default=GOOD)).compact(short, window=10)
    message = str(caught.value)
    assert "system prompt" not in message  # there is none to blame
    assert "the newest message" in message and "over the threshold of 7" in message


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ("hello", "messages must be a list of message dicts, not str"),
        (None, "messages must be a list of message dicts, not NoneType"),
        ({"role": "user", "content": "hi"}, "not dict"),
        (["hi"], "message 0 is a str, not a message dict"),
        ([{"role": "user", "content": "hi"}, 3], "message 1 is a int"),
    ],
)
def test_messages_of_the_wrong_shape_are_a_compaction_error(messages: object, says: str) -> None:
    with pytest.raises(CompactionError, match=says):
        Compactor(ScriptedModel(default="S.")).compact(messages, window=1_000)  # type: ignore[arg-type]
