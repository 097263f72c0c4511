"""The memfold error tree. Every error the library raises derives from MemfoldError."""

from __future__ import annotations


class MemfoldError(Exception):
    """Root of all memfold errors."""


class ConfigError(MemfoldError):
    """A setting or policy value is unknown or out of range; the message names the key."""


class NotFoundError(MemfoldError):
    """A memory, session or file that was asked for does not exist."""


class NoWorkspaceError(NotFoundError):
    """A command that reads found no workspace where it looked (``--root``, ``MEMFOLD_HOME``, ./.memfold)."""


class SessionClosedError(MemfoldError):
    """A message was added to a session that has ended (``Session.reopen()`` or a new session id)."""


class SecretRefusedError(MemfoldError):
    """Content was refused because it contains a secret (password, key, card or ID number)."""


class InvalidInputError(MemfoldError):
    """Input that cannot be stored or parsed (bad type, malformed file, path outside the workspace)."""


class ArgumentError(InvalidInputError, TypeError):
    """A call whose arguments are in the wrong places or mix two meanings (a text given where the
    namespace id goes, ``content`` and ``data`` both given). Also a ``TypeError``, as Python raises
    for a call that does not fit a function's signature."""


class TooLongError(InvalidInputError):
    """A text is longer than its bound (``limits.py``); the message says how long it is and the bound."""


class LimitExceededError(TooLongError):
    """An input is over its bound (``limits.py``): ``field`` names the input, ``limit`` is the bound and
    ``size`` what was given (in the bound's unit); ``size_bound`` is False for a shape (nesting) or a
    parameter's range rather than an amount. Nothing was done."""

    def __init__(self, message: str, *, field: str, limit: int, size: int, size_bound: bool = True):
        super().__init__(message)
        self.field, self.limit, self.size, self.size_bound = field, limit, size, size_bound


class PathRefusedError(InvalidInputError):
    """A file path given by an agent or a caller names no memory file of the caller's own folder
    (``../``, an absolute path, a symlink out of the folder, another user's file, another kind of file)."""


class TextMatchError(InvalidInputError):
    """A text edit's ``old_text`` is not in the file (``reason == "no_match"``) or is there more than
    once (``reason == "ambiguous_match"``); nothing was changed."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class MemoryOffError(MemfoldError):
    """Memory is switched off for the namespace (``[memory] enabled = false`` or ``memfold memory off``)."""


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


class ToolsRejected(ProviderResponseError):
    """The chat endpoint refused a request with tools (it has no function calling): ask without them."""


class ApiError(MemfoldError):
    """An error answered by a memfold server that has no closer class (``Client``, ``AsyncClient``):
    ``status`` (HTTP), ``code`` and ``field`` of the server's error body."""

    def __init__(self, message: str, status: int = 0, code: str = "", field: str | None = None):
        super().__init__(message)
        self.status, self.code, self.field = status, code, field


class AuthenticationError(ApiError):
    """The server refused the API key (none given, unknown, wrong or revoked): HTTP 401."""


class PermissionDeniedError(ApiError):
    """The API key may not do this (its scope, or another namespace): HTTP 403."""


class ServerUnavailableError(ApiError):
    """The server could not be reached, or answered 503, after the client's retries."""


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
    "ArgumentError",
    "TooLongError",
    "LimitExceededError",
    "PathRefusedError",
    "TextMatchError",
    "MemoryOffError",
    "MemoryIndexError",
    "ReadOnlyWorkspaceError",
    "EmbedderChangedError",
    "ProviderError",
    "ProviderTimeout",
    "ProviderResponseError",
    "ToolsRejected",
    "ApiError",
    "AuthenticationError",
    "PermissionDeniedError",
    "ServerUnavailableError",
]
