"""How a transcript is written for a model: turns that cannot be forged from inside.

The prompt convention every model caller shares puts a conversation inside
``<transcript>…</transcript>``, each turn opened by a speaker label (``User: …``,
``Ana (user): …``, ``Assistant called Bash: …``, ``[tool result: Bash]`` …;
:func:`opens_turn`). A turn's own text can hold a
line that reads like such a label — a tool printing a chat log, a reply quoting one, a
pasted transcript — and a reader (a model, or the offline strategies' reader) would take
what follows for another speaker's words: a tool's output for the user's. So every line
of a body that would read as a label (after its first, which follows the turn's own
label) is quoted with ``"> "`` (:func:`quote_speaker_lines`): the words stay, only who
said them can no longer be faked.
"""

from __future__ import annotations

import re

__all__ = ["HEADING_LINE", "NAMED_LINE", "SPEAKER_LINE", "opens_turn", "quote_speaker_lines"]

SPEAKER_LINE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?[\[*<]{0,2}[ \t]*"
    r"(?P<role>user|human|assistant|ai|claude|agent|bot|system|developer|attachment|用户|助手"
    r"|tool(?:[ _-]?(?:call|result|use|output|response))?)"
    r"(?P<called>[ \t]+called[ \t]+[\w.:/-]{1,80})?"
    r"(?:[ \t]*\([^)\n]{0,60}\))?(?:[ \t]*\[[^\]\n]{0,20}\])?"
    r"[ \t]*[\]*>]{0,2}[ \t]*(?:[:：]|\]|>|—|-(?=\s))[ \t]?",
    re.IGNORECASE,
)
HEADING_LINE = re.compile(
    r"^[ \t]*#{1,6}[ \t]*\**(?P<role>user|human|assistant|ai|claude|system)\**[ \t]*:?[ \t]*$",
    re.IGNORECASE,
)


# "Ana (user): …" — a turn whose source named its speaker (a group chat, one agent of a team)
NAMED_LINE = re.compile(
    r"^[ \t]*(?P<name>[^\n():<>\[\]]{1,64}?)[ \t]*\((?P<role>user|assistant)\)[ \t]*:[ \t]?",
    re.IGNORECASE,
)


def opens_turn(line: str) -> re.Match[str] | None:
    """The label a line opens a turn with (its ``role`` group names the speaker's role), or
    None when the line continues the turn before it."""
    return HEADING_LINE.match(line) or NAMED_LINE.match(line) or SPEAKER_LINE.match(line)


def quote_speaker_lines(body: str, *, first_line_too: bool = False) -> str:
    """``body`` with each line that would open a new turn quoted: every line after the
    first (which follows its own label), or every line when the body starts a line of its
    own (``first_line_too``: a label on a line by itself, as ``[tool result: Bash]``)."""
    lines = body.split("\n")
    start = 0 if first_line_too else 1
    for n in range(start, len(lines)):
        if opens_turn(lines[n]):
            lines[n] = f"> {lines[n]}"
    return "\n".join(lines)
