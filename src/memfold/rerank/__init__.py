"""The opt-in quality stage of the read path (``[rerank]``): re-order a search's top candidates with
an LLM (listwise, one call) or a ``/rerank`` endpoint, and optionally split multi-part and time
questions into sub-queries whose results are fused. Off by default; every failure, malformed answer
or timeout keeps the incoming order (or query), counted in the metrics by reason."""

from .stage import QualityStage, make_stage

__all__ = ["QualityStage", "make_stage"]
