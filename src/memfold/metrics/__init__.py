"""Live metrics (``prometheus_client``): operations record their latency and outcome where they
happen (``registry.measured``, ``registry.timed``); ``exposition`` renders them in the Prometheus
text format for ``GET /metrics``; ``summary`` gives the percentiles ``memfold stats --metrics`` shows.

With ``PROMETHEUS_MULTIPROC_DIR`` set (before memfold is imported), every process writes its values
to that folder and the exposition adds them up: several server workers report as one."""

from .exposition import exposition, prepare_multiprocess, summary
from .registry import measured, observe_job, record_cache, record_stage, record_tokens, timed

__all__ = ["exposition", "prepare_multiprocess", "summary", "measured", "timed", "record_cache", "record_tokens", "observe_job",
           "record_stage"]
