"""What the authorization matrix compares: one call made as Alice on her own object, on
Bob's, and on one that does not exist.

Bob's and the missing one must be indistinguishable: the same status and the same
answer once the reference the caller sent is blanked out (an error may echo the id it was
given, never anything else). :func:`same_refusal` says so; :func:`no_leak` checks that
nothing of Bob's — his session, his item, his project, his words — is in an answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .conftest import A_SESSION, B_SESSION, B_STORED, LEAK, MISSING_ITEM, MISSING_SESSION, World

__all__ = ["A_PROJECT", "B_PROJECT", "MISSING_PROJECT", "Refs", "no_leak", "refs", "same_refusal"]

A_PROJECT, B_PROJECT, MISSING_PROJECT = "webshop", "quokka-lab", "nobody-lab"


@dataclass(frozen=True)
class Refs:
    """The references of one kind of object: Alice's, Bob's, one that does not exist."""

    own: str
    other: str
    missing: str


def refs(world: World, kind: str) -> Refs:
    if kind == "session":
        return Refs(A_SESSION, B_SESSION, MISSING_SESSION)
    if kind == "item":
        return Refs(world.a_item, world.b_item, MISSING_ITEM)
    if kind == "project":
        return Refs(A_PROJECT, B_PROJECT, MISSING_PROJECT)
    raise AssertionError(f"no references of kind {kind!r}")


def _blank(text: str, ref: str) -> str:
    return text.replace(ref, "<ref>")


def same_refusal(other: tuple[Any, str], missing: tuple[Any, str], r: Refs) -> None:
    """``other`` and ``missing`` — (status, answer text) — are the same refusal."""
    (status_b, text_b), (status_m, text_m) = other, missing
    assert status_b == status_m, (status_b, text_b, status_m, text_m)
    assert _blank(text_b, r.other) == _blank(text_m, r.missing), (text_b, text_m)


def no_leak(world: World, text: str) -> None:
    """Nothing of Bob's in ``text``."""
    secrets = (
        B_SESSION,
        B_STORED,
        B_STORED[:8],
        world.b_item,
        world.b_item[:8],
        "quokka-lab",
        LEAK,
    )
    for secret in secrets:
        assert secret not in text, (secret, text[:500])


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
