"""Settings: the one place environment variables are read.

``Settings.from_env()`` reads the environment once at the edge (CLI, server, tests) and
everything else receives typed values. Each setting remembers where it came from so
``memoir config`` can show it. Hours become milliseconds at exactly one place
(:func:`hours_to_ms`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeGuard

from memoir.errors import ConfigError
from memoir.home_files import private_dir

__all__ = [
    "MEMORY_SYNC_OFF",
    "MS_PER_HOUR",
    "Settings",
    "as_paths",
    "check_job_intervals",
    "hours_to_ms",
    "mask_url",
    "whole_number",
]

log = logging.getLogger(__name__)

MS_PER_HOUR = 3_600_000
# the file in the home `memoir memories off` (no target) writes: no memory from sync
MEMORY_SYNC_OFF = "memory-from-sync.off"


def hours_to_ms(hours: float) -> int:
    """The single conversion from configured hours to milliseconds."""
    return round(hours * MS_PER_HOUR)


def _default_home() -> Path:
    return Path.home() / ".memoir"


def opencode_data_dir() -> Path:
    """OpenCode's data folder: ``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``."""
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "opencode"


def _default_sources() -> tuple[Path, ...]:
    """The agents' own places, those that exist: Claude Code's projects, Codex's sessions,
    Gemini CLI's ``tmp`` (its chats) and OpenCode's data folder (its database)."""
    home = Path.home()
    folders = (
        home / ".claude" / "projects",
        home / ".codex" / "sessions",
        home / ".gemini" / "tmp",
    )
    found = [p for p in folders if p.is_dir()]
    opencode = opencode_data_dir()
    if (opencode / "opencode.db").is_file() or (opencode / "storage" / "session").is_dir():
        found.append(opencode)
    return tuple(found)


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=_default_home)
    database_url: str | None = None  # None → SQLite file under home
    # PostgreSQL: connections a process pools, how long a call waits for one, and how long
    # one statement may run (0: no limit) before the server cancels it
    pg_pool_size: int = 8
    pg_pool_timeout_s: float = 10.0
    pg_statement_timeout_s: float = 30.0
    sources: tuple[Path, ...] = ()
    exclude_projects: tuple[str, ...] = ()
    # model
    llm: str = "offline"
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_fallback: str | None = None
    llm_timeout_s: float = 120.0
    llm_retry_budget: int = 3
    redact: str = "on"  # "on": secrets replaced in every request to a non-offline model
    # summaries
    summary_quiescence_hours: float = 1.0
    summary_error_retry_hours: float = 1.0
    summary_max_attempts: int = 5
    summary_limit: int = 10
    summary_store: str = "files"  # "files" (archive, episodic-memory compatible) | "database"
    # memory from sync: `memoir sync` extracts the quiet sessions' new ranges, this many a run
    memory_from_sync: bool = True
    memory_limit: int = 10
    # episodes
    episode_concurrency: int = 4
    episode_attempt_budget: int = 32
    episode_tokens: int = 10_000  # input tokens per episode
    episode_max_full_tokens: int = 200_000  # full-regeneration guard (else incremental)
    # compaction: the threshold (a share of the window) and the verbatim tail kept after a
    # compaction (a share of that threshold, below 0.75: the summary may take a quarter)
    compact_threshold_ratio: float = 0.75
    compact_tail_ratio: float = 0.5
    # search
    embedder: str = "auto"  # "auto" | "none" | "minilm" | "hash"
    # offline summaries' sentences: "lexical" (the default: ROUGE-L 0.206 vs 0.192 on LoCoMo
    # dev, docs/benchmarks.md) or "embedder" (centrality of the embedder's vectors)
    summary_sentences: str = "lexical"
    # sync and append embed what they stored (memoir.search.embed_written)
    embed_on_write: bool = True
    # jobs: admission across replicas (None: a bounded in-process store), worker intervals
    redis_url: str | None = None
    job_heartbeat_s: float = 10.0
    job_abort_s: float = 600.0
    job_claim_s: float = 900.0
    job_abandon_s: float = 930.0
    sync_disabled: bool = False
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        """Settings made in code (``Settings(...)``, ``from_env`` keyword overrides,
        ``Memoir.at``) are held to what the environment's values are: paths absolute (a
        thread that opens the database after an ``os.chdir`` finds the same file), a
        string of sources one folder (not its characters), numbers in range. A bad value
        is a ``ConfigError`` naming the setting."""
        home = self.home
        if not isinstance(home, (str, os.PathLike)):
            raise ConfigError(f"home must be a path, not {home!r}")
        object.__setattr__(self, "home", Path(home).expanduser().absolute())
        object.__setattr__(self, "sources", as_paths(self.sources, "sources"))
        if isinstance(self.exclude_projects, str) or not all(
            isinstance(p, str) for p in self.exclude_projects
        ):
            raise ConfigError(
                f"exclude_projects must be a tuple of project names, not {self.exclude_projects!r}"
            )
        object.__setattr__(self, "exclude_projects", tuple(self.exclude_projects))
        if self.summary_store not in ("files", "database"):
            raise ConfigError(
                f"summary_store must be 'files' or 'database', not {self.summary_store!r}"
            )
        for name in map(_setting, _WHOLE_NUMBERS):
            whole_number(name, getattr(self, name), 0 if name in _ZERO_OK else 1)
        for name in _NUMBERS:
            value = getattr(self, name)
            if not _number(value) or not 0 <= value < float("inf"):
                raise ConfigError(f"{name} must be a number of 0 or more, not {value!r}")
        wait = self.pg_pool_timeout_s
        if not _number(wait) or not 0 < wait < 1e9:
            raise ConfigError(f"pg_pool_timeout_s must be seconds above 0, not {wait!r}")
        ratio = self.compact_threshold_ratio
        if not _number(ratio) or not 0.0 < ratio <= 1.0:
            raise ConfigError(f"compact_threshold_ratio must be in (0, 1], not {ratio!r}")
        tail = self.compact_tail_ratio
        if not _number(tail) or not 0.0 <= tail < 0.75:
            raise ConfigError(f"compact_tail_ratio must be in [0, 0.75), not {tail!r}")
        if not isinstance(self.memory_from_sync, bool):
            raise ConfigError(
                f"memory_from_sync must be True or False, not {self.memory_from_sync!r}"
            )
        if self.redact not in ("on", "off"):
            raise ConfigError(f"MEMOIR_REDACT must be 'on' or 'off', not {self.redact!r}")
        check_job_intervals(
            self.job_heartbeat_s, self.job_abort_s, self.job_claim_s, self.job_abandon_s
        )

    def ensure_home(self) -> Path:
        """Create the home folder if needed; a home that cannot be one (a file, no
        permission) is a ``ConfigError`` naming MEMOIR_HOME."""
        try:
            private_dir(self.home)
        except FileExistsError:
            raise ConfigError(f"MEMOIR_HOME {self.home} is a file, not a folder") from None
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConfigError(f"MEMOIR_HOME {self.home} cannot be created: {reason}") from None
        return self.home

    @property
    def archive_dir(self) -> Path:
        return self.home / "archive"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def sqlite_path(self) -> Path:
        return self.home / "memoir.db"

    @property
    def memory_sync_switch(self) -> Path:
        """The file that, present, switches memory from sync off (`memoir memories off`)."""
        return self.home / MEMORY_SYNC_OFF

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Read settings from ``env`` (default ``os.environ``); keyword overrides win."""
        env = os.environ if env is None else env
        origins: dict[str, str] = {}
        values: dict[str, object] = {}

        def take(name: str, *keys: str) -> str | None:
            for key in keys:
                raw = env.get(key)
                if raw is not None and raw.strip() != "":
                    origins[name] = f"env {key}"
                    return raw.strip()
            return None

        if (v := take("home", "MEMOIR_HOME")) is not None:
            values["home"] = Path(v).expanduser()
        if (v := take("sources", "MEMOIR_SOURCES")) is not None:
            values["sources"] = tuple(Path(p).expanduser() for p in v.split(os.pathsep) if p)
        else:
            values["sources"] = _default_sources()
            origins["sources"] = (
                "default (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp, "
                "~/.local/share/opencode when present)"
            )
        if (v := take("exclude_projects", "MEMOIR_EXCLUDE_PROJECTS")) is not None:
            values["exclude_projects"] = tuple(p.strip() for p in v.split(",") if p.strip())
        for key in _STRINGS:
            if (v := take(name := _setting(key), key)) is not None:
                values[name] = v
        if (v := take("llm_api_key", "MEMOIR_LLM_API_KEY")) is not None:
            values["llm_api_key"] = v
        else:
            spec = str(values.get("llm", "offline"))
            fallback_key = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(
                spec.split(":", 1)[0]
            )
            if fallback_key and (v := take("llm_api_key", fallback_key)) is not None:
                values["llm_api_key"] = v
        if (v := take("redact", "MEMOIR_REDACT")) is not None:
            values["redact"] = v.lower()
        for key, choices in _CHOICES.items():
            if (v := take(name := _setting(key), key)) is not None:
                if v not in choices:
                    raise ConfigError(f"{key} must be {' or '.join(map(repr, choices))}, not {v!r}")
                values[name] = v
        if (v := take("memory_from_sync", "MEMOIR_MEMORY_FROM_SYNC")) is not None:
            if (on := _switch(v)) is not None:
                values["memory_from_sync"] = on
            else:
                _warn_once(f"MEMOIR_MEMORY_FROM_SYNC={v!r} is not on or off; ignored")
                origins["memory_from_sync"] = f"default (MEMOIR_MEMORY_FROM_SYNC={v!r} ignored)"
        if (v := take("embed_on_write", "MEMOIR_EMBED_ON_WRITE")) is not None:
            values["embed_on_write"] = v.lower() not in ("0", "false", "no", "off")
        values["sync_disabled"] = _switch(env.get("MEMOIR_SYNC_DISABLED") or "") is True
        if values["sync_disabled"]:
            origins["sync_disabled"] = "env MEMOIR_SYNC_DISABLED"

        defaults: dict[str, Any] = {f.name: f.default for f in fields(cls)}
        for key in (*_FLOATS, *_WHOLE_NUMBERS):
            name = _setting(key)  # the episodic-memory plugin's names too
            legacy = (key.replace("MEMOIR_", "EPISODIC_MEMORY_"),) if name in _EPISODIC else ()
            if (v := take(name, key, *legacy)) is not None:
                values[name] = _env_number(v, defaults[name], name, origins)
        if values.get("pg_pool_timeout_s") == 0:  # a wait of 0 would refuse every call
            _warn_once("MEMOIR_PG_POOL_TIMEOUT_S=0 is not above 0; using 10")
            values["pg_pool_timeout_s"] = 10.0
            origins["pg_pool_timeout_s"] = "default (MEMOIR_PG_POOL_TIMEOUT_S=0 ignored)"
        if "compact_threshold_ratio" in values:
            ratio = float(values["compact_threshold_ratio"])  # type: ignore[arg-type]
            if not 0.0 < ratio <= 1.0:
                _warn_once(f"MEMOIR_COMPACT_THRESHOLD_RATIO={ratio} is outside (0, 1]; using 0.75")
                values["compact_threshold_ratio"] = 0.75
                origins["compact_threshold_ratio"] = "default (invalid value ignored)"
        if "compact_tail_ratio" in values:
            tail = float(values["compact_tail_ratio"])  # type: ignore[arg-type]
            if not 0.0 <= tail < 0.75:
                _warn_once(f"MEMOIR_COMPACT_TAIL_RATIO={tail} is outside [0, 0.75); using 0.5")
                values["compact_tail_ratio"] = 0.5
                origins["compact_tail_ratio"] = "default (invalid value ignored)"

        values.update(overrides)
        for name in overrides:
            origins[name] = "argument"
        if "memory_from_sync" not in values:  # unset: `memoir memories off` may have stored it
            where = Path(str(values.get("home") or _default_home())).expanduser()
            if (where / MEMORY_SYNC_OFF).exists():
                values["memory_from_sync"] = False
                origins["memory_from_sync"] = "stored by `memoir memories off`"
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ConfigError(f"unknown settings: {', '.join(sorted(unknown))}")
        for f in fields(cls):
            origins.setdefault(f.name, "default")
        values["origins"] = origins
        return cls(**values)  # type: ignore[arg-type]

    def shown(self, name: str) -> object:
        """The value of setting ``name`` as JSON shows it: secrets masked, paths as text,
        lists as lists, unset as None."""
        value = getattr(self, name)
        if name == "llm_api_key" and value:
            return value[:3] + "…" + value[-2:] if len(value) > 8 else "***"
        if name in ("database_url", "redis_url") and value:
            return mask_url(str(value))
        if isinstance(value, tuple):
            return [str(v) for v in value]
        if isinstance(value, Path):
            return str(value)
        return value

    def describe(self) -> list[tuple[str, str, str]]:
        """(name, effective value, where it came from) for ``memoir config``; keys masked."""
        rows = []
        for f in fields(self):
            if f.name == "origins":
                continue
            value = self.shown(f.name)
            if isinstance(value, list):
                text = os.pathsep.join(value) or "(none)"
            else:
                text = "(unset)" if value is None else str(value)
            origin = self.origins.get(f.name, "default")
            if f.name == "redis_url" and not self.redis_url:
                origin += (
                    " — job admission is in-process (one active job per session on this "
                    "instance only)"
                )
            rows.append((f.name, text, origin))
        return rows


# the variables read as they are; as one of their choices; as a number of 0 or more; as a
# whole number (of 0 or more for _ZERO_OK, else 1 or more). A bad number warns and the
# default is used. Each sets the setting of its name less MEMOIR_, lower-cased.
_STRINGS = (
    "MEMOIR_DATABASE_URL",
    "MEMOIR_LLM",
    "MEMOIR_LLM_BASE_URL",
    "MEMOIR_LLM_FALLBACK",
    "MEMOIR_REDIS_URL",
    "MEMOIR_EMBEDDER",
)
_CHOICES = {
    "MEMOIR_SUMMARY_STORE": ("files", "database"),
    "MEMOIR_SUMMARY_SENTENCES": ("lexical", "embedder"),
}
_FLOATS = (
    "MEMOIR_SUMMARY_QUIESCENCE_HOURS",
    "MEMOIR_SUMMARY_ERROR_RETRY_HOURS",
    "MEMOIR_COMPACT_THRESHOLD_RATIO",
    "MEMOIR_COMPACT_TAIL_RATIO",
    "MEMOIR_LLM_TIMEOUT_S",
    "MEMOIR_JOB_HEARTBEAT_S",
    "MEMOIR_JOB_ABORT_S",
    "MEMOIR_JOB_CLAIM_S",
    "MEMOIR_JOB_ABANDON_S",
    "MEMOIR_PG_POOL_TIMEOUT_S",
    "MEMOIR_PG_STATEMENT_TIMEOUT_S",
)
_WHOLE_NUMBERS = (
    "MEMOIR_LLM_RETRY_BUDGET",
    "MEMOIR_SUMMARY_MAX_ATTEMPTS",
    "MEMOIR_SUMMARY_LIMIT",
    "MEMOIR_MEMORY_LIMIT",
    "MEMOIR_EPISODE_CONCURRENCY",
    "MEMOIR_EPISODE_ATTEMPT_BUDGET",
    "MEMOIR_EPISODE_TOKENS",
    "MEMOIR_EPISODE_MAX_FULL_TOKENS",
    "MEMOIR_PG_POOL_SIZE",
)
# also read from EPISODIC_MEMORY_<NAME> (the episodic-memory plugin's variables)
_EPISODIC = ("summary_quiescence_hours", "summary_error_retry_hours", "summary_max_attempts")
_ZERO_OK = ("summary_limit", "memory_limit")
_NUMBERS = (
    "llm_timeout_s",
    "summary_quiescence_hours",
    "summary_error_retry_hours",
    "pg_statement_timeout_s",
)


def check_job_intervals(
    heartbeat_s: float, abort_s: float, claim_s: float, abandon_s: float
) -> None:
    """ConfigError unless every job interval is a number of seconds above 0 with
    heartbeat < abandon and abort <= claim < abandon (a claim expires before its job is
    abandoned, and a worker is told to stop before its claim expires)."""
    for name, value in (
        ("job_heartbeat_s", heartbeat_s),
        ("job_abort_s", abort_s),
        ("job_claim_s", claim_s),
        ("job_abandon_s", abandon_s),
    ):
        if not _number(value) or not 0 < value < float("inf"):
            raise ConfigError(f"{name} must be a number of seconds above 0, not {value!r}")
    if not heartbeat_s < abandon_s:
        raise ConfigError(
            f"job_heartbeat_s ({heartbeat_s}) must be below job_abandon_s ({abandon_s})"
        )
    if not abort_s <= claim_s < abandon_s:
        raise ConfigError(
            f"job intervals must run job_abort_s ({abort_s}) <= job_claim_s ({claim_s}) < "
            f"job_abandon_s ({abandon_s}): a claim expires before its job is abandoned"
        )


def whole_number(name: str, value: object, least: int) -> int:
    """``value`` when it is an int (not a bool) of at least ``least``, else a
    ``ConfigError`` naming ``name``: the one check for counts given in code."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return value


def as_paths(value: object, name: str = "sources") -> tuple[Path, ...]:
    """Folders given as one path (``str`` or ``PathLike``) or an iterable of them, as
    absolute paths (``~`` expanded). A string is one folder, never its characters."""
    items: list[object]
    if isinstance(value, (str, os.PathLike)):
        items = [value]
    elif isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
        items = list(value)
    else:
        raise ConfigError(f"{name} must be a path or a list of paths, not {value!r}")
    paths = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)) or str(item) == "":
            raise ConfigError(f"{name} must be a path or a list of paths, not {value!r}")
        paths.append(Path(item).expanduser().absolute())
    return tuple(paths)


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _switch(raw: str) -> bool | None:
    """An on/off setting: 1/true/yes/on or 0/false/no/off; None for anything else."""
    word = raw.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    return None


def _setting(key: str) -> str:
    return key.removeprefix("MEMOIR_").lower()


def _env_number(raw: str, default: float, name: str, origins: dict[str, str]) -> float:
    """``raw`` (from the variable ``origins[name]`` names) as a number like ``default``: a
    whole number of at least 1 (0 for _ZERO_OK) for an int, else one of 0 or more; else a
    warning, the default, and its origin saying why."""
    key = origins[name].removeprefix("env ")
    whole = isinstance(default, int)
    least = 1 if whole and name not in _ZERO_OK else 0
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        value = least - 1
    if value != value or value < least or value == float("inf"):  # NaN, too small, inf
        what = "a non-negative number"
        if whole:
            what = "a positive integer" if least == 1 else f"an integer of at least {least}"
        _warn_once(f"{key}={raw!r} is not {what}; using the default {default}")
        origins[name] = f"default ({key}={raw!r} ignored)"
        return default
    return value


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Log a settings warning once per process (a command reads its settings more than
    once; the user needs to read it once)."""
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def mask_url(url: str) -> str:
    """``url`` with its password shown as ``***``: the one before ``@`` and a
    ``password=`` in the query string (libpq takes both)."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        if ":" in creds:
            url = f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return _QUERY_PASSWORD.sub(r"\1***", url)


_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)
