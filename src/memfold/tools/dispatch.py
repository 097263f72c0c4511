"""Calling a tool by name with the model's arguments: ``call`` returns a JSON-serialisable dict and
never raises. A bad argument, an unknown tool, a missing or ambiguous match, a secret, an oversized
text, a refused path, memory switched off: ``{"ok": false, "error": {"code", "message", "field"}}``
that the model can read and act on, so an agent loop goes on. The code is the error's own
(``errors.CODES``), as over HTTP and in Python."""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError

from ..engine.storage import guard
from ..errors import CODES, InvalidInputError, LimitExceededError, MemfoldError, MemoryOffError, UnknownToolError
from ..facade.memory import Memory
from ..limits import MAX_ARGUMENT_CHARS, TOOL_ARGUMENTS, problem_code
from .handlers import ToolContext
from .models import ErrorInfo, ErrorResult
from .registry import TOOLS
from .schemas import anthropic_tools, openai_tools

log = logging.getLogger("memfold")
ERROR_CODES = tuple(CODES)  # the codes of ``errors.CODES``: the same in Python, tools, MCP and HTTP


def error(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """An error result (``field``: the argument at fault, when one is)."""
    return ErrorResult(error=ErrorInfo(code=code, message=message, field=field)).model_dump()


def call(memory: Memory, name: str, arguments: dict[str, Any] | str | None = None, *, user_id: str = "default",
         agent_id: str | None = None) -> dict[str, Any]:
    """Run tool ``name`` with ``arguments`` (a dict, or the JSON text a model sent) in the memory of
    ``user_id`` (saved memories are pinned to ``agent_id``). Returns the result as a dict with
    ``ok``; never raises."""
    try:
        tool = TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            raise UnknownToolError(f"there is no tool {name!r}; the tools are: {', '.join(TOOLS)}", field="name")
        args = _arguments(arguments)
        if not memory.memory_enabled(user_id):
            raise MemoryOffError(f"memory is switched off for user {user_id!r}; nothing is read or written "
                                 f"(`memfold memory on --user {user_id}` switches it on)")
        try:
            parsed = tool.input.model_validate(args)
        except ValidationError as exc:
            raise _validation_error(tool.name, exc) from None
        result = tool.handler(memory, parsed, ToolContext(user_id=user_id, agent_id=agent_id))
        return result.model_dump(mode="json")
    except MemfoldError as exc:
        return error(exc.code if exc.code in CODES else "memfold_error", str(exc), exc.field)
    except Exception as exc:  # a bug must not end the agent's loop: reported, logged with its trace
        log.exception("tool %s failed", name)
        return error("internal_error", f"{type(exc).__name__}: {exc}")


def _arguments(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_CHARS:
            raise LimitExceededError(f"the arguments are {len(arguments):,} characters long, over the limit of "
                                     f"{MAX_ARGUMENT_CHARS:,}", field=TOOL_ARGUMENTS.field, limit=MAX_ARGUMENT_CHARS,
                                     size=len(arguments))
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
                                    "send a JSON object", field="arguments") from None
    if not isinstance(arguments, dict):
        raise InvalidInputError(f"the arguments must be a JSON object, got {type(arguments).__name__}",
                                field="arguments")
    return arguments


def _validation_error(name: str, exc: ValidationError) -> InvalidInputError:
    """The error of a tool's arguments refused by its input model: every problem in the message, the
    first one's field and code (``limits.problem_code``)."""
    problems = []
    first: tuple[str, str] | None = None
    for e in exc.errors(include_url=False):
        field = ".".join(str(p) for p in e["loc"]) or "arguments"
        kind = e["type"]
        first = first or (field, problem_code(kind, e.get("ctx")))
        if kind == "missing":
            problems.append(f"argument {field!r} is missing")
        elif kind == "extra_forbidden":
            known = ", ".join(TOOLS[name].input.model_fields)
            problems.append(f"unknown argument {field!r} (the arguments of {name} are: {known})")
        else:
            problems.append(f"argument {field!r}: {e['msg']} (got {_shown(e.get('input'))})")
    field, code = first or ("arguments", "invalid_input")
    message = f"{name}: " + "; ".join(problems)
    if code == "invalid_input":
        return InvalidInputError(message, field=field)
    return LimitExceededError(message, field=field, size_bound=code == "limit_exceeded")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class MemoryTools:
    """The tools bound to one namespace (and agent): what an agent loop needs.

    ``tools = MemoryTools(mem, user_id="alice")``; ``tools.openai()`` for ``tools=``, then
    ``tools.call(name, arguments)`` for each tool call. With memory off the lists are empty."""

    def __init__(self, memory: Memory, user_id: str = "default", agent_id: str | None = None,
                 language: str | None = None):
        self.memory = memory
        self.user_id = guard.user(user_id)  # a bad id is refused here, not at the agent's first call
        self.agent_id = agent_id
        self._language = language

    @property
    def enabled(self) -> bool:
        """Whether memory is on for the namespace (read fresh)."""
        return self.memory.memory_enabled(self.user_id)

    @property
    def language(self) -> str:
        """The language of the descriptions: the one given, else the user's MEMORY.md's."""
        return self._language or self.memory.language(self.user_id)

    @property
    def names(self) -> list[str]:
        """The tools offered: all of them, none when memory is off."""
        return list(TOOLS) if self.enabled else []

    def summaries(self) -> dict[str, str]:
        """Tool name -> one sentence in the user's language (for the injected instructions)."""
        return {n: TOOLS[n].summary(self.language) for n in self.names}

    def openai(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` list (empty with memory off)."""
        names = self.names
        return openai_tools(self.language, names) if names else []

    def anthropic(self) -> list[dict[str, Any]]:
        """The Anthropic ``tools`` list (empty with memory off)."""
        names = self.names
        return anthropic_tools(self.language, names) if names else []

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        """``dispatch.call`` in this namespace; never raises."""
        return call(self.memory, name, arguments, user_id=self.user_id, agent_id=self.agent_id)
