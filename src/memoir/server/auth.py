"""Bearer keys → users. A missing, malformed, unknown or revoked key is 401; a route then
sees only its user's data (another user's session is 404, like one that does not exist)."""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memoir.app import Memoir
from memoir.server.errors import ApiError

__all__ = ["current_user", "memoir_of"]

_bearer = HTTPBearer(auto_error=False, description="An API key from `memoir users add NAME`.")


def memoir_of(request: Request) -> Memoir:
    memoir: Memoir = request.app.state.memoir
    return memoir


def current_user(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
) -> str:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ApiError(401, "unauthorized", "send an API key: Authorization: Bearer KEY")
    user = memoir_of(request).store.users.user_for(credentials.credentials)
    if user is None:
        raise ApiError(401, "unauthorized", "unknown or revoked API key")
    request.state.user = user
    return user
