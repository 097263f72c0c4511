"""``/v1/tools``: the agent tools of ``memfold.tools`` over HTTP. One route per tool,
``POST /v1/tools/<name>``, whose body is the tool's own input model and whose answer is the tool's
own result model, run through ``memfold.tools.call`` (the dispatcher the MCP server uses), so a
call gives the same result over HTTP as over MCP. A tool's error result keeps its shape
(``{"ok": false, "error": {"code", "message", "field"}}``) with a matching HTTP status."""

from __future__ import annotations

import inspect
from typing import Any, Literal

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import JSONResponse

from ...engine.memory import Memory
from ...tools import TOOLS, Tool, call, openai_tools
from ...tools.models import ErrorResult
from ..auth import Caller, caller
from .memories import memory

router = APIRouter(prefix="/v1/tools", tags=["tools"])
STATUS = {"invalid_argument": 422, "unknown_tool": 404, "no_match": 422, "ambiguous_match": 422,
          "secret_refused": 422, "too_long": 422, "path_refused": 422, "memory_off": 409, "not_found": 404,
          "read_only": 503, "config_error": 422, "provider_error": 502, "internal_error": 500}


@router.get("", response_model=dict[str, Any])
def list_tools(language: Literal["en", "zh"] = "en", c: Caller = Depends(caller)) -> Any:
    """The tools as an OpenAI ``tools`` list (function name, description, JSON schema)."""
    return {"tools": openai_tools(language)}


def _endpoint(tool: Tool) -> Any:
    def run(request: Request, body: Any, user_id: str | None = None, agent_id: str | None = None,
            c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
        uid = c.user(user_id, "write" if tool.writes else "read")
        result = call(mem, tool.name, body.model_dump(exclude_unset=True), user_id=uid, agent_id=agent_id)
        if result.get("ok") is False:
            err = result.get("error") or {}
            return JSONResponse({"ok": False, "error": {"code": err.get("code", "internal_error"),
                                                        "message": err.get("message", ""), "field": err.get("field")}},
                                status_code=STATUS.get(err.get("code", ""), 422))
        return result

    P = inspect.Parameter
    run.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        P("request", P.POSITIONAL_OR_KEYWORD, annotation=Request),
        P("body", P.POSITIONAL_OR_KEYWORD, annotation=tool.input, default=Body(...)),
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
                         responses={422: {"model": ErrorResult}}, summary=_tool.name)


@router.post("/{name}", include_in_schema=False)
def unknown_tool(name: str, c: Caller = Depends(caller)) -> Any:
    return JSONResponse({"ok": False, "error": {"code": "unknown_tool", "field": "name", "message":
                         f"there is no tool {name!r}; the tools are: {', '.join(TOOLS)}"}}, status_code=404)
