"""The memory prompt, the request it is sent in, and the strict reader of the answer.

The prompt is versioned: :data:`PROMPT_VERSION` names the contract, :data:`PROMPT_HASH`
is a hash of every text a request is made from (system prompt, task lines, the layout
version), and :data:`PROMPT_ID` = ``"memory-v1+<hash>"`` is what a receipt records, so
any change to the wording shows in the receipts.

Request layout (one system message — the memory prompt, never the agent's — and one user
message; no tools, no provider options)::

    <task>
    {"trigger": "remember", "requested_turn": 42}
    what this trigger asks, in words
    </task>
    <memories>…</memories>                      live items a statement may update (JSON lines)
    <previous_summary>…</previous_summary>      the latest policy-safe compaction summary
    <context>…</context>                        localization turns (never citable)
    <turns>
    {"ordinal": 40, "role": "user", "citable": true, "text": "…"}
    …
    </turns>

Turns are JSON lines (``"</"`` written ``"<\\/"``, a legal JSON escape, so no text can close
a section). :func:`parse_proposal` reads the answer strictly: one JSON object (a single
enclosing code fence is tolerated), only the known fields, each of its type; anything else
raises :class:`MalformedProposal`. :func:`proposal_json` writes the same shape.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from memoir.llm.port import ChatMessage, ModelRequest, OfflineTask, Purpose, RequestMeta
from memoir.memory.evidence import SliceTurn
from memoir.memory.values import (
    KnownItem,
    MalformedProposal,
    Proposal,
    ProposalStatus,
    ProposedItem,
    Quote,
    Trigger,
)

__all__ = [
    "PROMPT_HASH",
    "PROMPT_ID",
    "PROMPT_VERSION",
    "SYSTEM_PROMPT",
    "build_request",
    "parse_proposal",
    "proposal_json",
    "render_turns",
    "task_text",
]

PROMPT_VERSION = "memory-v2"
LAYOUT_VERSION = "layout-2"

SYSTEM_PROMPT = """\
You extract long-term memory from a conversation between a user and an AI assistant.
A memory item is something durable about the user or their work that will still be true \
and useful in a later, unrelated conversation: a fact (who they are, where they live or \
work, people and things in their life, how their project is set up), a preference, a \
decision, a plan, or a constraint (a rule to follow, an allergy, a hard requirement).
Not memory: greetings, questions, one-off requests, the assistant's suggestions, the \
passing state of a task ("the test fails now"), hedges and speculation ("maybe we \
could…"), anything the user only pasted or quoted, and secrets (passwords, keys, tokens: \
never store them, even when asked).

The conversation is given inside <turns> as JSON lines, one event per line:
{"ordinal": N, "role": "user" or "assistant", "citable": true or false, "text": "…"}
Only lines with "role": "user" and "citable": true are evidence. Assistant lines, lines \
with "citable": false, <previous_summary> and <context> only explain what the user \
meant: never quote them, and never store something only because the assistant said it.

Every item quotes its evidence: 1 to 8 quotes {"ordinal": N, "text": "…"}, each text \
copied exactly, character for character, from the "text" of that citable user line (a \
sentence or a contiguous part of one, 4 to 1000 characters). Never paraphrase in a quote.

Answer with one JSON object and nothing else:
{"status": "complete" | "not_applicable" | "search_required" | "cannot_resolve",
 "items": [ITEM, …], "incidental": [ITEM, …], "search_terms": ["…"], "reason": "one line"}
ITEM = {"content": "one self-contained sentence in the third person, e.g. The user \
prefers tabs over spaces. (at most 2000 characters)",
 "kind": "fact" | "preference" | "decision" | "plan" | "constraint",
 "keys": ["1 to 16 short lower-case topic words or phrases"],
 "scope": "global" (true of the user anywhere) | "project" (true of this project only),
 "temporal": {"type": "undated"} | {"type": "point", "start": "YYYY-MM-DD"} | \
{"type": "interval", "start": "YYYY-MM-DD", "end": "YYYY-MM-DD"} | \
{"type": "open_ended", "start": "YYYY-MM-DD"} | {"type": "open_ended", "end": "YYYY-MM-DD"},
 "quotes": [{"ordinal": N, "text": "exact words"}],
 "updates": "the id of a <memories> line this item changes or replaces, or null"}
<memories>, when present, lists what is already remembered, one JSON line each: \
{"id": "…", "kind": "…", "keys": […], "content": "…"}. Never repeat one of them as a \
new item unless a citable turn says it again (then give the same content). When a \
citable turn changes or contradicts one of them (the user moved, switched tools, \
changed their mind), give the new item with "updates" set to that line's id and keys \
that share at least one key with it; otherwise leave "updates" out.
Status:
- complete: "items" holds 1 to 32 items.
- not_applicable: nothing asked for is durable memory; "items" is empty.
- search_required: the request points at something said earlier that the turns do not \
show ("yes, do it that way"); give 1 to 8 "search_terms" to find it in this \
conversation's earlier history, and no items.
- cannot_resolve: the request cannot be answered from this conversation; no items.
"incidental" (at most 10, only with complete or not_applicable) holds other durable items \
of the citable turns that were not asked for. "search_terms" only with search_required.
Give dates only when the turns state them; otherwise the temporal type is "undated".
"""

_TASKS: dict[Trigger, str] = {
    Trigger.REMEMBER: (
        "The user explicitly asked to remember something in the event with ordinal "
        '{turn}. Put what they asked to keep in "items" (status complete). If it refers '
        "to something said earlier that the turns do not show, answer search_required. "
        'Other durable things of the citable turns go to "incidental".'
    ),
    Trigger.EXTRACT: (
        "The assistant judged that this part of the conversation holds something worth "
        'keeping{note}. Put those items in "items" (status complete), or answer '
        'not_applicable when nothing is durable. Other durable things go to "incidental".'
    ),
    Trigger.COMPACTION: (
        "This part of the conversation is about to leave the assistant's context. Put "
        'every durable item of the citable user turns in "items" (status complete), or '
        'answer not_applicable when there is none. Leave "incidental" empty.'
    ),
    Trigger.SYNC: (
        "This part of the conversation has gone quiet and is read for what to keep. Put "
        'every durable item of the citable user turns in "items" (status complete), or '
        'answer not_applicable when there is none. Leave "incidental" empty.'
    ),
    Trigger.INCIDENTAL: (
        "This is the first part of a longer stretch of conversation. Put every durable "
        'item of the citable user turns in "items" (status complete), or answer '
        'not_applicable when there is none. Leave "incidental" empty.'
    ),
}

PROMPT_HASH = hashlib.sha256(
    "\x00".join([PROMPT_VERSION, LAYOUT_VERSION, SYSTEM_PROMPT, *_TASKS.values()]).encode()
).hexdigest()[:12]
PROMPT_ID = f"{PROMPT_VERSION}+{PROMPT_HASH}"


def task_text(trigger: Trigger, requested_turn: int | None, note: str | None) -> str:
    header = json.dumps({"trigger": trigger.value, "requested_turn": requested_turn})
    note_part = f" (its note: {' '.join(note.split())})" if note and note.strip() else ""
    return header + "\n" + _TASKS[trigger].format(turn=requested_turn, note=note_part)


def _json_line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False).replace("</", "<\\/")


def render_turns(turns: Sequence[SliceTurn], *, citable: bool = True) -> str:
    """JSON lines of the turns (``citable=False`` forces every line context-only)."""
    lines = []
    for t in turns:
        obj: dict[str, Any] = {"ordinal": t.ordinal, "role": t.role}
        obj["citable"] = bool(citable and t.citable)
        if t.speaker:
            obj["speaker"] = t.speaker
        obj["text"] = t.text
        lines.append(_json_line(obj))
    return "\n".join(lines)


def build_request(
    *,
    trigger: Trigger,
    turns: Sequence[SliceTurn],
    max_tokens: int,
    summary: str | None = None,
    requested_turn: int | None = None,
    note: str | None = None,
    localization: Sequence[SliceTurn] = (),
    session_id: str | None = None,
    known: Sequence[KnownItem] = (),
    task: OfflineTask | None = None,
) -> ModelRequest:
    """The whole memory request: the memory prompt as system, one user message (and
    ``task``, the same input for the offline model)."""
    parts = [f"<task>\n{task_text(trigger, requested_turn, note)}\n</task>"]
    if known:
        lines = "\n".join(
            _json_line({"id": k.id, "kind": k.kind, "keys": list(k.keys), "content": k.content})
            for k in known
        )
        parts.append(f"<memories>\n{lines}\n</memories>")
    if summary and summary.strip():
        safe = summary.strip().replace("</", "<\\/")
        parts.append(f"<previous_summary>\n{safe}\n</previous_summary>")
    if localization:
        parts.append(f"<context>\n{render_turns(localization, citable=False)}\n</context>")
    parts.append(f"<turns>\n{render_turns(turns)}\n</turns>")
    return ModelRequest(
        messages=(ChatMessage("user", "\n".join(parts)),),
        max_tokens=max_tokens,
        system=SYSTEM_PROMPT,
        temperature=0.0,
        json=True,
        meta=RequestMeta(session=session_id, purpose=Purpose.EXTRACTION),
        task=task,
    )


# -- the answer ---------------------------------------------------------------------------


def _item_json(item: ProposedItem) -> dict[str, Any]:
    temporal: dict[str, Any] = {"type": item.temporal}
    if item.start is not None:
        temporal["start"] = item.start
    if item.end is not None:
        temporal["end"] = item.end
    return {
        "content": item.content,
        "kind": item.kind,
        "keys": list(item.keys),
        "scope": item.scope,
        "temporal": temporal,
        "quotes": [{"ordinal": q.ordinal, "text": q.text} for q in item.quotes],
        **({"updates": item.updates} if item.updates else {}),
    }


def proposal_json(proposal: Proposal) -> str:
    """The proposal in the answer's JSON shape (what :func:`parse_proposal` reads)."""
    obj: dict[str, Any] = {
        "status": proposal.status.value,
        "items": [_item_json(i) for i in proposal.items],
        "incidental": [_item_json(i) for i in proposal.incidental],
        "search_terms": list(proposal.search_terms),
    }
    if proposal.reason is not None:
        obj["reason"] = proposal.reason
    return json.dumps(obj, ensure_ascii=False)


_FENCED = re.compile(r"\A```(?:json)?[ \t]*\n(.*)\n```\Z", re.DOTALL)
_TOP = {"status", "items", "incidental", "search_terms", "reason"}
_ITEM = {"content", "kind", "keys", "scope", "temporal", "quotes", "updates"}
_ITEM_REQUIRED = {"content", "kind", "keys", "quotes"}


def _want(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        got = type(value).__name__
        raise MalformedProposal(f"expected {kind.__name__}, got {got}", where=where)
    return value


def _fields(obj: Any, allowed: set[str], required: set[str], where: str) -> dict[str, Any]:
    _want(obj, dict, where)
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise MalformedProposal(f"unknown field {unknown[0]!r}", where=where)
    missing = sorted(required - set(obj))
    if missing:
        raise MalformedProposal(f"missing field {missing[0]!r}", where=where)
    return dict(obj)


def _optional_str(value: Any, where: str) -> str | None:
    return None if value is None else _want(value, str, where)


def _quote(obj: Any, where: str) -> Quote:
    q = _fields(obj, {"ordinal", "text"}, {"ordinal", "text"}, where)
    ordinal = _want(q["ordinal"], int, f"{where}.ordinal")
    return Quote(ordinal, _want(q["text"], str, f"{where}.text"))


def _item(obj: Any, where: str) -> ProposedItem:
    o = _fields(obj, _ITEM, _ITEM_REQUIRED, where)
    keys = _want(o["keys"], list, f"{where}.keys")
    quotes = _want(o["quotes"], list, f"{where}.quotes")
    raw_temporal = o.get("temporal")
    raw_temporal = {"type": "undated"} if raw_temporal is None else raw_temporal
    t = _fields(raw_temporal, {"type", "start", "end"}, {"type"}, f"{where}.temporal")
    return ProposedItem(
        content=_want(o["content"], str, f"{where}.content"),
        kind=_want(o["kind"], str, f"{where}.kind"),
        keys=tuple(_want(k, str, f"{where}.keys[{i}]") for i, k in enumerate(keys)),
        quotes=tuple(_quote(q, f"{where}.quotes[{i}]") for i, q in enumerate(quotes)),
        scope=_want(o.get("scope", "global"), str, f"{where}.scope"),
        temporal=_want(t["type"], str, f"{where}.temporal.type"),
        start=_optional_str(t.get("start"), f"{where}.temporal.start"),
        end=_optional_str(t.get("end"), f"{where}.temporal.end"),
        updates=_optional_str(o.get("updates"), f"{where}.updates") or None,
    )


def _no_constant(name: str) -> Any:
    raise MalformedProposal(f"{name} is not JSON")


def _load(text: str) -> Any:
    if not isinstance(text, str):
        raise MalformedProposal(f"expected text, got {type(text).__name__}")
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body, parse_constant=_no_constant)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise MalformedProposal(f"not JSON: {exc}") from exc


def parse_proposal(text: str) -> Proposal:
    """The proposal a model answered; :class:`MalformedProposal` for anything that is not
    exactly the shape the prompt asks for."""
    top = _fields(_load(text), _TOP, {"status"}, "")
    status_raw = _want(top["status"], str, "status")
    try:
        status = ProposalStatus(status_raw)
    except ValueError:
        raise MalformedProposal(f"unknown status {status_raw!r}", where="status") from None
    items = _want(top.get("items", []), list, "items")
    incidental = _want(top.get("incidental", []), list, "incidental")
    terms = _want(top.get("search_terms", []), list, "search_terms")
    return Proposal(
        status=status,
        items=tuple(_item(o, f"items[{i}]") for i, o in enumerate(items)),
        incidental=tuple(_item(o, f"incidental[{i}]") for i, o in enumerate(incidental)),
        search_terms=tuple(_want(t, str, f"search_terms[{i}]") for i, t in enumerate(terms)),
        reason=_optional_str(top.get("reason"), "reason"),
    )
