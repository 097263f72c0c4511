"""The metric objects and the cheap calls that record into them.

Every operation is one observation of ``memfold_operation_duration_seconds{operation, outcome}``
(``outcome`` is ``ok`` or ``error``); maintenance jobs observe ``memfold_maintenance_job_duration_seconds
{job, outcome}``; LLM tokens and cache lookups are counters. Label children are looked up once and
kept (``_child``), so recording costs a dictionary lookup and one ``observe`` (about a microsecond
in one process, a few with ``PROMETHEUS_MULTIPROC_DIR``: ``benchmarks/metrics_overhead.py``)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client import Counter, Histogram

# seconds; dense where searches and context builds fall (0.5-50 ms), sparse up to LLM calls and jobs
BUCKETS = (0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03,
           0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)

OPERATIONS = ("add", "search", "build_context", "embed", "llm")  # every one is recorded (also at 0)

OPERATION = Histogram("memfold_operation_duration_seconds",
                      "Latency of memfold operations (add, search, build_context, embed, llm) by outcome",
                      ["operation", "outcome"], buckets=BUCKETS)
JOB = Histogram("memfold_maintenance_job_duration_seconds", "Latency of maintenance jobs by outcome",
                ["job", "outcome"], buckets=BUCKETS)
TOKENS = Counter("memfold_llm_tokens", "LLM tokens used, as the endpoint reported them", ["kind"])
CACHE = Counter("memfold_cache_requests", "Hot cache lookups by kind (query, vector, hot) and result "
                "(hit, miss, skip: backend unavailable)", ["kind", "result"])
# the opt-in quality stage of searches ([rerank]): steps are ``rerank`` and ``rewrite``
STAGE_CALLS = Counter("memfold_rerank_calls", "Calls of the search quality stage ([rerank]) by step (rerank, rewrite), "
                      "backend (llm, endpoint) and outcome (ok; fallback: the incoming order or query was kept)",
                      ["step", "backend", "outcome"])
STAGE_FALLBACKS = Counter("memfold_rerank_fallbacks", "Quality stage calls whose answer was not used, by step and "
                          "reason (timeout, unreachable, http_error, malformed, out_of_range, duplicate)",
                          ["step", "reason"])
STAGE_SECONDS = Histogram("memfold_rerank_duration_seconds", "Latency of the quality stage's calls by step",
                          ["step"], buckets=BUCKETS)
STAGE_TOKENS = Counter("memfold_rerank_tokens", "Tokens the quality stage's endpoints reported, by step and kind",
                       ["step", "kind"])
TRIMS = Counter("memfold_memory_trims", "Times a server worker handed the C allocator's free memory back to the "
                "system once a burst of requests was over")

_children: dict[tuple[Any, ...], Any] = {}
_children_lock = threading.Lock()


def _child(metric: Any, *labels: str) -> Any:
    key = (id(metric), *labels)
    got = _children.get(key)
    if got is None:
        with _children_lock:
            got = _children.get(key)
            if got is None:
                got = _children[key] = metric.labels(*labels)
    return got


def observe(operation: str, seconds: float, ok: bool = True) -> None:
    _child(OPERATION, operation, "ok" if ok else "error").observe(seconds)


def observe_job(job: str, seconds: float, ok: bool = True) -> None:
    """A maintenance job's run (a job that reports a failure is an ``error`` outcome)."""
    _child(JOB, job, "ok" if ok else "error").observe(seconds)


@contextmanager
def timed(operation: str, *, job: bool = False) -> Iterator[None]:
    """Time the block as ``operation`` (a maintenance job's name with ``job=True``); an exception
    leaving the block is an ``error`` outcome (and propagates)."""
    metric = JOB if job else OPERATION
    start = time.perf_counter()
    outcome = "error"
    try:
        yield
        outcome = "ok"
    finally:
        _child(metric, operation, outcome).observe(time.perf_counter() - start)


F = TypeVar("F", bound=Callable[..., Any])


def measured(operation: str, *, job: bool = False) -> Callable[[F], F]:
    """Decorator: every call of the function is one observation of ``operation`` (of a maintenance
    job's name with ``job=True``)."""
    metric = JOB if job else OPERATION

    def wrap(fn: F) -> F:
        ok_child: list[Any] = []

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                _child(metric, operation, "error").observe(time.perf_counter() - start)
                raise
            if not ok_child:
                ok_child.append(_child(metric, operation, "ok"))
            ok_child[0].observe(time.perf_counter() - start)
            return result

        return inner  # type: ignore[return-value]
    return wrap


def record_tokens(usage: dict[str, int]) -> None:
    """An LLM answer's ``usage`` (``prompt_tokens``, ``completion_tokens``)."""
    for kind in ("prompt", "completion"):
        n = usage.get(f"{kind}_tokens")
        if n:
            _child(TOKENS, kind).inc(n)


def record_cache(kind: str, result: str) -> None:
    """One cache lookup: ``result`` is ``hit``, ``miss`` or ``skip`` (the backend is unavailable)."""
    _child(CACHE, kind, result).inc()


def record_stage(step: str, backend: str, seconds: float, reason: str = "", usage: dict[str, int] | None = None
                 ) -> None:
    """One call of the search quality stage: ``reason`` empty when its answer was used, else why the
    incoming order (or query) was kept; ``usage``: the tokens the endpoint reported."""
    _child(STAGE_CALLS, step, backend, "fallback" if reason else "ok").inc()
    if reason:
        _child(STAGE_FALLBACKS, step, reason).inc()
    _child(STAGE_SECONDS, step).observe(seconds)
    for kind in ("prompt", "completion", "total"):
        n = (usage or {}).get(f"{kind}_tokens")
        if n:
            _child(STAGE_TOKENS, step, kind).inc(n)
