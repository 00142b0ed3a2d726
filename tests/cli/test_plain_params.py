"""Arguments converted without pydantic (:mod:`memoir.cli.conventions`): wherever the
plain decision answers, it answers what typer's own pydantic adapter answers, value and
type; where it does not, typer's adapter converts (and refuses) as before."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pytest
from typer._coercion import build_runtime_param, resolve_type_descriptor
from typer.models import OptionInfo

from memoir.cli.conventions import NOT_PLAIN, plain_value
from memoir.model import Harness


class Mode(StrEnum):
    text = "text"
    vector = "vector"


RANGED = {"min": 1, "max": 1000}
CASES: list[tuple[Any, dict[str, Any], Any, bool]] = [
    # (annotation, the option's ParameterInfo fields, value, answered plainly)
    (str, {}, "coupon", True),
    (str, {}, "", True),
    (str, {}, "café ☕ -prisma", True),
    (str, {}, "\udcff", False),  # undecodable bytes: typer's adapter judges
    (str, {"parser": str.upper}, "x", False),
    (int, {}, "42", True),
    (int, {}, "007", True),
    (int, {}, 10, True),
    (int, RANGED, "1000", True),
    (int, RANGED, "0", False),  # out of range: typer's refusal
    (int, RANGED, "1001", False),
    (int, {"min": 1, "max": 5, "clamp": True}, "9", False),  # clamped by typer
    (int, {}, "-3", False),
    (int, {}, "4.0", False),
    (int, {}, "1_000", False),
    (int, {}, "٣", False),  # a digit, not an ASCII one
    (float, {}, "1.5", False),
    (Mode, {}, "vector", True),
    (Mode, {}, Mode.text, True),
    (Mode, {"case_sensitive": False}, "TEXT", True),
    (Mode, {}, "TEXT", False),  # not one of them: typer's message
    (Harness, {}, "claude-code", True),
    (bool, {}, "yes", False),
]


@pytest.mark.parametrize(("annotation", "fields", "value", "plain"), CASES)
def test_plain_value_is_typers_own(
    annotation: Any, fields: dict[str, Any], value: Any, plain: bool
) -> None:
    info = OptionInfo(**fields)
    got = plain_value(annotation, info, value)
    assert (got is not NOT_PLAIN) is plain
    if not plain:
        return
    typers = build_runtime_param(resolve_type_descriptor(annotation, info))
    expected = typers._coerce_value(value, param=None, ctx=None)  # type: ignore[arg-type]
    assert got == expected and type(got) is type(expected)
