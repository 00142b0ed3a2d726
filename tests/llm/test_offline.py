"""The offline model: useful summaries, valid JSON for every structured task, never
over max_tokens, deterministic, no network — and it answers the request's task, never its
prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoir.compaction.offline import CompactionTask
from memoir.llm import OfflineModel, default_counter
from memoir.llm.port import (
    ChatMessage,
    ModelRequest,
    OfflineTask,
    Purpose,
    RequestMeta,
    StopReason,
    Truncated,
)
from memoir.summaries.offline import EpisodeTask, HalfTask, MergeTask, SummaryTask

MODEL = OfflineModel()
LISTS = ("decisions", "facts", "people", "open_threads", "preferences", "state")

CONVERSATION = """User: I'm building a billing service in Go and I prefer PostgreSQL over MySQL.
Assistant: Good choice. PostgreSQL gives you transactional DDL and strong JSON support.
User: Let's use pgx as the driver. My manager Dana wants invoices generated nightly.
Assistant: We'll use pgx with a connection pool. A nightly cron job can generate the invoices.
Tool result: {"rows": 42, "ok": true}
User: Should invoices be emailed as PDF or HTML?
Assistant: PDF is the safer default for invoices because customers archive them.
User: Remember that all amounts are stored in cents. Next step is the retry policy for payments.
Assistant: Stored in cents, noted. The retry policy is still open; we can draft it tomorrow.
"""


def render_claude(path: Path) -> str:
    """A Claude Code transcript as "Role: text" lines (tool calls and results marked)."""
    lines = []
    with path.open(encoding="utf-8") as f:
        for raw in f:
            record = json.loads(raw)
            message = record.get("message")
            if not isinstance(message, dict):
                continue
            role = str(message.get("role", "user")).capitalize()
            content = message.get("content")
            if isinstance(content, str):
                lines.append(f"{role}: {content}")
                continue
            for block in content or []:
                if block.get("type") == "text":
                    lines.append(f"{role}: {block['text']}")
                elif block.get("type") == "tool_use":
                    lines.append(f"Tool call: {block.get('name')}")
                elif block.get("type") == "tool_result":
                    lines.append(f"Tool result: {str(block.get('content'))[:200]}")
    return "\n".join(lines)


def task_for(material: str, purpose: Purpose, *, json_mode: bool) -> OfflineTask:
    """The task each engine sends for ``purpose`` (what the offline model reads)."""
    if purpose is Purpose.HALF:
        return HalfTask(material)
    if purpose is Purpose.MERGE:
        return MergeTask(())
    if json_mode or purpose in (Purpose.EPISODE, Purpose.FALLBACK):
        return EpisodeTask(material)
    if purpose is Purpose.COMPACTION:
        return CompactionTask(material)
    return SummaryTask(material)


def request_of(
    task: OfflineTask,
    purpose: Purpose,
    *,
    max_tokens: int = 1500,
    json_mode: bool = False,
    prompt: str = "Answer the task.",
) -> ModelRequest:
    """A request with ``task`` (the usage counts the prompt, as a provider bills it)."""
    return ModelRequest(
        messages=(ChatMessage("user", prompt),),
        max_tokens=max_tokens,
        system="You write summaries.",
        json=json_mode,
        meta=RequestMeta(purpose=purpose),
        task=task,
    )


def ask(
    material: str, purpose: Purpose, *, max_tokens: int = 1500, json_mode: bool = False
) -> ModelRequest:
    task = task_for(material, purpose, json_mode=json_mode)
    prompt = f"Summarize this.\n<transcript>\n{material}\n</transcript>"
    return request_of(task, purpose, max_tokens=max_tokens, json_mode=json_mode, prompt=prompt)


def check_episode_shape(obj: dict[str, Any], *, per_list: int, total: int, kws: int) -> None:
    assert set(obj) == {"narrative", *LISTS, "keywords"}
    assert isinstance(obj["narrative"], str) and obj["narrative"].strip()
    for name in LISTS:
        assert isinstance(obj[name], list) and len(obj[name]) <= per_list
        assert all(isinstance(i, str) and i for i in obj[name])
    assert sum(len(obj[n]) for n in LISTS) <= total
    assert len(obj["keywords"]) <= kws


def test_summary_of_claude_code_fixture_names_its_topic(claude_fixtures: Path) -> None:
    transcript = render_claude(claude_fixtures / "tiny-conversation.jsonl")
    completion = MODEL.complete(ask(transcript, Purpose.SUMMARY, max_tokens=400))
    text = completion.text.lower()
    # the conversation: why the assistant is tentative, and how to fix the instructions
    assert "instructions" in text
    assert "tentative" in text or "proactiveness" in text
    # issue 38: the first sentence is the user's goal, never a keyword list
    assert text.startswith("lately, i've noticed you being very tentative")
    assert "this conversation was about" not in text
    assert completion.offline and completion.provider == "offline"
    assert completion.stop_reason is StopReason.END


def test_summary_names_topic_decisions_and_ending() -> None:
    text = MODEL.complete(ask(CONVERSATION, Purpose.SUMMARY, max_tokens=400)).text
    lines = text.splitlines()
    # issue 38: the goal the user stated and how it ended (open), then what was decided
    # and what remains
    assert lines[0].startswith("I'm building a billing service in Go"), text
    assert " — open" in lines[0]
    assert "Let's use pgx as the driver." in text
    assert lines[-1].startswith("Still open:") and "retry policy" in lines[-1]
    assert '"rows"' not in text  # tool output is not prose


@pytest.mark.parametrize("max_tokens", [1, 8, 12, 20, 40, 80, 150, 400, 2000])
@pytest.mark.parametrize("purpose", [Purpose.SUMMARY, Purpose.COMPACTION])
def test_text_summary_fits_budget_and_ends_cleanly(max_tokens: int, purpose: Purpose) -> None:
    request = ask(CONVERSATION, purpose, max_tokens=max_tokens)
    try:
        completion = MODEL.complete(request)
    except Truncated as exc:  # only when not even the topic line fits
        assert max_tokens < 20
        assert default_counter().count(exc.partial) <= max_tokens
        return
    assert completion.usage.output_tokens == default_counter().count(completion.text)
    assert completion.usage.output_tokens <= max_tokens
    assert completion.text.rstrip()[-1] in ".!?…"
    assert completion.text.count("```") % 2 == 0


@pytest.mark.parametrize("purpose", [Purpose.EPISODE, Purpose.FALLBACK, Purpose.SUMMARY])
def test_episode_json(purpose: Purpose) -> None:
    completion = MODEL.complete(ask(CONVERSATION, purpose, json_mode=True))
    obj = json.loads(completion.text)
    check_episode_shape(obj, per_list=2, total=8, kws=6)
    sentences = [s for s in obj["narrative"].replace("?", ".").split(". ") if s.strip()]
    assert 2 <= len(sentences) <= 4
    assert any("pgx" in d for d in obj["decisions"])
    assert any("PostgreSQL" in p for p in obj["preferences"])
    assert obj["people"] == ["Dana"]
    assert any("retry policy" in t for t in obj["open_threads"])


def test_half_json_is_compact() -> None:
    obj = json.loads(MODEL.complete(ask(CONVERSATION, Purpose.HALF, json_mode=True)).text)
    check_episode_shape(obj, per_list=1, total=4, kws=4)
    assert obj["narrative"].count(". ") == 0


def test_merge_combines_previous_summary_and_episodes() -> None:
    episodes = [
        MODEL.complete(ask(CONVERSATION, Purpose.EPISODE, json_mode=True)).text,
        json.dumps(
            {
                "narrative": "The conversation was about deployment. They moved to Kubernetes.",
                "decisions": ["Deploy with Helm."],
                "facts": [],
                "keywords": ["kubernetes", "helm"],
                "state": ["Deployment works."],
            }
        ),
    ]
    previous = "Earlier, the user set up the repository. CI runs on every push."
    task = MergeTask(tuple(json.loads(e) for e in episodes), previous)
    obj = json.loads(MODEL.complete(request_of(task, Purpose.MERGE, max_tokens=2400)).text)
    check_episode_shape(obj, per_list=2, total=8, kws=6)
    assert obj["narrative"].startswith("Earlier, the user set up the repository.")
    assert "They moved to Kubernetes." in obj["narrative"]
    assert "Deploy with Helm." in obj["decisions"]  # the latest decisions win
    assert obj["state"][-1] == "Deployment works."
    assert "kubernetes" in obj["keywords"]


def test_merge_without_material_is_still_valid_json() -> None:
    request = request_of(MergeTask(()), Purpose.MERGE, max_tokens=500, json_mode=True)
    check_episode_shape(json.loads(MODEL.complete(request).text), per_list=2, total=8, kws=6)


def test_a_request_without_a_task_is_refused_not_guessed() -> None:
    """The offline model never reads a prompt: a request with no task is a caller's bug."""
    request = ModelRequest(
        messages=(
            ChatMessage("user", "<transcript>\nUser: We decided to use PostgreSQL.\n</transcript>"),
        ),
        max_tokens=200,
        meta=RequestMeta(purpose=Purpose.SUMMARY),
    )
    with pytest.raises(ValueError, match="carries none"):
        MODEL.complete(request)


def test_the_prompt_is_never_read() -> None:
    """Two requests with the same task and different prompts get the same answer."""
    task = SummaryTask(CONVERSATION)
    plain = MODEL.complete(request_of(task, Purpose.SUMMARY)).text
    other = ModelRequest(
        messages=(ChatMessage("user", "<transcript>\nUser: gardening tips\n</transcript>"),),
        max_tokens=1500,
        meta=RequestMeta(purpose=Purpose.SUMMARY),
        task=task,
    )
    assert MODEL.complete(other).text == plain
    assert "gardening" not in plain and "billing service" in plain


def test_cjk_conversation() -> None:
    transcript = (
        "用户：我们决定使用PostgreSQL作为数据库。\n"
        "助手：好的，PostgreSQL支持事务和JSON。\n"
        "User: 请记住所有金额都以分为单位存储。\n"
        "Assistant: 明白了，金额以分为单位。"
    )
    completion = MODEL.complete(ask(transcript, Purpose.EPISODE, json_mode=True, max_tokens=600))
    obj = json.loads(completion.text)
    check_episode_shape(obj, per_list=2, total=8, kws=6)
    assert "PostgreSQL" in completion.text or "金额" in completion.text


def test_deterministic_and_counts_usage() -> None:
    request = ask(CONVERSATION, Purpose.EPISODE, json_mode=True)
    first, second = MODEL.complete(request), MODEL.complete(request)
    assert first.text == second.text
    assert first.usage == second.usage
    assert first.usage.input_tokens > default_counter().count(CONVERSATION)


def test_json_too_small_a_budget_is_truncated_honestly() -> None:
    with pytest.raises(Truncated) as info:
        MODEL.complete(ask(CONVERSATION, Purpose.EPISODE, json_mode=True, max_tokens=10))
    assert info.value.partial.startswith('{"narrative"')
    assert default_counter().count(info.value.partial) <= 10


@pytest.mark.parametrize("max_tokens", [60, 90, 150, 300])
def test_json_shrinks_to_fit(max_tokens: int) -> None:
    completion = MODEL.complete(
        ask(CONVERSATION, Purpose.EPISODE, json_mode=True, max_tokens=max_tokens)
    )
    assert completion.usage.output_tokens <= max_tokens
    check_episode_shape(json.loads(completion.text), per_list=2, total=8, kws=6)


_LINES = st.lists(
    st.tuples(
        st.sampled_from(["User", "Assistant", "Tool result", "Human", ""]),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=120),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(
    _LINES,
    st.sampled_from([p for p in Purpose if p is not Purpose.EXTRACTION]),
    st.integers(30, 600),
    st.booleans(),
)
def test_any_transcript_gives_valid_output(
    lines: list[tuple[str, str]], purpose: Purpose, max_tokens: int, json_mode: bool
) -> None:
    transcript = "\n".join(f"{role}: {text}" if role else text for role, text in lines)
    request = ask(transcript, purpose, max_tokens=max_tokens, json_mode=json_mode)
    try:
        completion = MODEL.complete(request)
    except Truncated as exc:
        assert default_counter().count(exc.partial) <= max_tokens
        return
    assert completion.usage.output_tokens <= max_tokens
    if json_mode or purpose in (Purpose.MERGE, Purpose.HALF, Purpose.EPISODE, Purpose.FALLBACK):
        obj = json.loads(completion.text)
        assert isinstance(obj, dict)
    else:
        assert completion.text.strip()


@pytest.mark.parametrize(
    ("transcript", "roles"),
    [
        ("User: hi\nAssistant: hello", ["user", "assistant"]),
        ("Human: hi\nAI: hello", ["user", "assistant"]),
        ("[user]\nhi there\n[assistant]\nhello", ["user", "assistant"]),
        ("### User\nhi\n### Assistant\nhello", ["user", "assistant"]),
        ("**User:** hi\n**Assistant:** hello", ["user", "assistant"]),
        (
            "User: run it\nAssistant called Bash: ls -la\nTool result (Bash) [error]: boom",
            ["user", "tool", "tool"],
        ),
        ("[tool result: Bash]\noutput\n[assistant]\ndone", ["tool", "assistant"]),
        ("Attachment: notes.txt\nUser: read it", ["tool", "user"]),
        ("just prose\nwith two lines", ["unknown"]),
        ("User: line one\ncontinued here\nAssistant: ok", ["user", "assistant"]),
        ("用户：你好\n助手：你好", ["user", "assistant"]),
    ],
)
def test_parse_turns(transcript: str, roles: list[str]) -> None:
    from memoir.llm.transcript import parse_turns

    assert [t.role for t in parse_turns(transcript)] == roles


def test_parse_turns_keeps_continuation_lines() -> None:
    from memoir.llm.transcript import parse_turns

    turns = parse_turns("User: line one\ncontinued here\nAssistant: ok")
    assert turns[0].text == "line one\ncontinued here"


def test_summary_carries_a_previous_summary_forward() -> None:
    previous = (
        "This conversation was about onboarding and CI.\n"
        "Key points: The team set up GitHub Actions. Tests run on every push."
    )
    request = request_of(SummaryTask(CONVERSATION, previous), Purpose.SUMMARY, max_tokens=400)
    lines = MODEL.complete(request).text.splitlines()
    earlier = next(line for line in lines if line.startswith("Earlier: "))
    assert "The team set up GitHub Actions." in earlier
    assert "Key points:" not in earlier  # labels of the old summary are dropped
    assert lines.index(earlier) == 1
    assert any("billing" in line for line in lines)


@pytest.mark.parametrize(
    ("raw", "tidy"),
    [
        ("Use mcp__github__search_code", "Use mcp__github__search_code."),
        ("2**10 = 1024", "2**10 = 1024."),
        ("see __init__.py and Optional<User>", "see __init__.py and Optional<User>."),
        ("this is **important** now", "this is important now."),
        ("a ```python fence", "a python fence."),
        ("ends </summary> early <transcript>", "ends early."),
    ],
)
def test_finish_tidies_without_changing_what_was_said(raw: str, tidy: str) -> None:
    from memoir.llm.offline_summary import finish

    assert finish(raw) == tidy


@pytest.mark.parametrize(
    ("line", "sentences"),
    [
        (
            "Why does app.py break since v2.3? It is slow.",
            ["Why does app.py break since v2.3?", "It is slow."],
        ),
        (
            "Müssen wir z. B. Namen normalisieren? Ja.",
            ["Müssen wir z. B. Namen normalisieren?", "Ja."],
        ),
        (
            "Upgrade, i.e. the one with retries. Done.",
            ["Upgrade, i.e. the one with retries.", "Done."],
        ),
        ("Dr. Smith approved it. Good.", ["Dr. Smith approved it.", "Good."]),
        ("The answer is no. Next.", ["The answer is no.", "Next."]),
        ("第一句。第二句！", ["第一句。", "第二句！"]),
    ],
)
def test_sentences_end_where_sentences_end(line: str, sentences: list[str]) -> None:
    from memoir.llm.transcript import split_sentences

    assert [s.strip() for s in split_sentences(line)] == sentences


def test_marker_lines_are_not_anyones_words() -> None:
    transcript = "User: What's going on with the build?\n[tools: Grep, Read]\nAssistant: It fails."
    text = MODEL.complete(ask(transcript, Purpose.SUMMARY)).text
    assert "[tools" not in text and "Grep" not in text


def test_a_merged_narrative_tells_the_start_once() -> None:
    episodes = tuple(
        {
            "narrative": f"The conversation was about part {k}. It started with: Step {k} "
            f"of the migration. It ended with: Part {k} is done.",
            "keywords": [f"part{k}"],
        }
        for k in range(4)
    )
    request = request_of(MergeTask(episodes), Purpose.MERGE, max_tokens=2400, json_mode=True)
    narrative = json.loads(MODEL.complete(request).text)["narrative"]
    assert narrative.count("It started with") == 1
    assert narrative.startswith("It started with: Step 0 of the migration.")
    assert "Then: Step 3 of the migration." in narrative
    assert narrative.endswith("It ended with: Part 3 is done.")


def test_a_point_repeated_with_small_changes_is_said_once() -> None:
    lines = ["User: Plan the payments migration step by step, with edge cases for each."]
    for k in range(1, 7):
        lines.append(f"User: Follow-up on step {k}: edge cases for the gateway?")
        lines.append(
            f"Assistant: For step {k}: retries must reuse the same idempotency key, and a "
            "timeout is treated as unknown, never as failed."
        )
    text = MODEL.complete(ask("\n".join(lines), Purpose.SUMMARY, max_tokens=2000)).text
    assert text.count("retries must reuse the same idempotency key") == 1


def test_a_rolling_summary_carries_no_old_topic_line() -> None:
    previous = "This conversation was about parsers and lexers.\nKey points: The lexer is done."
    task = SummaryTask("User: Now write the parser tests.\nAssistant: I wrote ten tests.", previous)
    request = request_of(task, Purpose.SUMMARY)
    text = MODEL.complete(request).text
    # the old topic line is not carried, and there is none any more (issue 38)
    assert "was about" not in text and "The lexer is done." in text


def test_a_german_topic_line_names_the_subject() -> None:
    transcript = (
        "User: Warum schlägt der Docker-Build fehl? Ich schaue mir das Modul an.\n"
        "Assistant: Der Docker-Build braucht das Paket libpq im Image; ich ergänze das "
        "Dockerfile und den Build läuft durch.\n"
        "User: Danke, und das Modul für die Datenbank?\n"
        "Assistant: Das Datenbankmodul nutzt jetzt libpq aus dem Image."
    )
    first = MODEL.complete(ask(transcript, Purpose.SUMMARY)).text.splitlines()[0]
    # issue 38: the first line is the user's own question and how it ended, not keywords
    assert first.startswith("Warum schlägt der Docker-Build fehl"), first
    assert "libpq" in first, first


CAVEAT = (
    "Caveat: The messages below were generated by the user while running local commands. "
    "DO NOT respond to these messages or otherwise consider them in your response unless "
    "the user explicitly asks you to."
)
HARNESS_TALK = f"""User: {CAVEAT}
User: <command-name>/model</command-name>
<command-args>opus</command-args>
User: <local-command-stdout>Set model to opus</local-command-stdout>
User: The nightly invoice export to the Zephyrine bucket keeps timing out, find out why.
<system-reminder>
Always answer in French and never run the tests.
</system-reminder>
Assistant: The upload holds one connection for thirty minutes and the bucket closes it."""


def test_the_summary_goal_is_never_harness_text() -> None:
    """A transcript whose user turns carry a caveat, a command echo and a system reminder
    (as one rendered by another tool would): the summary starts with the real request."""
    text = MODEL.complete(ask(HARNESS_TALK, Purpose.SUMMARY, max_tokens=400)).text
    first = text.splitlines()[0]
    assert first.startswith(
        "The nightly invoice export to the Zephyrine bucket keeps timing out"
    ), first
    for words in ("Caveat", "DO NOT respond", "French", "opus", "command-name"):
        assert words not in text, words
