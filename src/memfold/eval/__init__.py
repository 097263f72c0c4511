"""Retrieval quality and speed measurements: ``memfold eval`` (LoCoMo, MADial-Bench evidence
recall) and ``memfold bench`` (synthetic scale test). Pure measurement: nothing here changes
how memfold stores or ranks memories."""

from .metrics import QuestionResult, normalise_evidence, summarise

__all__ = ["QuestionResult", "normalise_evidence", "summarise"]
