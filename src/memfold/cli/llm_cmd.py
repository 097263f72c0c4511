"""``memfold doctor``: check the configured embedder and LLM endpoints and print what works.

Registered on the main app by ``register(app, root)``; providers are imported inside the
command so that ``memfold --help`` stays fast. API keys are never printed: only whether the
environment variable named by ``api_key_env`` is set."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

import typer
from rich.console import Console

from ..errors import MemfoldError

PROBE_SCHEMA = {"title": "probe", "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@dataclass
class Check:
    name: str
    ok: bool | None  # None = not configured (not a failure)
    summary: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "summary": self.summary, **self.details}


def check_embedder(settings: Any) -> Check:
    from ..providers.embedder import make_embedder

    where = settings.base_url or "bundled, offline"
    details: dict[str, Any] = {"provider": settings.provider, "endpoint": where}
    if settings.provider == "openai":
        details["api_key_env"] = f"{settings.api_key_env} ({'set' if os.environ.get(settings.api_key_env) else 'not set'})"
    started = time.perf_counter()
    try:
        emb = make_embedder(settings)
        vec = emb.embed(["memfold doctor: 你好, hello"])
    except MemfoldError as exc:
        return Check("embedder", False, f"{settings.provider} ({where}) failed: {exc}", details)
    ms = (time.perf_counter() - started) * 1000
    details.update(model=emb.name, dim=int(vec.shape[1]), latency_ms=round(ms, 1))
    return Check("embedder", True, f"{emb.name} ({where}) answers: {vec.shape[1]} dims in {ms:.0f} ms", details)


def check_llm(settings: Any) -> Check:
    from ..engine.llm_calls import parse_json_answer
    from ..providers.chat import make_chat_model

    if not settings.provider:
        return Check("llm", None, "no LLM configured ([llm] provider is empty): extraction and merge decisions "
                                  "use the deterministic rules", {"provider": ""})
    details: dict[str, Any] = {"provider": settings.provider, "endpoint": settings.base_url, "model": settings.model,
                               "json_mode": settings.json_mode}
    if settings.api_key_env:
        details["api_key_env"] = f"{settings.api_key_env} ({'set' if os.environ.get(settings.api_key_env) else 'not set'})"
    started = time.perf_counter()
    try:
        chat = make_chat_model(settings)
        if chat is None:
            return Check("llm", None, "no LLM configured", details)
        result = chat.complete([{"role": "user", "content": 'Answer with the JSON object {"ok": true} and nothing else.'}],
                               json_schema=PROBE_SCHEMA, temperature=0.0)
    except MemfoldError as exc:
        return Check("llm", False, f"{settings.model or '?'} at {settings.base_url or '?'} failed: {exc}", details)
    ms = (time.perf_counter() - started) * 1000
    used = getattr(chat, "last_json_mode", "")
    details.update(answered_model=result.model, latency_ms=round(ms, 1), usage=result.usage,
                   json_mode_used=used or "n/a")
    try:
        json_ok = isinstance(parse_json_answer(result.text), dict)
    except ValueError:
        json_ok = False
    details["json_answer"] = json_ok
    note = "answers JSON" if json_ok else "answers, but not with JSON: extraction will often fall back to notes"
    return Check("llm", json_ok, f"{result.model} at {settings.base_url} {note} "
                                 f"(response_format: {used or 'n/a'}, {ms:.0f} ms)", details)


def register(app: typer.Typer, root: Callable[[], Optional[str]]) -> None:
    @app.command()
    def doctor(as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
               skip_embedder: bool = typer.Option(False, "--skip-embedder", help="Only check the LLM.")) -> None:
        """Check the configured embedder and LLM endpoints and print what works (exit 1 if one fails)."""
        from ..config import load_settings

        settings = load_settings(root())
        checks = ([] if skip_embedder else [check_embedder(settings.embedder)]) + [check_llm(settings.llm)]
        if as_json:
            sys.stdout.write(json.dumps({"root": str(settings.root), "checks": [c.to_dict() for c in checks]},
                                        ensure_ascii=False, indent=2) + "\n")
        else:
            out = Console(soft_wrap=True, highlight=False)
            out.print(f"workspace {settings.root}", markup=False)
            for c in checks:
                mark = {True: "ok  ", False: "FAIL", None: "--  "}[c.ok]
                out.print(f"{mark} {c.name:9} {c.summary}", markup=False)
        if any(c.ok is False for c in checks):
            sys.exit(1)  # (typer.Exit's code is dropped by main()'s standalone_mode=False)
