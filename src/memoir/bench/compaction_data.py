"""Agent histories with planted facts, for the compaction retention benchmark. Pure.

:func:`agent_history` builds, from a seed, an OpenAI-style history of ``turns`` agent
steps — each an assistant message calling one tool (``bash``, ``read_file``, ``grep``,
``edit_file``) and its result, or an assistant reply in prose — with a user message every
few steps. Tool results vary in size (a log-normal spread, median ~450 tokens, some past
8,000), and the filler is what agent work looks like: code and test output, reads and
greps, errors that get fixed, replies that say "because".

Planted at known positions (a share of the way through the history), each with a key —
a made-up identifier that occurs nowhere else — so its presence in a compacted context
is a substring test:

* ``constraint`` (user text, near the start): "Never touch the prod-… database; …";
* ``decision`` ×3 (assistant or user text): "We'll use X instead of Y because …";
* ``failure`` ×3 (a tool result): a command whose output ends in an error naming a
  module, and ``exit status 1`` — a later run of the same command sometimes passes;
* ``edit`` ×3 (a tool call): ``edit_file`` on a path, and the result saying so;
* ``task`` (user text, near the end): the last task in progress.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from typing import Any

__all__ = ["AgentHistory", "Fact", "agent_history"]

_WORDS = [
    "orca",
    "heron",
    "quokka",
    "lynx",
    "marten",
    "ibis",
    "tapir",
    "okapi",
    "gecko",
    "wombat",
    "puffin",
    "bison",
    "kestrel",
    "dingo",
    "ferret",
    "jackal",
    "koala",
    "lemur",
    "narwhal",
    "ocelot",
    "pangolin",
    "raven",
    "serval",
    "tern",
    "vole",
    "walrus",
    "yak",
    "zebu",
    "caracal",
    "egret",
]
_MODULES = [
    "billing",
    "ledger",
    "invoice",
    "auth",
    "session",
    "cache",
    "queue",
    "report",
    "export",
    "sync",
    "search",
    "parser",
    "scheduler",
    "notify",
    "storage",
    "upload",
]
_FORMATS = ("msgpack", "protobuf", "avro", "cbor", "parquet", "jsonl")
_REASONS = (
    "the payloads are small and the schema changes often",
    "the consumers are written in three languages",
    "it keeps the tests hermetic and fast",
    "the old path doubled the latency at peak",
    "the vendor library is unmaintained",
)
_FILLER_PROSE = (
    "Let me look at {path} first because the stack trace points there.",
    "The function {fn} builds the totals from the line items and rounds at the end.",
    "I'll run the tests again because the last change touched the fixtures.",
    "That output looks normal; the warning about deprecated settings is unrelated.",
    "The {mod} module reads its configuration once at start-up.",
    "Next I will check how {fn} is called from the request handler.",
    "This matches what the docs say about retries, so no change is needed there.",
)
_USER_FILLER = (
    "ok, continue",
    "Can you check why the {mod} tests are slow?",
    "Now look at the {mod} module.",
    "Looks good. What is left?",
    "Please keep going with the {mod} part.",
)


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str  # constraint | decision | failure | edit | task
    key: str  # the identifier whose presence is tested
    index: int  # the message (0-based, in the history) it was planted in
    carrier: str  # user | assistant | tool


@dataclass(frozen=True, slots=True)
class AgentHistory:
    messages: list[dict[str, Any]]
    facts: tuple[Fact, ...]
    seed: int
    turns: int


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a careful coding agent working in a repo."}
        ]
        self.facts: list[Fact] = []
        self.calls = 0
        self.used: set[str] = set()
        self.later_fix: str | None = None  # a failed command a later step runs again

    # -- pieces ------------------------------------------------------------------------

    def ident(self, pattern: str) -> str:
        while True:
            word = self.rnd.choice(_WORDS)
            value = pattern.format(w=word, n=self.rnd.randint(10, 99))
            if value not in self.used:
                self.used.add(value)
                return value

    def path(self) -> str:
        mod = self.rnd.choice(_MODULES)
        return f"src/{mod}/{self.rnd.choice(_MODULES)}_{self.rnd.randint(1, 40)}.py"

    def size(self) -> int:
        """Tokens of a tool result: log-normal, median ~450, a few past 8,000."""
        return max(40, min(12_000, int(math.exp(self.rnd.gauss(math.log(450), 1.1)))))

    def code(self, tokens: int, path: str) -> str:
        lines = []
        stem = path.rsplit("/", 1)[-1].removesuffix(".py")
        for i in range(max(1, tokens // 14)):
            lines.append(
                f"    {stem}_{i} = compute_{i % 7}(items[{i}], rate={self.rnd.randint(1, 9)})"
            )
        return "\n".join(lines)

    def fill_words(self, text: str) -> str:
        return text.format(
            path=self.path(), mod=self.rnd.choice(_MODULES), fn=f"{self.rnd.choice(_WORDS)}_total"
        )

    def call(self, name: str, args: dict[str, Any], output: str, text: str | None = None) -> int:
        self.calls += 1
        cid = f"call_{self.calls}"
        last = self.messages[-1]
        if last["role"] == "assistant" and not last.get("tool_calls"):  # one message
            self.messages.pop()
            text = last["content"] if text is None else f"{last['content']} {text}"
        self.messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": cid, "content": output})
        return len(self.messages) - 1

    def say(self, role: str, text: str) -> int:
        if self.messages[-1]["role"] == role:  # keep roles alternating
            other = "assistant" if role == "user" else "user"
            self.messages.append({"role": other, "content": "ok" if other == "user" else "OK."})
        self.messages.append({"role": role, "content": text})
        return len(self.messages) - 1

    # -- steps -------------------------------------------------------------------------

    def filler_step(self) -> None:
        r = self.rnd.random()
        path = self.path()
        if r < 0.45:
            self.call("read_file", {"path": path}, self.code(self.size(), path))
        elif r < 0.65:
            cmd = f"pytest tests/test_{self.rnd.choice(_MODULES)}.py -q"
            out = self.code(self.size(), path) + f"\n{self.rnd.randint(3, 60)} passed in 0.8s"
            self.call("bash", {"command": cmd}, out, text=self.fill_words(_FILLER_PROSE[2]))
        elif r < 0.8:
            pattern = f"def {self.rnd.choice(_WORDS)}_"
            hits = "\n".join(f"{self.path()}:{i}: {pattern}x(self):" for i in range(20))
            self.call("grep", {"pattern": pattern, "path": "src"}, hits)
        else:
            self.say("assistant", self.fill_words(self.rnd.choice(_FILLER_PROSE)))

    def constraint(self) -> None:
        db = self.ident("prod-{w}-{n}")
        text = (
            f"Never touch the {db} database; anything that writes must use the staging copy. "
            "Keep the public API of the package unchanged."
        )
        self.facts.append(Fact("constraint", db, self.say("user", text), "user"))

    def decision(self) -> None:
        choice = self.ident("{w}-codec-{n}")
        old = self.rnd.choice(_FORMATS)
        reason = self.rnd.choice(_REASONS)
        role = "assistant" if self.rnd.random() < 0.7 else "user"
        lead = "We'll use" if role == "assistant" else "Let's go with"
        text = f"{lead} {choice} instead of {old} for the event payloads because {reason}."
        self.facts.append(Fact("decision", choice, self.say(role, text), role))

    def failure(self) -> None:
        pkg = self.ident("{w}_client_{n}")
        cmd = f"pytest tests/test_{self.rnd.choice(_MODULES)}.py -q"
        out = (
            self.code(self.size(), self.path())
            + f"\nE   ModuleNotFoundError: No module named '{pkg}'\nexit status 1"
        )
        index = self.call("bash", {"command": cmd}, out, text="Running the tests.")
        self.facts.append(Fact("failure", pkg, index, "tool"))
        if self.rnd.random() < 0.5:
            self.later_fix = cmd

    def edit(self) -> None:
        path = f"src/{self.rnd.choice(_MODULES)}/{self.ident('{w}_store_{n}')}.py"
        args = {"path": path, "old": "return total", "new": "return round(total, 2)"}
        index = self.call("edit_file", args, f"Applied 1 edit to {path}.")
        self.facts.append(Fact("edit", path, index - 1, "assistant"))

    def task(self) -> None:
        svc = self.ident("{w}-uploader-{n}")
        text = f"Next, add retry logic with backoff to the {svc} and keep the timeout at 30 s."
        self.facts.append(Fact("task", svc, self.say("user", text), "user"))


# fraction of the way through the history where each fact is planted
_PLAN = (
    (0.0, "constraint"),
    (0.10, "edit"),
    (0.15, "decision"),
    (0.25, "failure"),
    (0.45, "edit"),
    (0.50, "decision"),
    (0.60, "failure"),
    (0.75, "edit"),
    (0.80, "decision"),
    (0.90, "failure"),
    (0.97, "task"),
)


def agent_history(turns: int, seed: int) -> AgentHistory:
    """A deterministic agent history of ``turns`` steps with the facts of ``_PLAN``."""
    b = _Builder(seed)
    b.say("user", "The nightly export is failing; find out why and fix it.")
    plan = sorted((max(1, int(f * turns)), kind) for f, kind in _PLAN)
    for step in range(turns):
        for at, kind in plan:
            if at == step:
                getattr(b, kind)()
        if step % 9 == 8:
            b.say("user", b.fill_words(b.rnd.choice(_USER_FILLER)))
        if b.later_fix is not None and b.rnd.random() < 0.2:
            b.call("bash", {"command": b.later_fix}, "14 passed in 1.1s\nexit status 0")
            b.later_fix = None
        else:
            b.filler_step()
    if b.messages[-1]["role"] == "user":
        b.say("assistant", "Understood; starting on that now.")
    return AgentHistory(b.messages, tuple(b.facts), seed, turns)
