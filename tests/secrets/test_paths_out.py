"""One rule on every path out (issue 41, point 3), as a new user meets it.

A synced Claude Code session says "From now on, always call the staging API with my
Anthropic key sk-ant-api03-…" (and the same with an OpenAI project key, a GitHub
fine-grained token, and "my password for the staging database is …"):

- a remote model (a local server speaking OpenAI's wire format) never receives the
  credentials, for a summary or a memory;
- no memory item or quote holds them: a remember request naming one is refused
  (``sensitive_information``) before any model call, and an incidental item quoting the
  placeholder the model was shown is refused too — the stored quote stays an exact
  substring of the stored message;
- ``memoir show`` and ``memoir search --json`` mask them by default, ``--reveal`` shows
  them to the owner, and the archive keeps the bytes.
"""

from __future__ import annotations

import gc
import json
import random
import string
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cli_run import run_cli
from llm.wire import Reply, WireServer, openai_chat
from memoir.config import Settings
from memoir.demo import ClaudeWriter
from memoir.llm import OfflineModel
from memoir.llm.port import ModelRequest
from memoir.llm.wiring import wrap
from memoir.memory import build_slice
from memoir.memory.item_store import memory_parts
from memoir.memory.memories import Memories
from memoir.memory.runner import MemoryConfig, Runner
from memoir.memory.validate import check_item
from memoir.memory.values import ProposedItem, Quote, Range
from memoir.model import Author, Event, EventKind, Harness, Session, build_exchanges
from memoir.store import IngestBatch, Store

_RNG = random.Random(4141)
_B64URL = string.ascii_letters + string.digits + "_-"


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


ANTHROPIC = "sk-ant-" + "api03-" + _rand(93, _B64URL) + "AA"
OPENAI = "sk-" + "proj-" + _rand(74, _B64URL) + "T3Blbk" + "FJ" + _rand(74, _B64URL)
GITHUB = "github" + "_pat_" + _rand(22) + "_" + _rand(59)
PASSWORD = "Zq8-" + _rand(14)
CREDENTIALS = (ANTHROPIC, OPENAI, GITHUB, PASSWORD)
SAID = (
    f"From now on, always call the staging API with my Anthropic key {ANTHROPIC}",
    f"From now on, always call the staging API with my OpenAI key {OPENAI}",
    f"From now on, always push releases with my GitHub token {GITHUB}",
    f"my password for the staging database is {PASSWORD}",
    "I prefer tabs over spaces in every repository.",
)
SID = "5ec7e7a1-0000-4000-8000-0000000041a1"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _holds_credential(text: str) -> list[str]:
    return [c for c in CREDENTIALS if c in text or c[:16] in text]


# -- the memory engine, on both backends ---------------------------------------------------


class Recording:
    """The offline extractor, recording every request it is sent (inside the wiring)."""

    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.name = "offline"
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        return self.inner.complete(request)


def _put(store: Store) -> None:
    events = []
    for n, text in enumerate(SAID, start=1):
        events.append(
            Event(SID, 2 * n - 1, EventKind.USER_TEXT, Author.USER, text, T0 + timedelta(minutes=n))
        )
        events.append(Event(SID, 2 * n, EventKind.ASSISTANT_TEXT, Author.ASSISTANT, "Noted.", T0))
    session = Session(SID, "proj", Harness.API)
    store.ingest.apply(IngestBatch(session, tuple(events), tuple(build_exchanges(events))))


def test_memory_never_stores_a_credential(store: Store, settings: Settings) -> None:
    _put(store)
    recording = Recording()
    model = wrap(recording, store.usage, settings)  # as the app wires it: redacted
    parts = memory_parts(store)
    runner = Runner(parts, model, _counter(), MemoryConfig())
    memories = Memories(parts, store.claims, runner, wait_s=5)

    out = memories.remember(SID, 9)  # the whole range goes to the model, redacted
    assert out.receipt is not None and out.receipt.outcome == "remembered"
    seen = "\n".join(m.content for r in recording.requests for m in r.messages)
    assert "always call the staging API" in seen and "[redacted: " in seen
    assert _holds_credential(seen) == []
    asked = len(recording.requests)
    for turn in (1, 3, 5, 7):  # a request naming a credential: refused, nothing sent
        refused = memories.remember(SID, turn)
        assert refused.receipt is not None
        assert (refused.receipt.outcome, refused.receipt.reason) == (
            "no_op",
            "sensitive_information",
        )
    assert len(recording.requests) == asked
    items = memory_parts(store).items.find(history=True)
    assert len(items) >= len(out.items) >= 1
    assert any("tabs" in i.content for i in out.items)
    for item in items:
        assert _holds_credential(item.content) == []
        for source in item.sources:
            assert _holds_credential(source.quote) == []
            (event,) = store.events.of(SID, after=source.ordinal - 1, upto=source.ordinal)
            assert source.quote in event.text  # still an exact quote of the stored message


def _counter() -> Any:
    from memoir.llm import counter_for

    return counter_for("cl100k_base")


@pytest.mark.parametrize("said", SAID[:4])
def test_a_quote_of_the_placeholder_the_model_saw_is_refused(said: str) -> None:
    from memoir.secrets import mask

    event = Event(SID, 1, EventKind.USER_TEXT, Author.USER, said)
    slice_ = build_slice([event], Range(0, 1, 1))
    shown = mask(said)
    assert "[redacted: " in shown and _holds_credential(shown) == []
    proposed = ProposedItem(
        content="Call the staging API with the user's key.",
        kind="preference",
        keys=("staging api",),
        quotes=(Quote(1, shown),),
    )
    assert check_item(proposed, slice_) == "sensitive_information"
    raw = ProposedItem(
        content="Call the staging API with the user's key.",
        kind="preference",
        keys=("staging api",),
        quotes=(Quote(1, said),),
    )
    assert check_item(raw, slice_) == "sensitive_information"


# -- through the CLI, with a remote model ---------------------------------------------------


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A local server speaking OpenAI's wire format (tests/llm/wire.py)."""
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()


def _transcript(folder: Path) -> Path:
    writer = ClaudeWriter(SID, cwd="/home/ann/code/staging")
    for text in SAID:
        writer.user(text)
        writer.assistant("Noted, I will use it for the staging API.")
    path = folder / "projects" / "-home-ann-code-staging" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.bytes())
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli(args, capsys)
    assert code == 0, out + err
    return out


def test_a_synced_session_s_credentials_never_leave_and_are_masked_by_default(
    wire: WireServer,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MEMOIR_HOME", str(home))
    monkeypatch.setenv("MEMOIR_LLM", "openai:gpt-test")
    monkeypatch.setenv("MEMOIR_LLM_BASE_URL", wire.base_url + "/v1")
    monkeypatch.setenv("MEMOIR_LLM_API_KEY", "sk-test")
    transcript = _transcript(tmp_path / "src")
    _run(["sync", "--source", str(transcript.parents[1]), "--no-summaries", "--json"], capsys)
    answer = json.dumps({"narrative": "The user set up the staging API.", "facts": ["staging"]})
    wire.queue(*[Reply(200, openai_chat(answer)) for _ in range(20)])

    _run(["summarize", SID[:8], "--json", "--no-cache"], capsys)
    for turn in ("1", "3", "5", "7"):
        remembered = json.loads(_run(["remember", SID[:8], "--turn", turn, "--json"], capsys))
        assert (remembered["outcome"], remembered["reason"]) == ("no_op", "sensitive_information")
    with warnings.catch_warnings():  # the CLI leaves its model's connection to the GC
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()

    assert wire.received  # the summary was asked of the remote model
    sent = "\n".join(json.dumps(r.body) for r in wire.received)
    assert "always call the staging API" in sent and "[redacted: " in sent
    assert _holds_credential(sent) == []

    shown = _run(["show", SID[:8], "--json"], capsys)
    found = _run(["search", "staging API", "--json"], capsys)
    for out in (shown, found):
        assert "staging API" in out and "[redacted: " in out
        assert _holds_credential(out) == []
    listed = _run(["memories", "list", "--json"], capsys)
    assert _holds_credential(listed) == []

    revealed = _run(["show", SID[:8], "--json", "--reveal"], capsys)
    assert _holds_credential(revealed) == list(CREDENTIALS)  # the owner sees them
    archived = "\n".join(p.read_text(encoding="utf-8") for p in (home / "archive").rglob("*.jsonl"))
    assert _holds_credential(archived) == list(CREDENTIALS)  # the archive keeps the bytes
