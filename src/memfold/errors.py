"""The memfold error tree. Every error the library raises derives from MemfoldError."""

from __future__ import annotations


class MemfoldError(Exception):
    """Root of all memfold errors."""


class ConfigError(MemfoldError):
    """A setting or policy value is unknown or out of range; the message names the key."""


class NotFoundError(MemfoldError):
    """A memory, session or file that was asked for does not exist."""


class SessionClosedError(MemfoldError):
    """A message was added to a session that has ended (``Session.reopen()`` or a new session id)."""


class SecretRefusedError(MemfoldError):
    """Content was refused because it contains a secret (password, key, card or ID number)."""


class InvalidInputError(MemfoldError):
    """Input that cannot be stored or parsed (bad type, malformed file, path outside the workspace)."""


class IndexError_(MemfoldError):
    """The derived index is unusable (wrong embedder, unreachable server, corrupt database)."""


class ReadOnlyWorkspaceError(MemfoldError):
    """A write was asked of a workspace whose folder or index the process may not write."""


class ProviderError(MemfoldError):
    """An embedding or LLM provider failed."""


class ProviderTimeout(ProviderError):
    """A provider did not answer in time."""


class ProviderResponseError(ProviderError):
    """A provider answered with an error status or a body that cannot be used."""


# a public, non-shadowing alias
MemoryIndexError = IndexError_


class EmbedderChangedError(IndexError_):
    """The index was built by another embedder than the configured one (``memfold reindex`` rebuilds it)."""

__all__ = [
    "MemfoldError",
    "ConfigError",
    "NotFoundError",
    "SessionClosedError",
    "SecretRefusedError",
    "InvalidInputError",
    "MemoryIndexError",
    "ReadOnlyWorkspaceError",
    "EmbedderChangedError",
    "ProviderError",
    "ProviderTimeout",
    "ProviderResponseError",
]
