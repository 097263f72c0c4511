"""memfold: long-term memory for LLM agents — Markdown files as the source of truth,
hybrid retrieval in Chinese and English, offline by default."""

from .client import AsyncClient, Client
from .config import Settings, load_settings
from .errors import (
                     ConfigError,
                     InvalidInputError,
                     MemfoldError,
                     MemoryIndexError,
                     NotFoundError,
                     ProviderError,
                     ReadOnlyWorkspaceError,
                     SecretRefusedError,
                     SessionClosedError,
)
from .facade.async_memory import AsyncMemory
from .facade.memory import Memory
from .models import AddResult, DailyNote, HistoryEntry, MemoryRecord, MemoryType, Message, Retrieval, SearchHit
from .policy import Policy

__version__ = "0.1.0"
__all__ = [
    "Memory", "AsyncMemory", "Client", "AsyncClient", "Settings", "load_settings", "Policy",
    "MemoryRecord", "MemoryType", "SearchHit", "Retrieval", "DailyNote", "HistoryEntry", "Message", "AddResult",
    "MemfoldError", "ConfigError", "InvalidInputError", "MemoryIndexError", "NotFoundError", "ProviderError",
    "SecretRefusedError", "ReadOnlyWorkspaceError", "SessionClosedError",
]
