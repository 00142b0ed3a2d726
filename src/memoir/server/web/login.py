"""The page's side of a sign-in link (:mod:`memoir.server.auth`): ``POST /login`` trades
the link's one-time token for a page key, ``POST /logout`` ends a page key. They sit outside
``/api``, where every route needs a key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import BaseModel, ConfigDict, Field

from memoir.server.auth import PAGE_KEY_PREFIX, is_loopback, sign_in_links
from memoir.server.plumbing import ApiError
from memoir.server.routing import JsonRoute

__all__ = ["router"]

# the page's own calls, left out of the OpenAPI schema as the page's paths are
router = APIRouter(route_class=JsonRoute, include_in_schema=False)


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: str = Field(..., min_length=1, max_length=200, description="The link's `#login=`.")


@router.post("/login")
def login(body: LoginBody, request: Request) -> dict[str, Any]:
    """Trade a sign-in link's one-time token (what `memoir serve` prints when it listens on
    a loopback address) for a key of the page, valid until the server stops. The token
    works once, for 15 minutes, from this machine only."""
    links = sign_in_links(request)
    client = request.client.host if request.client is not None else ""
    if links is None or not is_loopback(client):
        raise ApiError(
            401,
            "unauthorized",
            "this server gives no sign-in links here; sign in with an API key "
            "(memoir users key local)",
        )
    redeemed = links.redeem(body.token)
    if redeemed is None:
        raise ApiError(
            401,
            "unauthorized",
            "this sign-in link was used already or has expired; restart memoir serve for a "
            "new one, or sign in with a key from `memoir users key local`",
        )
    user, key = redeemed
    return {"data": {"user": user, "key": key}}


@router.post("/logout")
def logout(request: Request) -> dict[str, Any]:
    """End the page key sent as `Authorization: Bearer KEY` (an API key is left alone:
    `memoir users revoke` ends those)."""
    scheme, key = get_authorization_scheme_param(request.headers.get("authorization"))
    links = sign_in_links(request)
    ended = (
        scheme.lower() == "bearer"
        and key.startswith(PAGE_KEY_PREFIX)
        and links is not None
        and links.forget(key)
    )
    return {"data": {"ended": bool(ended)}}
