"""Derived index: the Index protocol and its backends."""

from .base import Index, IndexItem, open_index

__all__ = ["Index", "IndexItem", "open_index"]
