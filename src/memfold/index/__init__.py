"""Derived index: the Index protocol (and the small protocols it is made of) and its backends."""

from .base import (
                   FileStates,
                   HistoryLog,
                   Index,
                   IndexAdmin,
                   IndexItem,
                   RecordStore,
                   RowSource,
                   SearchIndex,
                   StateStore,
                   open_index,
)

__all__ = ["FileStates", "HistoryLog", "Index", "IndexAdmin", "IndexItem", "RecordStore", "RowSource", "SearchIndex",
           "StateStore", "open_index"]
