"""The jobs engine's errors, under :class:`memoir.errors.MemoirError`::

MemoirError
└── JobError                 a job could not be admitted or run
    ├── AdmissionUnavailable the configured admission store (Redis) cannot be reached:
    │                        new jobs fail closed (an HTTP server answers 503) while
    │                        every read keeps working from the database
    ├── Superseded           this worker's claim is gone (expired and retaken, or the
    │                        job cancelled): nothing it writes is kept
    └── JobAborted           the job's abort signal is set (worker stopping, or past
                             its abort interval): raised from its progress report
"""

from __future__ import annotations

from memoir.errors import MemoirError

__all__ = ["AdmissionUnavailable", "JobAborted", "JobError", "Superseded"]


class JobError(MemoirError):
    """A job could not be admitted or run."""


class AdmissionUnavailable(JobError):
    """The configured admission store cannot be reached; no new job is admitted."""


class Superseded(JobError):
    """This worker no longer holds the job's claim; its result is not persisted."""


class JobAborted(JobError):
    """Raised from a job's progress report once its abort signal is set (the worker is
    stopping, or the job ran past its abort interval): the handler stops there."""
