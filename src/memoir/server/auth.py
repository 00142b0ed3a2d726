"""Who a request is. A missing, malformed, unknown or revoked key is 401; a route then sees
only its user's data (another user's session is 404, like one that does not exist).

Two kinds of key are accepted as ``Authorization: Bearer KEY``:

- an API key (``mk_…``, from ``memoir users add NAME`` / ``memoir users key NAME``): its
  hash is in the database, it lasts until revoked;
- a page key (``mp_…``) the page got for a sign-in link (:class:`SignInLinks`): held in
  this process's memory only, it lasts until the server stops.

A sign-in link is how the person who runs ``memoir serve`` on a loopback address reaches
their own (``local``) sessions on the page without making a key: ``memoir serve`` prints
``http://127.0.0.1:PORT/#login=TOKEN``. The token sits in the URL's fragment, which a
browser never sends, so it reaches no request line or access log; the page takes it out of
the address bar and history at once and trades it (``POST /login``) for a page key.
The token works once, for :data:`LINK_TTL_S` seconds, and only from a loopback client.

:class:`ReadsItsOwn`: the route class of the hot paths (the append, the summary poll),
which read the key (:func:`caller_of`) and the body themselves instead of through
FastAPI's dependency solver.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from fastapi import Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import ValidationError

from memoir import service
from memoir.app import Memoir
from memoir.server.plumbing import ApiError
from memoir.server.schemas import JsonRoute, read_json_body

__all__ = [
    "LINK_TTL_S",
    "PAGE_KEY_PREFIX",
    "Caller",
    "KeyUsers",
    "ReadsItsOwn",
    "SignInLinks",
    "caller",
    "caller_of",
    "current_user",
    "is_loopback",
    "key_gone",
    "link_url",
    "memoir_of",
    "sign_in_links",
    "signed_in",
    "user_to_check",
]

_bearer = HTTPBearer(auto_error=False, description="An API key from `memoir users add NAME`.")

LINK_TTL_S = 15 * 60
PAGE_KEY_PREFIX = "mp_"


def is_loopback(host: str) -> bool:
    """Is ``host`` (an address to listen on, or a client's address) this machine only?
    ``localhost`` and loopback IPs are; wildcard addresses (``0.0.0.0``, ``::``), other
    names and other addresses are not."""
    name = host.strip().lower().removeprefix("[").removesuffix("]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def link_url(host: str, port: int, token: str) -> str:
    """The sign-in link for a server listening on ``host``:``port``."""
    name = host.strip().removeprefix("[").removesuffix("]")
    if ":" in name:  # an IPv6 address goes in brackets
        name = f"[{name}]"
    return f"http://{name}:{port}/#login={token}"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class SignInLinks:
    """One-time sign-in tokens and the page keys they were traded for, in memory (by their
    hashes: a dump of the process's memory shows no usable token of the past)."""

    ttl_s: float = LINK_TTL_S
    clock: Callable[[], float] = time.monotonic
    _tokens: dict[str, tuple[str, float]] = field(default_factory=dict)  # hash → user, expiry
    _keys: dict[str, str] = field(default_factory=dict)  # hash → user
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(self, user: str) -> str:
        """A new one-time token signing in as ``user``."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[_digest(token)] = (user, self.clock() + self.ttl_s)
        return token

    def redeem(self, token: str) -> tuple[str, str] | None:
        """(user, a new page key) for a live token, which is spent; None for a token that
        is unknown, spent or expired."""
        with self._lock:
            found = self._tokens.pop(_digest(token), None)
            if found is None or self.clock() > found[1]:
                return None
            key = PAGE_KEY_PREFIX + secrets.token_urlsafe(32)
            self._keys[_digest(key)] = found[0]
            return found[0], key

    def user_for(self, key: str) -> str | None:
        with self._lock:
            return self._keys.get(_digest(key))

    def forget(self, key: str) -> bool:
        """End a page key (signing out); whether it was live."""
        with self._lock:
            return self._keys.pop(_digest(key), None) is not None


@dataclass
class KeyUsers:
    """The user of each API key this replica has looked up, by the key's hash, the newest
    ``limit`` kept. Which user a key belongs to never changes (a key is made for one user
    and is only ever revoked), so an entry needs no invalidation, and another replica's
    revocation cannot make one wrong. Whether the key is still live is not kept: a route
    that starts from an entry checks that in its own statement (:func:`user_to_check`)."""

    limit: int = 10_000
    _users: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key_hash: str) -> str | None:
        return self._users.get(key_hash)

    def learn(self, key_hash: str, user: str) -> None:
        with self._lock:
            if key_hash not in self._users and len(self._users) >= self.limit:
                del self._users[next(iter(self._users))]  # the oldest learnt
            self._users[key_hash] = user

    def forget(self, key_hash: str) -> None:
        with self._lock:
            self._users.pop(key_hash, None)


# The dependencies that do no I/O are ``async``: FastAPI runs a plain ``def`` dependency
# in its thread pool, a hop per request that costs more than their work. One that reads
# the database stays ``def``, off the event loop.


def _memoir(request: Request) -> Memoir:
    memoir: Memoir = request.app.state.memoir
    return memoir


async def memoir_of(request: Request) -> Memoir:
    return _memoir(request)


def sign_in_links(request: Request) -> SignInLinks | None:
    """The server's sign-in links (``memoir serve`` on loopback sets them), else None."""
    links = getattr(request.app.state, "sign_in_links", None)
    return links if isinstance(links, SignInLinks) else None


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request says it is, before the database is asked: the hash of its API key
    (checked by the route's own query), or the user of its page key (held in memory)."""

    key_hash: str | None = None
    user: str | None = None


async def caller(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
) -> Caller:
    """The request's key, not yet looked up (a route that reads its rows in one statement
    checks the key in the same statement, then calls :func:`signed_in`). A missing key,
    and a page key that has ended, are 401 here."""
    if credentials is None:
        return _caller(request, None, "")
    return _caller(request, credentials.scheme, credentials.credentials)


def caller_of(request: Request) -> Caller:
    """:func:`caller` for a route that reads its request itself (nothing to solve)."""
    scheme, key = get_authorization_scheme_param(request.headers.get("Authorization"))
    return _caller(request, scheme or None, key)


def _caller(request: Request, scheme: str | None, key: str) -> Caller:
    if scheme is None or not key or scheme.lower() != "bearer":
        raise ApiError(401, "unauthorized", "send an API key: Authorization: Bearer KEY")
    if key.startswith(PAGE_KEY_PREFIX):
        links = sign_in_links(request)
        user = links.user_for(key) if links is not None else None
        if user is None:
            raise ApiError(
                401,
                "unauthorized",
                "this sign-in has ended (signed out, or memoir serve restarted); open the "
                "new link memoir serve printed",
            )
        return Caller(user=user)
    return Caller(key_hash=service.key_hash(key))


def signed_in(request: Request, user: str | None) -> str:
    """``user`` as the request's user (named in its access log line); 401 for None (the
    key is unknown or revoked)."""
    if user is None:
        raise ApiError(401, "unauthorized", "unknown or revoked API key")
    request.state.user = user
    return user


def _key_users(request: Request) -> KeyUsers | None:
    known = getattr(request.app.state, "key_users", None)
    return known if isinstance(known, KeyUsers) else None


def current_user(request: Request, who: Caller = Depends(caller)) -> str:
    if who.key_hash is None:  # a page key's user, or no key at all
        return signed_in(request, who.user)
    user = service.user_for_key_hash(_memoir(request), who.key_hash)
    if user is not None and (known := _key_users(request)) is not None:
        known.learn(who.key_hash, user)
    return signed_in(request, user)


def user_to_check(request: Request, who: Caller) -> tuple[str, str | None]:
    """The request's user, and the hash of its API key when the route's own statement
    must check that the key is live: a key this replica has looked up before names its
    user without a query. Otherwise the key is looked up now (401 when it is unknown or
    revoked) and no hash is given. A route that finds nothing with a hash given asks
    :func:`key_gone` before it answers 404."""
    known = _key_users(request)
    if who.key_hash is not None and known is not None:
        user = known.get(who.key_hash)
        if user is not None:
            request.state.user = user
            return user, who.key_hash
    return current_user(request, who), None


def key_gone(request: Request, who: Caller) -> None:
    """After a route checked the key in its own statement and found nothing: 401 when
    the key is no longer live (its entry forgotten), else nothing (the 404 stands)."""
    if who.key_hash is None:
        return
    request.state.user = None
    known = _key_users(request)
    if known is not None:
        known.forget(who.key_hash)
    current_user(request, who)


# a hot path's route ---------------------------------------------------------------------


class ReadsItsOwn(JsonRoute):
    """A hot path's route: FastAPI documents the endpoint from its signature, but a
    request skips its dependency and body machinery: the same checks in the same order
    (the body's JSON: 415/422; the key: 401; the body's fields: 422), answered the same
    way, then the endpoint awaited. A route without a body reads its query parameters
    FastAPI's own way when a request has any, else takes their defaults."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        endpoint, field = self.endpoint, self.body_field
        if field is None:
            standard = super().get_route_handler()
            defaults = {p.name: p.field_info.default for p in self.dependant.query_params}

            async def plain(request: Request) -> Response:
                if request.scope["query_string"]:
                    return await standard(request)
                who = caller_of(request)
                answer = await endpoint(**request.path_params, **defaults, request=request, who=who)
                return JSONResponse(answer)

            return plain
        model: Any = field.field_info.annotation

        async def handler(request: Request) -> Response:
            value = await read_json_body(request)
            who = caller_of(request)
            try:
                body = model.model_validate(value, from_attributes=True)  # as FastAPI does
            except ValidationError as exc:
                problems: list[Any] = [_NO_BODY]
                if value is not None:
                    problems = list(exc.errors(include_url=False))
                where = [{**e, "loc": ("body", *e["loc"])} for e in problems]
                raise RequestValidationError(where) from None
            answer = await endpoint(**request.path_params, body=body, request=request, who=who)
            return JSONResponse(answer)

        return handler


_NO_BODY: dict[str, Any] = {"type": "missing", "loc": (), "msg": "Field required", "input": None}
