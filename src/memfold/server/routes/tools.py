"""``/v1/tools``: the agent tools of ``memfold.tools`` over HTTP. One route per tool,
``POST /v1/tools/<name>``, whose body is the tool's own input model and whose answer is the tool's
own result model, run through ``memfold.tools.call`` (the dispatcher the MCP server uses), so a
call gives the same result over HTTP as over MCP. A tool's error result keeps its shape
(``{"ok": false, "error": {"code", "message", "field"}}``) with a matching HTTP status."""

from __future__ import annotations

import inspect
from typing import Any, Literal, cast

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from ...errors import CODES
from ...facade.memory import Memory
from ...tools import TOOLS, Tool, call, openai_tools
from ...tools.models import ErrorResult
from .. import models as m
from .. import paging
from ..auth import Caller, caller
from ..paging import CursorQuery, LimitQuery
from .memories import memory, one_user

router = APIRouter(prefix="/v1/tools", tags=["tools"])


@router.get("", response_model=m.ToolPage)
def list_tools(language: Literal["en", "zh"] = "en", limit: int = LimitQuery, cursor: str | None = CursorQuery,
               c: Caller = Depends(caller)) -> Any:
    """The tools as an OpenAI ``tools`` list (function name, description, JSON schema) in ``results``."""
    return paging.page_of("tools", openai_tools(language), limit, cursor)


EXAMPLES: dict[str, dict[str, Any]] = {  # one request body per tool, shown in the OpenAPI description
    "memory_search": {"query": "what does the user drink?", "limit": 5, "user_id": "alice"},
    "memory_append": {"content": "The user is learning to play the cello", "slot": "long_term"},
    "save_memory": {"content": "用户对花生过敏", "memory_type": "fact", "importance": 0.9, "agent_id": "helper"},
    "memory_edit": {"path": "MEMORY.md", "old_text": "green tea", "new_text": "oolong tea"},
    "memory_forget": {"query_or_id": "cello", "dry_run": True},
    "memory_read": {"path": "MEMORY.md", "section": "Preferences"},
    "write_file": {"path": "MEMORY.md", "content": "- The user moved to Lyon in March"},
    "skill_success": {"memory_id": "m-7f3a", "user_id": "alice"},
    "memory_relate": {"action": "add", "memory_id": "m-7f3a", "other_id": "m-2b91", "relation": "supports",
                      "strength": 0.8},
}


def http_input(tool: Tool) -> type[BaseModel]:
    """The tool's input over HTTP: its own fields, plus ``user_id`` and ``agent_id`` (which may be
    given in the query instead), with an example."""
    extra: dict[str, Any] = {"examples": [EXAMPLES[tool.name]]} if tool.name in EXAMPLES else {}
    namespace = {
        "__annotations__": {"user_id": str | None, "agent_id": str | None},
        "__doc__": f"The input of the {tool.name} tool.",
        "user_id": Field(None, description=m.USER_ID),
        "agent_id": Field(None, description="The agent saved memories are pinned to (or ?agent_id=, the same)"),
        "model_config": ConfigDict(json_schema_extra=cast(JsonDict, extra)),
    }
    return type(f"{tool.input.__name__}Body", (tool.input,), namespace)


def _endpoint(tool: Tool) -> Any:
    def run(request: Request, body: Any, user_id: str | None = None, agent_id: str | None = None,
            c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
        args = body.model_dump(exclude_unset=True)
        uid = c.user(one_user(user_id, args.pop("user_id", None)), "write" if tool.writes else "read")
        agent = one_user(agent_id, args.pop("agent_id", None), "agent_id")
        result = call(mem, tool.name, args, user_id=uid, agent_id=agent)
        if result.get("ok") is False:
            err = result.get("error") or {}
            return JSONResponse({"ok": False, "error": {"code": err.get("code", "internal_error"),
                                                        "message": err.get("message", ""), "field": err.get("field")}},
                                status_code=CODES[err["code"]].http_status if err.get("code") in CODES else 500)
        return result

    P = inspect.Parameter
    run.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        P("request", P.POSITIONAL_OR_KEYWORD, annotation=Request),
        P("body", P.POSITIONAL_OR_KEYWORD, annotation=http_input(tool), default=Body(...)),
        P("user_id", P.POSITIONAL_OR_KEYWORD, annotation=str | None,
          default=Query(None, description="Namespace (default: the key's first namespace)")),
        P("agent_id", P.POSITIONAL_OR_KEYWORD, annotation=str | None,
          default=Query(None, description="The agent saved memories are pinned to")),
        P("c", P.POSITIONAL_OR_KEYWORD, annotation=Caller, default=Depends(caller)),
        P("mem", P.POSITIONAL_OR_KEYWORD, annotation=Memory, default=Depends(memory)),
    ])
    run.__name__ = f"tool_{tool.name}"
    run.__doc__ = tool.describe("en")
    return run


for _tool in TOOLS.values():
    router.add_api_route(f"/{_tool.name}", _endpoint(_tool), methods=["POST"], response_model=_tool.result,
                         responses={422: {"model": ErrorResult}, 413: {"model": ErrorResult}}, summary=_tool.name)


@router.post("/{name}", include_in_schema=False)
def unknown_tool(name: str, c: Caller = Depends(caller)) -> Any:
    return JSONResponse({"ok": False, "error": {"code": "unknown_tool", "field": "name", "message":
                         f"there is no tool {name!r}; the tools are: {', '.join(TOOLS)}"}},
                        status_code=CODES["unknown_tool"].http_status)
