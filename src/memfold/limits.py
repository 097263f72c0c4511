"""Bounds on every input a client controls (one table, so that the Python API, the CLI, the tools,
MCP and the HTTP API agree, and ``docs/limits.md`` lists the same numbers).

Every bound is checked before any work starts: an input over its bound gets a
``LimitExceededError`` (an ``InvalidInputError``) whose ``field`` names the input and whose message
says how large it is and what the bound is; nothing is stored. Over HTTP an amount over its bound
(a text, a list, a number of bytes) is answered with 413 and the field, a shape over its bound
(nesting) or an out-of-range parameter with 422 and the field. Embedding is bounded separately: each
text is cut to ``[embedder] max_chars`` for its vector while the full text is kept."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import LimitExceededError


@dataclass(frozen=True)
class Bound:
    """One bound: the input it applies to (``field``, as the API names it), the largest value
    accepted, its unit, and where it applies (for ``docs/limits.md`` and error messages)."""

    field: str
    limit: int
    unit: str  # characters | messages | bytes | levels | ids | results | lines
    applies_to: str
    size_bound: bool = True  # an amount (HTTP 413); False: a shape or a parameter's range (HTTP 422)


CONTENT = Bound("content", 20_000, "characters", "one memory, one daily note, one piece of a conversation turn "
                "(a longer turn is split into pieces); new content given to update")
QUERY = Bound("query", 10_000, "characters", "a search or forget query (context building uses the last "
              "10,000 characters of a longer message)")
MESSAGE = Bound("content", 100_000, "characters", "one chat message given to add or to a session")
MESSAGES = Bound("messages", 1_000, "messages", "the messages of one add call; `memfold ingest` sends a longer "
                 "conversation in batches of this many")
STRUCTURED_BYTES = Bound("structured_data", 16_384, "bytes", "structured_data of one memory, as compact UTF-8 JSON")
STRUCTURED_DEPTH = Bound("structured_data", 32, "levels", "nesting of structured_data (objects and lists)",
                         size_bound=False)
SOURCE_IDS = Bound("source_ids", 100, "ids", "source ids given to one add call")
ID = Bound("id", 256, "characters", "an id given by a caller (memory, agent, session, source id)")
RESULTS = Bound("limit", 1_000, "results", "`limit` of search and of every list (one HTTP page)", size_bound=False)
TOOL_RESULTS = Bound("limit", 50, "results", "`limit` of the memory_search tool (what a model may ask for)",
                     size_bound=False)
TOOL_ARGUMENTS = Bound("arguments", 100_000, "characters", "the raw JSON arguments of one tool call")
TOOL_PATH = Bound("path", 300, "characters", "a file path given to a tool")
TOOL_SECTION = Bound("section", 200, "characters", "a section heading given to memory_read")
WRITE_LINES = Bound("content", 50, "lines", "new memories one write_file tool call may add")
SKILL_STEPS = Bound("steps", 50, "steps", "the steps of one skill")
SKILL_TOOLS = Bound("tools", 20, "tools", "the tools one skill names")
SKILL_FIELD = Bound("name", 500, "characters", "one field of a skill (its name, when to use, one step, one tool, "
                    "its outcome)")

TABLE: tuple[Bound, ...] = (CONTENT, QUERY, MESSAGE, MESSAGES, STRUCTURED_BYTES, STRUCTURED_DEPTH, SOURCE_IDS, ID,
                            RESULTS, TOOL_RESULTS, TOOL_ARGUMENTS, TOOL_PATH, TOOL_SECTION, WRITE_LINES,
                            SKILL_STEPS, SKILL_TOOLS, SKILL_FIELD)

# the names the rest of the code imports
MAX_CONTENT_CHARS = CONTENT.limit
MAX_QUERY_CHARS = QUERY.limit
MAX_MESSAGE_CHARS = MESSAGE.limit
MAX_MESSAGES = MESSAGES.limit
MAX_STRUCTURED_BYTES = STRUCTURED_BYTES.limit
MAX_STRUCTURED_DEPTH = STRUCTURED_DEPTH.limit
MAX_SOURCE_IDS = SOURCE_IDS.limit
MAX_ID_CHARS = ID.limit
MAX_RESULTS = RESULTS.limit
MAX_TOOL_RESULTS = TOOL_RESULTS.limit
MAX_ARGUMENT_CHARS = TOOL_ARGUMENTS.limit
MAX_PATH_CHARS = TOOL_PATH.limit
MAX_SECTION_CHARS = TOOL_SECTION.limit
MAX_WRITE_LINES = WRITE_LINES.limit


_SCHEMA_KEYWORD = {"characters": "maxLength", "results": "maximum", "messages": "maxItems", "ids": "maxItems",
                   "steps": "maxItems", "tools": "maxItems"}


def schema(bound: Bound, **extra: Any) -> dict[str, Any]:
    """The JSON-schema keyword stating ``bound`` on a model's field (``json_schema_extra``): the
    OpenAPI schema and the tools' schemas show the table's number, while the check itself (and its
    message naming the field) stays in the guard every entry point goes through."""
    key = _SCHEMA_KEYWORD.get(bound.unit)
    return {**({key: bound.limit} if key else {}), **extra}


# pydantic's error types of a failed bound, and the keyword of the bound in the error's context
_PYDANTIC_BOUNDS = {"string_too_long": ("max_length", ("characters",)),
                    "too_long": ("max_length", ("messages", "ids", "steps", "tools")),
                    "less_than_equal": ("le", ("results",))}


def problem_code(kind: str, context: Mapping[str, Any] | None = None) -> str:
    """The error code of one problem a pydantic model found (the tools' inputs, the HTTP bodies):
    ``limit_exceeded`` (or ``out_of_range``) when the constraint that failed is a bound of this table
    (``kind`` is pydantic's error type, ``context`` its ``ctx``), else ``invalid_input``: the same
    code the guard gives when it finds the same input over the same bound."""
    keyword, units = _PYDANTIC_BOUNDS.get(kind, ("", ()))
    limit = (context or {}).get(keyword)
    for b in TABLE:
        if b.limit == limit and b.unit in units:
            return "limit_exceeded" if b.size_bound else "out_of_range"
    return "invalid_input"


def over(bound: Bound, size: int, what: str | None = None, field: str | None = None, hint: str = "") -> None:
    """Raise ``LimitExceededError`` when ``size`` is over ``bound`` (``what`` names the input in the
    message, ``field`` in the error's ``field``; both default to the bound's field)."""
    if size > bound.limit:
        name = what or bound.field
        msg = f"{name}: {size:,} {bound.unit}, over the limit of {bound.limit:,}"
        if bound.unit == "characters":  # the wording the text bounds always had
            msg = f"{name} is {size:,} characters long, over the limit of {bound.limit:,}"
        raise LimitExceededError(msg + (f"; {hint}" if hint else ""), field=field or bound.field,
                                 limit=bound.limit, size=size, size_bound=bound.size_bound)


def check_length(what: str, text: str, limit: int, hint: str = "split it first", field: str = "text") -> None:
    """A text longer than ``limit`` characters is refused (``what`` names it in the message, ``field``
    in the error)."""
    if len(text) > limit:
        over(Bound(field, limit, "characters", what), len(text), what, field, hint)


def json_bytes(value: Any) -> int:
    """The size of a JSON value as compact UTF-8 JSON (what a memory file holds of it)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))


def query_tail(query: str) -> str:
    """The part of a long query used for retrieval: its last ``MAX_QUERY_CHARS`` characters (a
    conversation excerpt ends with what is being asked)."""
    return query if len(query) <= MAX_QUERY_CHARS else query[-MAX_QUERY_CHARS:]
