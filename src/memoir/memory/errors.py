"""Errors of long-term memory extraction, under Memoir's one tree (:mod:`memoir.errors`)::

    memoir.errors.MemoirError
    └── ExtractionError          a memory extraction could not be carried out
        └── MalformedProposal    the model's answer is not a proposal: bad JSON, a wrong
                                 shape, a field of the wrong type or out of its bounds.
                                 A failure class of its own for retry
                                 (``failure_class`` → ``"malformed_proposal"``).

Never named ``MemoryError`` (Python's built-in stays unshadowed).
"""

from __future__ import annotations

from memoir.errors import MemoirError

__all__ = ["ExtractionError", "MalformedProposal"]


class ExtractionError(MemoirError):
    """A memory extraction could not be carried out."""


class MalformedProposal(ExtractionError):
    """The model answered something that is not a valid proposal. ``where`` names the
    offending field as a path (``items[2].quotes[0].ordinal``), empty for the whole answer."""

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.detail = message
