"""typer (0.29) converts every argument of a command through a pydantic ``TypeAdapter``,
which imports pydantic when any command runs: about a third of what ``memoir search``
imports before it searches. Memoir's arguments are mostly plain (a string, a whole
number in range, a choice of an enum), and their values come as they are.

:func:`plain_value` decides, for one annotation and one value, the result typer's
adapter would give when that result is certain: a ``str`` for a string, an ``int``
for digits within the option's range, the enum member a choice names (through typer's
own choice matching). Anything else — a negative or out-of-range number, a path, a
date, a parser, an unknown choice — is left to typer's adapter, so its conversion and
its error messages stay exactly typer's. :func:`install` puts the decision in front of
typer's, once; a typer without the hooks it needs is left as it is. Tests:
``tests/cli/test_plain_params.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["NOT_PLAIN", "install", "plain_value"]

NOT_PLAIN: Any = object()  # plain_value's answer when typer's adapter must decide


def plain_value(annotation: Any, info: Any, value: Any, ctx: Any = None) -> Any:
    """What typer's adapter makes of ``value`` for ``annotation`` (with ``info``, the
    parameter's ``ParameterInfo``; ``ctx`` the click context a choice is matched in), or
    :data:`NOT_PLAIN` when that is not certain. Pure."""
    if getattr(info, "parser", None) is not None:
        return NOT_PLAIN
    if annotation is str:
        if type(value) is str and _utf8(value):
            return value
        return NOT_PLAIN
    if annotation is int:
        if type(value) is int:
            number = value
        elif type(value) is str and value.isascii() and value.isdigit():
            number = int(value)
        else:
            return NOT_PLAIN
        low, high = getattr(info, "min", None), getattr(info, "max", None)
        if (low is not None and number < low) or (high is not None and number > high):
            return NOT_PLAIN  # refused or clamped: typer says which
        return number
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        from typer._param_types import coerce_cli_choice

        try:
            return coerce_cli_choice(
                value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx
            )
        except Exception:  # not one of them: typer's message
            return NOT_PLAIN
    return NOT_PLAIN


def _utf8(text: str) -> bool:
    """Whether ``text`` is whole Unicode (an argument of undecodable bytes holds lone
    surrogates, which pydantic judges itself)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def install() -> None:
    """Make typer's parameters try :func:`plain_value` before building their pydantic
    adapter (built, as before, when a value is not plain). Done once."""
    try:
        from typer import _coercion
        from typer.core import _TyperParameter
    except ImportError:  # another typer: its own conversion
        return
    runtime = getattr(_TyperParameter, "get_runtime_param", None)
    base = getattr(_coercion, "RuntimeParam", None)
    if runtime is None or base is None or getattr(runtime, "_memoir_plain", False):
        return

    @dataclass(frozen=True)
    class PlainFirst(base):  # type: ignore[misc, valid-type]
        """Typer's runtime conversion with :func:`plain_value` in front of it."""

        descriptor: Any = None
        built: list[Any] = field(default_factory=list)  # typer's own, once needed

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            plain = plain_value(self.annotation, self.parameter_info, value, ctx)
            if plain is not NOT_PLAIN:
                return plain
            if not self.built:
                self.built.append(_coercion.build_runtime_param(self.descriptor))
            return self.built[0]._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            descriptor = self.type_descriptor
            if descriptor.file_annotation is None:
                self._runtime_param = PlainFirst(
                    parameter_info=descriptor.parameter_info,
                    annotation=descriptor.annotation,
                    descriptor=descriptor,
                )
        return runtime(self)

    get_runtime_param._memoir_plain = True  # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
