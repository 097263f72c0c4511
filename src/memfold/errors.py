"""The memfold error tree. Every error the library raises derives from MemfoldError.

Each error carries a ``code`` (a stable string a program can test, the same in Python, in a tool's
error result, over MCP and over HTTP) and a ``field`` (the input at fault, when one is). ``CODES``
is the one table that says what each code means on every surface: the exception class a client
raises for it, the HTTP status, the MCP (JSON-RPC) error code."""

from __future__ import annotations

from dataclasses import dataclass


class MemfoldError(Exception):
    """Root of all memfold errors: ``code`` says which failure it is, ``field`` which input is at
    fault (None when no single input is)."""

    code: str = "memfold_error"

    def __init__(self, message: str = "", *, field: str | None = None):
        super().__init__(message)
        self.field = field


class ConfigError(MemfoldError):
    """A setting or policy value is unknown or out of range; the message names the key."""

    code = "invalid_setting"


class NotFoundError(MemfoldError):
    """A memory, session or file that was asked for does not exist."""

    code = "not_found"


class UnknownToolError(NotFoundError):
    """A tool call named no tool memfold has."""

    code = "unknown_tool"


class NoWorkspaceError(NotFoundError):
    """A command that reads found no workspace where it looked (``--root``, ``MEMFOLD_HOME``, ./.memfold)."""


class SessionClosedError(MemfoldError):
    """A message was added to a session that has ended (``Session.reopen()`` or a new session id)."""

    code = "session_closed"


class SecretRefusedError(MemfoldError):
    """Content was refused because it contains a secret (password, key, card or ID number)."""

    code = "secret_refused"


class InvalidInputError(MemfoldError):
    """Input that cannot be stored or parsed (bad type, malformed file, path outside the workspace)."""

    code = "invalid_input"


class ArgumentError(InvalidInputError, TypeError):
    """A call whose arguments are in the wrong places or mix two meanings (a text given where the
    namespace id goes, ``content`` and ``data`` both given). Also a ``TypeError``, as Python raises
    for a call that does not fit a function's signature."""


class TooLongError(InvalidInputError):
    """A text is longer than its bound (``limits.py``); the message says how long it is and the bound."""

    code = "limit_exceeded"


class LimitExceededError(TooLongError):
    """An input is over its bound (``limits.py``): ``field`` names the input, ``limit`` is the bound and
    ``size`` what was given (in the bound's unit); ``size_bound`` is False for a shape (nesting) or a
    parameter's range rather than an amount (code ``out_of_range`` rather than ``limit_exceeded``).
    Nothing was done."""

    def __init__(self, message: str, *, field: str | None = None, limit: int = 0, size: int = 0,
                 size_bound: bool = True):
        super().__init__(message, field=field)
        self.limit, self.size, self.size_bound = limit, size, size_bound
        self.code = "limit_exceeded" if size_bound else "out_of_range"


class PathRefusedError(InvalidInputError):
    """A file path given by an agent or a caller names no memory file of the caller's own folder
    (``../``, an absolute path, a symlink out of the folder, another user's file, another kind of file)."""

    code = "path_refused"


class TextMatchError(InvalidInputError):
    """A text edit's ``old_text`` is not in the file (``reason == "no_match"``) or is there more than
    once (``reason == "ambiguous_match"``); nothing was changed."""

    code = "no_match"

    def __init__(self, message: str, reason: str = "no_match", *, field: str | None = None):
        super().__init__(message, field=field)
        self.reason = self.code = reason


class MemoryOffError(MemfoldError):
    """Memory is switched off for the namespace (``[memory] enabled = false`` or ``memfold memory off``)."""

    code = "memory_off"


class IndexError_(MemfoldError):
    """The derived index is unusable (wrong embedder, unreachable server, corrupt database)."""

    code = "index_unavailable"


class ReadOnlyWorkspaceError(MemfoldError):
    """A write was asked of a workspace whose folder or index the process may not write."""

    code = "read_only"


class ProviderError(MemfoldError):
    """An embedding or LLM provider failed."""

    code = "provider_error"


class ProviderTimeout(ProviderError):
    """A provider did not answer in time."""

    code = "provider_timeout"


class ProviderResponseError(ProviderError):
    """A provider answered with an error status or a body that cannot be used."""


class ToolsRejected(ProviderResponseError):
    """The chat endpoint refused a request with tools (it has no function calling): ask without them."""


class ApiError(MemfoldError):
    """An error answered by a memfold server that has no closer class (``Client``, ``AsyncClient``):
    ``status`` (HTTP), ``code`` and ``field`` of the server's error body."""

    def __init__(self, message: str, status: int = 0, code: str = "", field: str | None = None):
        super().__init__(message, field=field)
        self.status, self.code = status, code


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


# ---- what each code means on every surface ---------------------------------------------------
INVALID_PARAMS, INTERNAL_ERROR, RESOURCE_NOT_FOUND = -32602, -32603, -32002  # JSON-RPC / MCP error codes


@dataclass(frozen=True)
class Code:
    """One failure: its ``code``, the exception class it is in Python (and that ``Client`` raises for
    it), the HTTP status that answers it, the MCP error code of a protocol-level failure (a failed
    tool call is an error result holding the code instead) and what it means (``docs/errors.md``)."""

    code: str
    error: type[MemfoldError]
    http_status: int
    mcp_code: int
    meaning: str


CODES: dict[str, Code] = {c.code: c for c in (
    Code("invalid_input", InvalidInputError, 422, INVALID_PARAMS,
         "an argument has the wrong type or form, or a call mixes two meanings"),
    Code("limit_exceeded", LimitExceededError, 413, INVALID_PARAMS,
         "an amount (a text, a list, a number of bytes) is over its bound (see the limits)"),
    Code("out_of_range", LimitExceededError, 422, INVALID_PARAMS,
         "a shape (nesting) or a number is outside its allowed range"),
    Code("secret_refused", SecretRefusedError, 422, INVALID_PARAMS,
         "the input is mostly a secret, or a field set on purpose holds one; nothing was stored"),
    Code("path_refused", PathRefusedError, 422, INVALID_PARAMS,
         "a file path names no memory file of the caller's own folder"),
    Code("no_match", TextMatchError, 422, INVALID_PARAMS, "a text edit's old text is not in the file"),
    Code("ambiguous_match", TextMatchError, 422, INVALID_PARAMS,
         "a text edit's old text is in the file more than once"),
    Code("not_found", NotFoundError, 404, RESOURCE_NOT_FOUND, "the memory, session, section or file does not exist"),
    Code("unknown_tool", UnknownToolError, 404, INVALID_PARAMS, "a tool call named no tool memfold has"),
    Code("memory_off", MemoryOffError, 409, INVALID_PARAMS, "memory is switched off for the namespace"),
    Code("session_closed", SessionClosedError, 409, INVALID_PARAMS, "a message was added to a session that ended"),
    Code("invalid_setting", ConfigError, 422, INVALID_PARAMS, "a setting or policy value is unknown or out of range"),
    Code("read_only", ReadOnlyWorkspaceError, 503, INTERNAL_ERROR, "the workspace or its index may not be written"),
    Code("index_unavailable", IndexError_, 503, INTERNAL_ERROR,
         "the index is unusable (another embedder built it, its server is unreachable, it is damaged)"),
    Code("provider_timeout", ProviderTimeout, 504, INTERNAL_ERROR, "an embedding or LLM provider did not answer in time"),
    Code("provider_error", ProviderError, 502, INTERNAL_ERROR, "an embedding or LLM provider failed"),
    Code("memfold_error", MemfoldError, 500, INTERNAL_ERROR, "another memfold error"),
    Code("internal_error", MemfoldError, 500, INTERNAL_ERROR, "a bug: the log has the details"),
)}


def code_of(exc: BaseException) -> Code:
    """The row of ``CODES`` for an exception (anything but a MemfoldError is ``internal_error``)."""
    code = getattr(exc, "code", None) if isinstance(exc, MemfoldError) else "internal_error"
    return CODES.get(str(code), CODES["memfold_error"])


__all__ = [
    "CODES",
    "Code",
    "code_of",
    "UnknownToolError",
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
