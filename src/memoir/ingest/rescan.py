"""Derived text re-scanned when the secret detector changes (issue 41, point 4).

Summaries, compaction checkpoints and traces, cached model answers (episodes) and memory
items were written by earlier versions with the detector of their day. When
:func:`memoir.secrets.detector_id` differs from the one a target was scanned with, the
target is read again from its start, a page at a time, and each text that now holds a
secret is rewritten with placeholders (:func:`memoir.secrets.mask`, JSON strings one by
one with :func:`~memoir.secrets.mask_json`). A memory item whose content or quote holds
one is forgotten, as extraction refuses such an item (a quote stays an exact substring of
its stored message, and no credential is stored).

When: at the end of every ``memoir sync`` (and ``memoir verify --repair``), one process at
a time; a plain ``memoir verify`` reports where it stands (:func:`state_report`) and writes
nothing. Once every target is done with the current detector a run costs one query.

Bounded and resumable: a run reads at most ``budget`` rows; each page's changes and its
cursor are written in one transaction (summaries: the summary first, then the cursor — a
summary masked twice is the same), so a run killed half-way resumes after the last page
it finished. The archive, the events and the search index are never touched.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from memoir.secrets.rules import detector_id
from memoir.store.parts.sessions import TABLE_TARGETS, RescanPart, RescanState

__all__ = [
    "BUDGET",
    "PAGE",
    "SUMMARIES",
    "RescanReport",
    "SummaryTexts",
    "masked_text",
    "rescan",
    "state_report",
]


BUDGET = 5000  # rows read per run at most
PAGE = 100
SUMMARIES = "summaries"


class SummaryTexts(Protocol):
    """What the re-scan needs of a summary store (:class:`memoir.summaries.port.SummaryStore`)."""

    def scan(self, *, full: bool = False) -> list[Any]: ...
    def refresh(self, conversation: Any) -> Any: ...
    def write(self, conversation: Any, state: Any) -> None: ...


@dataclass
class RescanReport:
    """``run``: per target, rows read and changed by this run; ``total``: the same since
    the detector changed; ``done``: targets fully re-scanned with ``detector``;
    ``skipped``: why nothing was scanned."""

    detector: str
    run: dict[str, dict[str, int]] = field(default_factory=dict)
    total: dict[str, dict[str, int]] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    skipped: str | None = None  # why this run scanned nothing (read-only, another's run)

    @property
    def finished(self) -> bool:
        return set(self.done) >= {*TABLE_TARGETS, SUMMARIES}

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "finished": self.finished}


def state_report(states: dict[str, RescanState], detector: str | None = None) -> RescanReport:
    """Where the re-scan stands, from the stored ``states`` (nothing is read or written):
    a target scanned with another detector counts as not started."""
    detector = detector or detector_id()
    report = RescanReport(detector)
    for target in (*TABLE_TARGETS, SUMMARIES):
        state = states.get(target)
        if state is None or state.detector != detector:
            state = RescanState(target, detector)
        report.total[target] = {"scanned": state.scanned, "changed": state.changed}
        if state.done:
            report.done.append(target)
    return report


def masked_text(text: str) -> str:
    """``text`` with its secrets masked; a JSON document has its strings masked one by one
    (it stays JSON)."""
    from memoir.secrets import has_secret, mask, mask_json  # the detector loads on use

    if not text or not has_secret(text):
        return text
    if text[:1] in "{[":
        try:
            value = json.loads(text)
        except ValueError:
            return mask(text)
        done = mask_json(value)
        return text if done is value else json.dumps(done, ensure_ascii=False)
    return mask(text)


def rescan(
    part: RescanPart,
    summaries: SummaryTexts | None = None,
    *,
    budget: int = BUDGET,
    detector: str | None = None,
    page: int = PAGE,
) -> RescanReport:
    """Re-scan what is left of each target, at most ``budget`` rows in all."""
    detector = detector or detector_id()
    states = part.states()
    report = RescanReport(detector)
    left = budget
    for target in (*TABLE_TARGETS, SUMMARIES):
        state = states.get(target)
        if state is None or state.detector != detector:
            state = RescanState(target, detector)
        read = changed = 0
        listed: list[Any] | None = None
        while not state.done and left > 0:
            size = min(page, left)
            if target == SUMMARIES:
                if listed is None:  # every conversation, once a run, by session id
                    found = summaries.scan(full=True) if summaries is not None else []
                    listed = sorted(found, key=_session_of)
                state, n, c = _summary_page(state, listed, summaries, size)
                part.save(state)
            else:
                state, n, c = _table_page(part, state, size)
            read, changed, left = read + n, changed + c, left - max(n, 1)
        report.run[target] = {"scanned": read, "changed": changed}
        report.total[target] = {"scanned": state.scanned, "changed": state.changed}
        if state.done:
            report.done.append(target)
    return report


def _table_page(part: RescanPart, state: RescanState, size: int) -> tuple[RescanState, int, int]:
    from memoir.secrets import has_secret

    rows = part.page(state.target, state.cursor, size)
    updates: dict[str, str] = {}
    forget: list[str] = []
    for key, texts in rows:
        if state.target == "memory":
            if any(has_secret(t) for t in texts):
                forget.append(key)
        elif (new := masked_text(texts[0])) != texts[0]:
            updates[key] = new
    changed = len(updates) + len(forget)
    state = replace(
        state,
        cursor=rows[-1][0] if rows else state.cursor,
        scanned=state.scanned + len(rows),
        changed=state.changed + changed,
        done=len(rows) < size,
    )
    part.save(state, updates=updates, forget=forget)
    return state, len(rows), changed


def _summary_page(
    state: RescanState, listed: list[Any], summaries: SummaryTexts | None, size: int
) -> tuple[RescanState, int, int]:
    if summaries is None:  # no summary store here: nothing to scan
        return replace(state, done=True), 0, 0
    pending = [c for c in listed if c.session_id > state.cursor][:size]
    from memoir.secrets import mask

    changed = 0
    for conversation in pending:
        full = summaries.refresh(conversation)
        body = full.state.body
        if body and (new := mask(body)) != body:
            summaries.write(full, replace(full.state, body=new))
            changed += 1
    return (
        replace(
            state,
            cursor=pending[-1].session_id if pending else state.cursor,
            scanned=state.scanned + len(pending),
            changed=state.changed + changed,
            done=len(pending) < size,
        ),
        len(pending),
        changed,
    )


def _session_of(conversation: Any) -> str:
    return str(conversation.session_id)
