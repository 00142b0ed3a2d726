"""Users of the HTTP service and their API keys: a key is shown once, when it is made;
only its SHA-256 hash is stored, so a stolen database holds no usable key.

:data:`LOCAL` owns every session synced from this machine. It is reserved — :meth:`UsersPart.add`
refuses the name, so nobody creates it by accident as a user of their own — but
:meth:`UsersPart.new_key` makes it a key, so its owner can read those sessions over the API."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from memoir.errors import ConfigError, NotFound
from memoir.store.codec import from_iso
from memoir.store.db import Part

__all__ = ["KEY_PREFIX", "LOCAL", "UserInfo", "UsersPart", "hash_key"]

KEY_PREFIX = "mk_"
LOCAL = "local"  # the owner of every session synced from this machine
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}")


def hash_key(key: str) -> str:
    """The stored form of an API key: its SHA-256, hex."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    created_at: datetime | None
    keys: int  # keys not revoked


class UsersPart(Part):
    def add(self, name: str, *, label: str = "") -> str:
        """Create user ``name`` (an existing one is kept) and a new API key for it; the
        key is returned once and never stored."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"a user name is 1-100 letters, digits or _ . @ - (starting with a letter "
                f"or digit), not {name!r}"
            )
        if name == LOCAL:
            raise ConfigError(
                "'local' is the owner of synced sessions; choose another name "
                "(`memoir users key local` makes a key for it)"
            )
        return self._key(name, label, create=True)

    def new_key(self, name: str, *, label: str = "") -> str:
        """A new API key for an existing user, or for :data:`LOCAL` (whose row is made on
        its first key); returned once and never stored. ``NotFound`` for another name."""
        return self._key(name, label, create=name == LOCAL)

    def rotate(self, name: str, *, label: str = "") -> str:
        """A new API key for an existing user (or :data:`LOCAL`), every earlier key of it
        revoked in the same transaction: from the next request on, on every process that
        reads this store, only the new key works. Returned once and never stored."""
        return self._key(name, label, create=name == LOCAL, revoke=True)

    def _key(self, name: str, label: str, *, create: bool, revoke: bool = False) -> str:
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        with self._db.tx() as tx:
            if create:
                tx.run(
                    "INSERT INTO users (name, created_at) VALUES (?, ?) "
                    "ON CONFLICT (name) DO NOTHING",
                    (name, tx.time(now)),
                )
            elif not tx.run("SELECT name FROM users WHERE name = ?", (name,)):
                raise NotFound(f"no user {name!r}: memoir users add {name}")
            if revoke:
                tx.run(
                    "UPDATE api_keys SET revoked_at = ? WHERE user_name = ? AND revoked_at IS NULL",
                    (tx.time(now), name),
                )
            tx.run(
                "INSERT INTO api_keys (key_hash, user_name, label, created_at) VALUES (?, ?, ?, ?)",
                (hash_key(key), name, label, tx.time(now)),
            )
        return key

    def user_for(self, key: str) -> str | None:
        """The user a key belongs to, None when it is unknown or revoked."""
        return self.user_for_hash(hash_key(key)) if key else None

    def user_for_hash(self, key_hash: str) -> str | None:
        """The user whose live key has this :func:`hash_key`, None when none has."""
        rows = self._db.rows(
            "SELECT k.user_name FROM api_keys k JOIN users u ON u.name = k.user_name "
            "WHERE k.key_hash = ? AND k.revoked_at IS NULL",
            (key_hash,),
        )
        return str(rows[0][0]) if rows else None

    def list(self) -> list[UserInfo]:
        rows = self._db.rows(
            "SELECT u.name, u.created_at, (SELECT count(*) FROM api_keys k "
            "WHERE k.user_name = u.name AND k.revoked_at IS NULL) FROM users u ORDER BY u.name"
        )
        return [UserInfo(str(r[0]), from_iso(r[1]), int(r[2])) for r in rows]

    def revoke(self, name: str) -> int:
        """Revoke every key of ``name``; returns how many were live."""
        with self._db.tx() as tx:
            if not tx.run("SELECT name FROM users WHERE name = ?", (name,)):
                raise NotFound(f"no user {name!r}")
            rows = tx.run(
                "UPDATE api_keys SET revoked_at = ? WHERE user_name = ? AND revoked_at IS NULL "
                "RETURNING key_hash",
                (tx.time(datetime.now(UTC)), name),
            )
        return len(rows)
