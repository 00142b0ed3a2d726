"""The ``Memoir`` object: one home (settings + store + model), the library's front door.

Each operation delegates to the package that owns it; this module only wires them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoir.config import Settings
from memoir.store import Store, open_store

__all__ = ["Memoir"]


class Memoir:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store

    @classmethod
    def open(cls, settings: Settings | None = None, **overrides: Any) -> Memoir:
        if settings is None:
            settings = Settings.from_env(**overrides)
        settings.home.mkdir(parents=True, exist_ok=True)
        return cls(settings, open_store(settings))

    @classmethod
    def at(cls, home: str | Path, **overrides: Any) -> Memoir:
        return cls.open(Settings.from_env(home=Path(home), **overrides))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memoir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
