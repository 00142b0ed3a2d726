"""The web page ``memoir serve`` serves at ``/``: a small single-page application written
by hand (ES modules, one stylesheet, no build step, nothing loaded from elsewhere), over the
same ``/api`` routes any client uses, with the caller's API key kept in the browser's
session storage.

:mod:`memoir.server.web.pages` is the router: the page's paths answer ``index.html`` (the
application routes in the browser) and ``/static/…`` answers the shipped assets in
``static/`` (package data), each with a strict Content-Security-Policy.
"""

from memoir.server.web.pages import router

__all__ = ["router"]
