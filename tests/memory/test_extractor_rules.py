"""The offline extractor keeps what a person would keep (issue 34, point 4): frames cut from
the item's text but never from its quote, and the shapes that are no statement at all."""

from __future__ import annotations

import pytest

from memoir.memory import (
    ProposalStatus,
    Range,
    Trigger,
    build_slice,
    offline_proposal,
    validate_proposal,
)
from memoir.memory.cues import reading
from memoir.memory.evidence import code_or_log, own_lines

from .helpers import user

# (message, item text, kind): the quote is always the whole sentence as written
FRAMED = [
    (
        "Remember that I want exports split by month from now on.",
        "I want exports split by month from now on.",
        "constraint",
    ),
    (
        "Please remember: the staging box is read-only on Fridays.",
        "The staging box is read-only on Fridays.",
        "fact",
    ),
    ("Please remember that my birthday is on 14 March.", "My birthday is on 14 March.", "fact"),
    ("remember that my manager's name is Priya", "My manager's name is Priya", "fact"),
    (
        "Keep in mind that our users are mostly on mobile.",
        "Our users are mostly on mobile.",
        "fact",
    ),
    ("Bear in mind that I prefer short answers.", "I prefer short answers.", "preference"),
    ("Note that the tests need Docker running.", "The tests need Docker running.", "fact"),
    ("Please note that we decided to use Kafka.", "We decided to use Kafka.", "decision"),
    ("Don't forget that I'm allergic to nuts.", "I'm allergic to nuts.", "constraint"),
    ("For future reference, the VPN must be on.", "The VPN must be on.", "fact"),
    ("Btw, remember that the prod DB is in us-east-1.", "The prod DB is in us-east-1.", "fact"),
    ("Oh and keep in mind: I'm on Windows.", "I'm on Windows.", "fact"),
    ("FYI, we use Sentry for error tracking.", "We use Sentry for error tracking.", "fact"),
    ("Just so you know, I live in Porto.", "I live in Porto.", "fact"),
    # the frame after the words: the whole sentence is kept
    (
        "I have type 1 diabetes, keep that in mind.",
        "I have type 1 diabetes, keep that in mind.",
        "fact",
    ),
]


def _items(text: str, trigger: Trigger = Trigger.COMPACTION) -> list[tuple[str, str, list[str]]]:
    s = build_slice([user(1, text)], Range(0, 1, 1))
    p = offline_proposal(s, trigger, requested_turn=1 if trigger.requests_items else None)
    v = validate_proposal(p, s, trigger)
    assert not v.rejected  # the offline proposal always validates
    return [(i.content, i.kind, [q.text for q in i.quotes]) for i in v.accepted]


@pytest.mark.parametrize(("message", "content", "kind"), FRAMED)
def test_a_frame_is_cut_from_the_item_never_from_its_quote(
    message: str, content: str, kind: str
) -> None:
    assert _items(message) == [(content, kind, [message])]


def test_remember_request_keeps_x_with_the_users_exact_words() -> None:
    text = "OK.  Remember that I want exports   split by month from now on."
    assert _items(text, Trigger.REMEMBER) == [
        (
            "I want exports split by month from now on.",
            "constraint",
            ["Remember that I want exports   split by month from now on."],
        )
    ]


def test_a_framed_and_a_plain_statement_are_one_item_with_two_quotes() -> None:
    events = [
        user(1, "I prefer tabs over spaces."),
        user(2, "Remember that I prefer tabs over spaces."),
    ]
    s = build_slice(events, Range(0, 2, 2))
    [item] = offline_proposal(s, Trigger.COMPACTION).items
    assert item.content == "I prefer tabs over spaces."
    assert [(q.ordinal, q.text) for q in item.quotes] == [
        (1, "I prefer tabs over spaces."),
        (2, "Remember that I prefer tabs over spaces."),
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "Remember that.",
        "Please remember this.",
        "Remember that time we went to Lisbon.",
        "I remember that day so well.",
        "Remember that the build is broken?",
        "Remember that maybe we could use Redis.",
        "Note that if I wanted to, I could switch to pnpm.",
        "Keep in mind that this is so annoying, ugh.",
    ],
)
def test_a_frame_alone_or_around_an_excluded_shape_keeps_nothing(sentence: str) -> None:
    assert reading(sentence) is None


# messages that hold no item at all: one row per shape
EXCLUDED = [
    ("complaint", "Always the same flaky test, ugh."),
    ("complaint", "Never works on the first try, does it."),
    ("complaint", "You always forget to update the imports."),
    ("complaint", "I hate it when the linter and the formatter disagree."),
    ("complaint", "I'm so tired of fighting with webpack."),
    ("complaint", "My laptop is dying, everything is slow today."),
    ("question", "So I always need to run make before tests?"),
    ("question", "do we use poetry in this repo"),
    ("question", "Can you remind me what we decided about the queue"),
    ("question", "I wonder whether we should always cache the tokens."),
    ("hypothetical", "If I wanted to switch to pnpm, what would I need to change"),
    ("hypothetical", "What if we always deployed on Mondays instead"),
    ("hypothetical", "Suppose we never used ORMs, would this be simpler."),
    ("hypothetical", "Imagine I had a million users."),
    ("hypothetical", "Let's say I prefer tabs."),
    ("hypothetical", "I'd probably use a queue for this if it were my project."),
    ("hypothetical", "I wish we used TypeScript here."),
    ("request", "Please fix the parser so that we use the new API."),
    ("request", "Add a note that I prefer tabs to the README."),
    ("request", "I need you to look at why we use so much memory in the importer."),
    ("one-off", "Don't run the tests yet, I'm still editing."),
    ("one-off", "Let's use a mock for now."),
    ("referent", "Sounds good, let's go with that."),
    ("acknowledgement", "Nice, I like it."),
    ("transient", "I have a meeting in 5 minutes, let's continue after."),
    ("reported", "My boss said we always deploy on Fridays."),
    ("reported", "The recruiter told me they always reply within a week."),
    ("quoted", 'The sign in the office said "Always lock your screen".'),
    ("quoted", 'He wrote "I prefer tabs and we never use semicolons".'),
    ("quoted", "The ticket title is 'Always show the banner on login'."),
    ("quoted", "“We decided to use Kafka for everything,” reads the old design doc."),
    ("blockquote", "> I prefer tabs over spaces\n> and we always squash."),
    ("pasted email", "From: Mark <mark@acme.io>\nSubject: Q3\n\nI prefer we keep the demos."),
    (
        "pasted email",
        "Lena replied:\n\nOn Tue, 3 Mar 2026 at 09:12 Lena wrote:\nI prefer that you call Tom.",
    ),
    ("pasted email", "---------- Forwarded message ---------\nWe have decided to use 2FA."),
    ("pasted letter", "Dear tenant,\nI have decided to raise the rent.\nRegards,\nP. Silva"),
    ("pasted letter", "make this nicer?\n\nHi Bob,\nI prefer Tuesdays.\n\nBest,\nAna"),
    ("pasted intro", "Here's the job description:\nWe use Kotlin. You will always own services."),
    ("pasted intro", "Proofread this: I am an engineer and I love building reliable systems."),
    ("pasted intro", "My colleague wrote: we always squash merge."),
    ("pasted chat", "from the chat\nJoão: I prefer we drop IE\nMaria: we decided that already"),
    ("fenced code", "```python\n# I prefer explicit returns\nreturn a + b\n```"),
    ("fenced code", "~~~\nWe always use UTC here\n~~~"),
    ("indented code", "    # we always use utc\n    TZ = 'UTC'"),
    ("code comment", "// TODO: we should always validate input here"),
    ("code comment", "/* I prefer this layout */"),
    ("code", "const prefersDark = matchMedia('(prefers-color-scheme: dark)').matches;"),
    (
        "stack trace",
        'Traceback (most recent call last):\n  File "app.py", line 8, in main\n'
        '    raise ValueError("I never expected this")\nValueError: I never expected this',
    ),
    ("stack trace", "Exception in thread main: we always need a session"),
    ("stack trace", "java.lang.IllegalStateException: I always need a session"),
    ("stack trace", "\tat com.acme.Users.validate(Users.java:42) we always"),
    ("shell", "$ echo I always use zsh"),
    ("shell", "ana@laptop:~/code$ echo we decided to use make"),
    ("shell", ">>> print('I prefer tea')"),
    ("shell", "PS C:\\Users\\ana> echo I live in Lisbon"),
    ("log", "2026-03-04 10:22:31 ERROR worker: we decided to retry job 42"),
    ("log", "[INFO] I always use the cached wheel for numpy"),
    ("log", "WARNING: I prefer pip 24, you are using 23"),
    ("log", "Mar 04 09:12:55 web-1 nginx: I live behind a proxy"),
    ("log", "level=warn msg=we-always-retry attempt=3"),
    ("log", "error[E0382]: we always borrow a moved value"),
    ("log", "npm ERR! I prefer a lockfile"),
    ("log", "FAILED tests/test_api.py::test_login - I always expected 200"),
    ("log", "E   AssertionError: I always expected 3 items"),
    ("log", "fatal: we decided this is not a git repository"),
]


@pytest.mark.parametrize(("shape", "message"), EXCLUDED, ids=[s for s, _ in EXCLUDED])
def test_a_shape_that_is_no_statement_gives_no_item(shape: str, message: str) -> None:
    s = build_slice([user(1, message)], Range(0, 1, 1))
    p = offline_proposal(s, Trigger.COMPACTION)
    assert p.status is ProposalStatus.NOT_APPLICABLE, (shape, p.items)


# what the user says around pasted or quoted material is still theirs
MIXED = [
    (
        "Here's the error:\n```\nTypeError: I never expected None\n```\n"
        "We're on Python 3.12 in production.",
        "We're on Python 3.12 in production.",
    ),
    (
        "> We decided to use Kafka.\nThat's outdated. We decided to use Postgres for the queue.",
        "We decided to use Postgres for the queue.",
    ),
    ('I prefer "boring" technology over hype.', 'I prefer "boring" technology over hype.'),
    (
        "Write a unit test for parse_date. I prefer table-driven tests.",
        "I prefer table-driven tests.",
    ),
    (
        "Can you suggest a recipe? I'm vegan and I hate mushrooms.",
        "I'm vegan and I hate mushrooms.",
    ),
    (
        "Fix the import order.\n\nAlso, never use wildcard imports.",
        "Also, never use wildcard imports.",
    ),
]


@pytest.mark.parametrize(("message", "quote"), MIXED)
def test_the_users_own_sentence_next_to_material_is_kept(message: str, quote: str) -> None:
    assert [q for _, _, quotes in _items(message) for q in quotes] == [quote]


# statements a person keeps that carry a cue beyond "I …" (one row per cue added)
KEPT = [
    ("Going forward, write the changelog entries in the past tense.", "constraint"),
    ("Every time you change the schema, add a migration.", "constraint"),
    ("Whenever I say 'ship it', run the full test suite.", "constraint"),
    ("When you write tests, put them next to the module.", "constraint"),
    ("Use pnpm, not npm, in this repo.", "constraint"),
    ("I'm colorblind, so please don't rely on red and green alone.", "constraint"),
    ("We can't use anything GPL in this product.", "constraint"),
    ("Never push directly to main.", "constraint"),
    ("We always squash before merging.", "constraint"),
    ("We're switching from Jenkins to GitHub Actions.", "decision"),
    ("ok, decision made: we keep the REST API", "decision"),
    ("Next quarter we'll migrate auth to Keycloak.", "plan"),
    ("My wife and I want to visit Japan in April.", "plan"),
    ("Our CI runs on GitHub Actions.", "fact"),
    ("This repo uses poetry, not pip.", "fact"),
    ("Ana is my sister.", "fact"),
    ("I'm learning Japanese.", "fact"),
    ("I'm the maintainer of this repo.", "fact"),
    ("We're on Python 3.11 everywhere.", "fact"),
    ("We deploy every Tuesday after 2pm.", "fact"),
    ("I really don't like ORMs.", "preference"),
]


@pytest.mark.parametrize(("sentence", "kind"), KEPT)
def test_kept(sentence: str, kind: str) -> None:
    found = reading(sentence)
    assert found is not None and found.kind == kind and found.start == 0


# lines: (line, code or log?)
LINES = [
    ("I prefer tabs over spaces.", False),
    ("- we always squash", False),
    ("    - a nested list item stays prose", False),
    ("    return total", True),
    ("\tindented with a tab", True),
    ("| name | value |", True),
    ("$ make test", True),
    ("In [3]: df.head()", True),
    ("TypeError: cannot unpack non-iterable NoneType object", True),
    ("Caused by: java.io.IOException: closed", True),
    ('  File "app.py", line 3, in <module>', True),
    ("3 failed, 41 passed in 2.31s", True),
    ("127.0.0.1 - - [04/Mar/2026:10:00:01 +0000] GET /health", True),
]


@pytest.mark.parametrize(("line", "code"), LINES)
def test_code_or_log_line(line: str, code: bool) -> None:
    assert code_or_log(line) is code


def test_own_lines_are_exact_substrings_cut_at_an_intro() -> None:
    text = "I live in Porto.\nProofread this: I am a chef.\nI love cooking."
    assert own_lines(text) == ["I live in Porto.", "Proofread this:"]
    assert all(line in text for line in own_lines(text))


def test_a_letter_between_salutation_and_sign_off_is_material_the_rest_is_not() -> None:
    text = "I prefer short replies.\n\nHi Bob,\nI prefer Tuesdays.\nCheers,\nAna\n\nI live in Oslo."
    assert own_lines(text) == ["I prefer short replies.", "I live in Oslo."]


def test_labels_people_put_before_their_own_words_are_no_chat_transcript() -> None:
    text = "Context: we use Postgres 15.\nGoal: never lose an order."
    assert own_lines(text) == text.split("\n")


# the user's own life told without a first-person cue of the families above: an event, a
# pursuit under way or a plan, placed in everyday life — kept whole, quoted exactly
OWN_LIFE = [
    ("Last weekend we took the kids camping up at the lake.", "fact"),
    ("Me and my brother went fishing a few days ago.", "fact"),
    ("My kids love the new playground by our house.", "fact"),
    ("I've been volunteering at the food bank on Saturdays.", "fact"),
    ("I'm really into gardening these days.", "fact"),
    ("We're going to visit my parents in Ohio for Thanksgiving.", "plan"),
    ("I can't wait to start my pottery class.", "plan"),
]


@pytest.mark.parametrize(("message", "kind"), OWN_LIFE)
def test_the_users_own_life_is_kept_without_a_cue(message: str, kind: str) -> None:
    assert _items(message) == [(message, kind, [message])]


@pytest.mark.parametrize(
    "message",
    [
        "I pushed the fix to staging last night.",  # the work at hand
        "We spent the morning debugging the payment webhook.",
        "My teammate refactored the parser last week.",
        "I'm going to grab lunch, back in 30 minutes.",  # no life in it
        "She went to the concert with her friends last night.",  # someone else's life
        "Your kids must have loved the zoo.",
        "Did you go anywhere fun last weekend?",  # a question
        "If I had more time I'd take a pottery class.",  # a hypothetical
    ],
)
def test_what_only_sounds_like_the_users_life_gives_no_item(message: str) -> None:
    assert _items(message) == []
