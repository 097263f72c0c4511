"""Embedding and LLM providers, chosen by config in one registry with lazy imports."""

from .embedder import Embedder, make_embedder

__all__ = ["Embedder", "make_embedder"]
