"""``/healthz`` (no key needed), ``/v1/whoami``, ``/v1/stats``, ``/v1/policy``."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from ...errors import MemfoldError
from ...facade.memory import Memory
from .. import models as m
from ..auth import Caller, caller
from .memories import UserQuery, memory

router = APIRouter(tags=["system"])
log = logging.getLogger("memfold.server")


@router.get("/healthz", response_model=m.Health)
def healthz(request: Request) -> Any:
    """200 when the index answers and the embedder is loaded, else 503."""
    mem: Memory = request.app.state.memory
    body = {"status": "ok", "index": mem.settings.index.backend, "embedder": mem.embedder.name, "detail": ""}
    part = "index"
    try:
        mem.index.get_state("_memfold", "health", "probe")
        part = "embedder"
        vec = mem.embedder.embed(["ok"])
        if not np.all(np.isfinite(vec)):
            raise MemfoldError("the embedder returned a vector that is not finite")
    except Exception as exc:  # any failure: unavailable, naming the part (no message: anyone may ask)
        log.warning("health check: the %s failed: %s", part, exc)
        body.update(status="unavailable", detail=f"the {part} failed ({type(exc).__name__}); the server log has details")
        return JSONResponse(body, status_code=503)
    return body


@router.get("/v1/whoami", response_model=m.KeyInfo, tags=["system"])
def whoami(c: Caller = Depends(caller)) -> Any:
    """The calling key: its namespaces and scope (never its secret)."""
    return c.key.to_dict()


@router.get("/v1/stats", response_model=dict[str, Any])
def stats(user_id: str | None = UserQuery, c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Counts by type, archived and episodic rows, average importance, file sizes, LLM usage, and
    ``llm``: whether an LLM is configured (and its model), so a reader knows what the usage means."""
    out = mem.stats(c.user(user_id, "read"))
    out["llm"] = {"configured": mem.chat_model is not None, "model": mem.settings.llm.model or None}
    return out


@router.get("/v1/policy", response_model=dict[str, Any])
def policy(user_id: str | None = UserQuery, c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """The effective memory policy of the namespace."""
    return mem.policy(c.user(user_id, "read")).to_dict()
