"""The web page ``memoir serve`` serves at ``/``: a small single-page application written
by hand (ES modules, one stylesheet, no build step, nothing loaded from elsewhere), over the
same ``/api`` routes any client uses, with the caller's key kept in the browser's session
storage.

:mod:`memoir.server.web.pages` serves the page: its paths answer ``index.html`` (the
application routes in the browser) and ``/static/…`` answers the shipped assets in
``static/`` (package data), each with a strict Content-Security-Policy.
:mod:`memoir.server.web.login` trades a sign-in link's one-time token for a page key.
"""

from fastapi import APIRouter

from memoir.server.web import login, pages

router = APIRouter()
router.include_router(pages.router)
router.include_router(login.router)

__all__ = ["router"]
