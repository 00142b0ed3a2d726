"""The name Memoir is published under, and the one way an error tells how to install an extra.

The import name and the command are ``memoir``; the distribution is not: ``memoir`` on the
package index is an unrelated 2020 package (and ``memoirs``, ``memoir-ai``, ``memoire-ai``
are other memory projects). Every install hint is made here, so a hint can never point a
user at someone else's package (``tests/test_distribution.py`` greps ``src/`` for any other).
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "install_hint"]

DISTRIBUTION = "memoir-engine"


def install_hint(extra: str | None = None) -> str:
    """``pip install 'memoir-engine[extra]'`` (or the base package): what a user types."""
    if extra is None:
        return f"pip install {DISTRIBUTION}"
    return f"pip install '{DISTRIBUTION}[{extra}]'"
