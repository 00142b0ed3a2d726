"""A tool call's arguments read into typed values, or one sentence saying what is wrong.

Pure. Clients send whatever JSON a model wrote: a number as a string, a negative limit, a
100 KB query, an argument the tool does not take. Each reader here checks one argument and
raises :class:`memoir.errors.ConfigError` with a sentence a model can act on (the server
returns it as a tool error, and the next call is served as usual).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memoir.errors import ConfigError

__all__ = ["Args"]

# ASCII digits only: str.isdigit() also takes "²" and "①", which int() refuses
_WHOLE = re.compile(r"-?[0-9]+")


class Args:
    """The arguments of one call of ``tool``; every reader names the argument it reads."""

    def __init__(self, tool: str, raw: Mapping[str, Any] | None, known: Iterable[str]) -> None:
        self.tool = tool
        self.raw: Mapping[str, Any] = raw or {}
        if not isinstance(self.raw, Mapping):
            raise ConfigError(f"{tool}: the arguments must be a JSON object")
        allowed = list(known)
        unknown = sorted(k for k in self.raw if k not in allowed)
        if unknown:
            takes = ", ".join(allowed) if allowed else "no arguments"
            raise ConfigError(
                f"{tool} does not take {', '.join(repr(u) for u in unknown)}; it takes: {takes}"
            )

    def _get(self, name: str) -> Any:
        value = self.raw.get(name)
        return None if value is None else value

    def text(
        self,
        name: str,
        *,
        required: bool = False,
        max_chars: int = 500,
        strip: bool = True,
        blank: str | None = None,
    ) -> str | None:
        """A string argument (None when left out). A blank one is refused when ``required``
        or when ``blank`` says what to give instead (a filter: an empty one dropped would
        widen the call to everything); otherwise it reads as left out."""
        value = self._get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise ConfigError(f"{self.tool} needs {name!r} (a non-empty string)")
            if blank is not None and value is not None:
                raise ConfigError(f"{name} is empty: {blank}, or leave {name} out")
            return None
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, not {_kind(value)}")
        if len(value) > max_chars:
            raise ConfigError(
                f"{name} is {len(value):,} characters long; {self.tool} takes at most "
                f"{max_chars:,} — shorten it to the words that matter"
            )
        return value.strip() if strip else value

    def integer(self, name: str, *, default: int | None, low: int, high: int) -> int | None:
        value = self._get(name)
        if value is None:
            return default
        if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be a whole number, not {_kind(value)}")
        if not low <= value <= high:
            raise ConfigError(f"{name} must be from {low:,} to {high:,}; got {value:,}")
        return value

    def flag(self, name: str, *, default: bool) -> bool:
        value = self._get(name)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false, not {_kind(value)}")
        return value

    def choice(
        self, name: str, options: Iterable[str], *, default: str | None, blank_ok: bool = True
    ) -> str | None:
        """One of ``options`` (``default`` when left out; a blank string too, unless
        ``blank_ok`` is false: a filter given as "" is refused, as the CLI refuses it)."""
        raw = self._get(name)
        value = self.text(name, max_chars=100)
        allowed = list(options)
        if value is None and raw is not None and not blank_ok:
            raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {raw!r}")
        if value is None:
            return default
        if value not in allowed:
            raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        return value

    def words(self, name: str, *, max_items: int = 16, max_chars: int = 100) -> list[str]:
        """A list of short strings (one string is taken as a list of one)."""
        value = self._get(name)
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{name} must be a list of strings, not {_kind(value)}")
        if len(value) > max_items:
            raise ConfigError(f"{name} takes at most {max_items} entries; got {len(value)}")
        long = next((v for v in value if len(v) > max_chars), None)
        if long is not None:
            raise ConfigError(f"each {name} entry is at most {max_chars} characters")
        return [v.strip() for v in value if v.strip()]


def _kind(value: Any) -> str:
    """A short description of a wrong value for an error sentence (never the whole of a
    100 KB string)."""
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "…"
    return f"{type(value).__name__} {shown}"
