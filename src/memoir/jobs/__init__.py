"""Background jobs: generic over what a job does (a handler per kind, supplied by the
caller — ``app.py`` wires kind ``summary`` to the summaries engine).

- :mod:`values` — :class:`Job` (what an API shows), :class:`JobTiming` (the worker
  intervals), the pure rules (abandoned? claim expired? what ends a run) and the errors;
- :mod:`service` — :class:`JobService`: request (a duplicate is the same job), get,
  latest, list, cancel; admission, one active job per (kind, user, session): Redis
  compare-and-set across replicas, or a bounded in-process LRU;
- :mod:`worker` — :class:`Worker`: claim, heartbeat, abort, fenced finish, resumption of
  abandoned jobs.

Jobs are rows of the store's ``jobs`` part; the engine knows nothing of summaries.
"""

from memoir.jobs.service import Admission, JobService, LocalAdmission, RedisAdmission
from memoir.jobs.values import (
    ABANDONED,
    AdmissionUnavailable,
    Job,
    JobAborted,
    JobError,
    JobState,
    JobTiming,
    Superseded,
)
from memoir.jobs.worker import JobHandler, JobProgress, Worker

__all__ = [
    "ABANDONED",
    "Admission",
    "AdmissionUnavailable",
    "Job",
    "JobAborted",
    "JobError",
    "JobHandler",
    "JobProgress",
    "JobService",
    "JobState",
    "JobTiming",
    "LocalAdmission",
    "RedisAdmission",
    "Superseded",
    "Worker",
]
