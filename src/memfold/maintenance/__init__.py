"""Maintenance jobs beside the engine (seed 001 §1.6, seed 002, seed 003 ``compress_old_memories``):
tidy, old-memory compression, long-term compression, and the runner that runs what is due
(``memfold maintain``). See ``runner.py``."""

from .base import Job, JobContext, JobResult, MaintenanceRun
from .runner import job_names, register, run_due

__all__ = ["Job", "JobContext", "JobResult", "MaintenanceRun", "job_names", "register", "run_due"]
