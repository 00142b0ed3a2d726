"""Issue 38: offline summaries a person would keep.

The first line of every offline summary of a coding session names the goal the user
stated, the outcome where the transcript states one; the summary names a file or command
the agent touched when there was one. Through the real reader (the transcript files of the
demo corpus and the shared Claude Code fixtures) and the summary path the pass uses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memoir.ingest.discover import Format
from memoir.ingest.reader import read_bytes
from memoir.llm import OfflineModel, TiktokenCounter
from memoir.llm.offline_prose import (
    _imperative,
    is_filler,
    prose_summary,
    summarize_lines,
)
from memoir.llm.offline_summary import Line, ToolAction
from memoir.summaries.offline import merge_object
from memoir.summaries.state import SUMMARY_FORMAT, SummaryPolicy, SummaryState, decide
from memoir.summaries.state import SummaryAction as Decision
from memoir.summaries.summarizer import summarize_conversation

CORPUS = Path(__file__).resolve().parents[2] / "src" / "memoir" / "demo" / "corpus"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code"
SHARED = Path("/work/shared/fixtures/claude-code")
WEBSHOP = "claude/projects/-home-ann-code-webshop"
CODEX = "codex/sessions/2025/10"

# file, the goal the user stated (first line), a file or command touched, the outcome
CODING = [
    (
        f"{WEBSHOP}/3f2a9c1e-5b7d-4e8a-9c0f-1a2b3c4d5e01.jsonl",
        "The checkout test `test_order_total_with_discount` fails about one run in five on CI",
        "shop/coupons.py",
        "fixed: all 8 checkout tests pass",
    ),
    (
        f"{WEBSHOP}/8d0e6b2f-1c3a-4f5e-8a9b-7c6d5e4f3a02.jsonl",
        "Migrate payments from the Stripe Charges API to PaymentIntents",
        "shop/payments/intents.py",
        "done: all 64 payment tests pass",
    ),
    (
        f"{WEBSHOP}/5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a04.jsonl",
        "Warum schlägt der Docker-Build fehl",
        "docker build",
        "Der Build läuft jetzt durch",
    ),
    (
        f"{WEBSHOP}/6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c05.jsonl",
        "orders テーブルにインデックスを追加してください",
        "EXPLAIN ANALYZE",
        "812 ms から 0.3 ms",
    ),
    (
        "claude/projects/-home-ann-code-infra/7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d06.jsonl",
        "Under the load test the API logs `QueuePool limit",
        "docker-compose.yml",
        "PgBouncer now sits between the API and Postgres",
    ),
    (
        "claude/projects/-home-ann-code-infra/8c9d0e1f-2a3b-4c4d-9e5f-6a7b8c9d0e07.jsonl",
        "Write a GitHub Actions workflow that runs pytest",
        ".github/workflows/test.yml",
        "Added `.github/workflows/test.yml`",
    ),
    (
        "claude/projects/-home-ann-blog/0e1f2a3b-4c5d-4e6f-9a7b-8c9d0e1f2a09.jsonl",
        "Generate an RSS feed for the blog",
        "layouts/base.html",
        "done: added `<link rel=",
    ),
    (
        f"{CODEX}/15/rollout-2025-10-15T14-00-00-0199f1a2-3b4c-7d5e-8f6a-7b8c9d0e1f10.jsonl",
        "`make test` fails on Python 3.13",
        "shop/uploads.py",
        "fixed: `parse_content_type()` now uses `email.message.Message`",
    ),
    (
        f"{CODEX}/17/rollout-2025-10-17T14-00-00-0199f2b3-4c5d-7e6f-9a7b-8c9d0e1f2a11.jsonl",
        "Add retries with exponential backoff and jitter",
        "infra/deploy/client.py",
        None,  # the transcript ends on the plan, not on an outcome
    ),
    (
        f"{CODEX}/18/rollout-2025-10-18T14-00-00-0199f3c4-5d6e-7f7a-8b8c-9d0e1f2a3b12.jsonl",
        "Explique-moi pourquoi la requête des meilleures ventes est lente",
        "EXPLAIN ANALYZE",
        "Migration `0042_top_sellers_view.sql` écrite",
    ),
]


def _summary(path: Path) -> str | None:
    fmt = Format.CODEX if "codex" in path.parts else Format.CLAUDE
    events = read_bytes(path.read_bytes(), fmt, path=str(path)).events
    made = summarize_conversation(events, OfflineModel())
    return None if made is None else made.body


@pytest.mark.parametrize(("name", "goal", "touched", "outcome"), CODING)
def test_a_coding_session_reads_right(
    name: str, goal: str, touched: str | None, outcome: str | None
) -> None:
    body = _summary(CORPUS / name)
    assert body is not None
    first = body.splitlines()[0]
    assert goal in first, body
    assert "was about" not in body
    if touched is not None:
        assert touched in body, body
    if outcome is not None:
        assert outcome in first, body


def test_the_claude_code_fixture_names_the_users_question() -> None:
    body = _summary(FIXTURES / "tiny-conversation.jsonl")
    assert body is not None
    first = body.splitlines()[0]
    assert first.startswith("Lately, I've noticed you being very tentative")
    assert "is there something in my instructions" in first
    assert "done: this removes the ambiguity" in first


@pytest.mark.skipif(not SHARED.exists(), reason="shared fixtures not present")
def test_a_transcript_without_an_exchange_has_no_summary() -> None:
    # the shared medium fixture holds file-history snapshots and a title record only
    assert _summary(SHARED / "medium-conversation.jsonl") is None


# -- pure decisions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "goal"),
    [
        ("Can you find out why it's flaky?", "Find out why it's flaky"),
        ("Could you please add a retry?", "Add a retry"),
        ("Please write the migration.", "Write the migration."),
        ("I need you to fix the login page.", "Fix the login page."),
        ("Let's switch to pgx", "Switch to pgx"),
        ("The build fails on 3.13.", "The build fails on 3.13."),
    ],
)
def test_a_request_becomes_the_goal(said: str, goal: str) -> None:
    assert _imperative(said) == goal


@pytest.mark.parametrize(
    ("text", "filler"),
    [
        ("Hey Mel! ", True),
        ("Thanks, that works great!", True),
        ("Good to see you again!", True),
        ("I went to a support group yesterday.", False),
        ("The checkout test fails on CI.", False),
    ],
)
def test_filler(text: str, filler: bool) -> None:
    assert is_filler(text) is filler


def _lines(*pairs: tuple[str, str]) -> list[Line]:
    return [Line(role, text) for role, text in pairs]


@pytest.mark.parametrize(
    ("turns", "actions", "status"),
    [
        (
            (
                ("user", "Can you fix the failing login test?"),
                ("assistant", "Fixed: the test passes now."),
            ),
            (),
            "fixed",
        ),
        (
            (
                ("user", "Please add a dark mode toggle."),
                ("assistant", "Added the toggle to the settings page."),
            ),
            (),
            "done",
        ),
        (
            (
                ("user", "Please add a dark mode toggle."),
                ("assistant", "I started on the toggle; the CSS is still to do tomorrow."),
            ),
            (),
            "open",
        ),
        (
            (
                ("user", "Can you migrate the payments module to the new API?"),
                ("assistant", "That needs a new webhook endpoint first."),
                ("user", "Never mind, forget it for now."),
            ),
            (),
            "abandoned",
        ),
        (
            (
                ("user", "I went to a concert with my sister yesterday."),
                ("assistant", "That sounds wonderful."),
            ),
            (),
            None,  # a talk, not a task: no status
        ),
        (
            (
                ("user", "The cache layer is slow on big pages."),
                ("assistant", "Replaced the lock with a read-write lock."),
            ),
            (ToolAction("file", "cache.py"),),
            "done",  # tools used make it a task
        ),
    ],
)
def test_status_of_how_it_ended(
    turns: tuple[tuple[str, str], ...], actions: tuple[ToolAction, ...], status: str | None
) -> None:
    summary = summarize_lines(_lines(*turns), actions)
    assert summary.status == status
    if status is not None:
        assert f" — {status}" in summary.headline


def test_named_speakers_are_reported_in_the_third_person() -> None:
    transcript = (
        "User: Caroline: Hey Mel! I went to a support group yesterday and it was powerful.\n"
        "Assistant: Melanie: I painted a lake sunrise last year; painting helps me relax.\n"
        "User: Caroline: My plan is to study counseling and work in mental health.\n"
        "Assistant: Melanie: Swimming with my kids keeps me sane these days, honestly."
    )
    text = prose_summary(transcript, 600, TiktokenCounter("cl100k_base").count)
    assert text.startswith("Caroline went to a support group yesterday"), text
    assert "Caroline's plan is to study counseling" in text
    assert "Melanie painted a lake sunrise" in text


def test_a_summary_fits_its_budget_by_dropping_the_least_first() -> None:
    transcript = (
        "User: Can you fix the flaky checkout test? It fails one run in five.\n"
        "[tools: Read (tests/test_checkout.py), Bash (pytest -q)]\n"
        "Assistant: The coupon window compared local time with UTC. I changed it to UTC. "
        "Fixed: all 8 checkout tests pass."
    )
    count = TiktokenCounter("cl100k_base").count
    full = prose_summary(transcript, 600, count)
    assert "tests/test_checkout.py" in full and "`pytest -q`" in full
    for budget in (60, 30, 12):
        text = prose_summary(transcript, budget, count)
        assert count(text) <= budget
        assert text.startswith("Fix the flaky checkout test"), text


# -- the format version ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "current", "action"),
    [
        (
            "This conversation was about utc, test and coupon.\nKey points: …",
            100,
            Decision.RESUMMARIZE,
        ),
        ("The conversation was about invoices. It started with: …", 100, Decision.RESUMMARIZE),
        ("Fix the flaky checkout test — fixed: all 8 tests pass.", 100, Decision.CURRENT),
        ("Fix the flaky checkout test — fixed: all 8 tests pass.", 150, Decision.RESUMMARIZE),
        ("A summary a remote model wrote about the conversation.", 100, Decision.CURRENT),
    ],
)
def test_a_summary_of_the_old_format_is_redone(body: str, current: int, action: Decision) -> None:
    state = SummaryState.real(body, 100)
    assert decide(state, current, SummaryPolicy(), now_ms=10**13) is action
    assert (state.format < SUMMARY_FORMAT) is body.endswith(("…",))


# -- the episodic merge ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("narratives", "first"),
    [
        (
            [
                "Fix the flaky checkout test — open: the coupon check reads local time.",
                "Switch the coupon window to UTC — fixed: all 8 checkout tests pass.",
            ],
            "Fix the flaky checkout test — fixed: all 8 checkout tests pass.",
        ),
        (  # one part: its own headline
            ["Add a dark mode toggle — done: added the toggle."],
            "Add a dark mode toggle — done: added the toggle.",
        ),
        (  # a talk has no ending to carry: the first part leads as it is
            ["Ana hiked to the glacier lake.", "Bo made a blue bowl — done: it holds fruit."],
            "Ana hiked to the glacier lake.",
        ),
    ],
)
def test_a_merged_summary_opens_with_the_goal_and_how_the_latest_part_ended(
    narratives: list[str], first: str
) -> None:
    merged = merge_object("", [{"narrative": n} for n in narratives])["narrative"]
    assert merged.startswith(first), merged
