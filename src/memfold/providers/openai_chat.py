"""Chat completions from any OpenAI-compatible ``/chat/completions`` endpoint.

OpenAI, DeepSeek, Qwen (DashScope compatible mode), Moonshot, Ollama, vLLM and the llama.cpp
server all speak this protocol (examples in ``docs/llm.md``). Timeouts, connection errors,
HTTP 429 and 5xx are retried with exponential backoff; other errors are raised at once.
JSON mode is asked for with ``response_format`` when the caller passes a schema; an endpoint
that rejects the field (HTTP 400/422) is asked again without it, and remembered."""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import ConfigError, ProviderError, ProviderResponseError, ProviderTimeout, ToolsRejected
from .chat import ChatResult, ToolCall, ToolReply

if TYPE_CHECKING:
    from ..config import LLMSettings

log = logging.getLogger("memfold")
JSON_MODES = ("auto", "json_object", "json_schema", "off")
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_BACKOFF = 30.0


class OpenAIChatModel:
    """A ``ChatModel`` for an OpenAI-compatible endpoint (httpx, no SDK)."""

    def __init__(self, settings: "LLMSettings", *, transport: httpx.BaseTransport | None = None):
        if not settings.base_url or not settings.model:
            raise ConfigError("[llm] provider = 'openai' needs [llm] base_url and model "
                              "(or MEMFOLD_LLM__BASE_URL and MEMFOLD_LLM__MODEL)")
        if settings.json_mode not in JSON_MODES:
            raise ConfigError(f"setting [llm] json_mode must be one of {', '.join(JSON_MODES)}, "
                              f"got {settings.json_mode!r}")
        if settings.max_retries < 0 or settings.timeout <= 0 or settings.backoff < 0:
            raise ConfigError("settings [llm] max_retries and backoff must be >= 0 and timeout > 0")
        self.base_url = settings.base_url.rstrip("/")
        self.model = settings.model
        self.name = f"openai:{self.model}"
        self.max_retries = settings.max_retries
        self.backoff = settings.backoff
        self.api_key_env = settings.api_key_env
        self._key = os.environ.get(settings.api_key_env, "") if settings.api_key_env else ""
        self._client = httpx.Client(timeout=settings.timeout, transport=transport)
        # response formats still to try, best first; shrinks when the endpoint rejects one
        self._formats: list[str] = {"auto": ["json_object", "off"], "json_object": ["json_object"],
                                    "json_schema": ["json_schema", "json_object", "off"],
                                    "off": ["off"]}[settings.json_mode]
        self._formats_lock = threading.Lock()
        self.last_json_mode = ""  # the response_format kind the last call used ("off" = none)
        self.tools_supported: bool | None = None  # None: not asked yet; False: the endpoint refused tools

    def close(self) -> None:
        self._client.close()

    def complete(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None,
                 temperature: float = 0.3) -> ChatResult:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature}
        while True:
            kind = self._formats[0] if json_schema is not None else "off"
            fmt = _response_format(kind, json_schema)
            payload = dict(body, response_format=fmt) if fmt else body
            try:
                data = self._post(payload)
            except _FormatRejected as exc:
                with self._formats_lock:
                    if self._formats[0] != kind:
                        continue  # another thread already stepped down
                    if len(self._formats) > 1:
                        log.info("LLM endpoint %s rejected response_format %s (HTTP %s); asking without it",
                                 self.base_url, kind, exc.status)
                        self._formats.pop(0)
                        continue
                raise exc.error from None
            self.last_json_mode = kind
            return self._result(data)

    def complete_tools(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                       temperature: float = 0.3) -> ToolReply:
        """A chat completion offering ``tools`` (OpenAI format); the answer may hold tool calls.
        ``ToolsRejected`` when the endpoint refuses tools (HTTP 400/422 about them), then at once
        on every later call: the caller asks without tools."""
        if self.tools_supported is False and tools:
            raise ToolsRejected(f"LLM endpoint {self.base_url} does not accept tools")
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature}
        if tools:
            body["tools"] = tools
        try:
            data = self._post(body)
        except ToolsRejected:
            self.tools_supported = False
            raise
        if tools:
            self.tools_supported = True
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ProviderResponseError(f"LLM endpoint {self.base_url} sent no choices[0].message") from exc
        text = message.get("content") if isinstance(message, dict) else None
        if isinstance(text, list):
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        calls = []
        for i, c in enumerate((message.get("tool_calls") if isinstance(message, dict) else None) or []):
            fn = c.get("function") if isinstance(c, dict) else None
            fn = fn if isinstance(fn, dict) else {}
            args = fn.get("arguments")
            args = args if isinstance(args, str) else json.dumps(args if args is not None else {}, ensure_ascii=False)
            calls.append(ToolCall(id=str(c.get("id") or f"call_{i}") if isinstance(c, dict) else f"call_{i}",
                                  name=str(fn.get("name") or ""), arguments=args))
        if not isinstance(text, str):
            text = ""
        if not text and not calls:
            raise ProviderResponseError(f"LLM endpoint {self.base_url} sent a message with neither text nor tool calls")
        return ToolReply(text=text, tool_calls=tuple(calls), usage=_usage(data), model=str(data.get("model") or self.model))

    # ---- transport ---------------------------------------------------------------------
    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            retry_after = None
            try:
                resp = self._client.post(url, headers=headers, json=payload)
            except httpx.TimeoutException as exc:
                failure: ProviderError = ProviderTimeout(
                    f"LLM endpoint {self.base_url} did not answer within {self._client.timeout.read}s")
                cause: BaseException | None = exc
            except httpx.HTTPError as exc:
                failure, cause = ProviderError(f"LLM endpoint {self.base_url} unreachable: "
                                               f"{type(exc).__name__}: {exc}"), exc
            else:
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                    except ValueError as exc:
                        raise ProviderResponseError(
                            f"LLM endpoint {self.base_url} sent a body that is not JSON: {_snippet(resp.text)}"
                        ) from exc
                    if not isinstance(data, dict):
                        raise ProviderResponseError(f"LLM endpoint {self.base_url} sent a JSON {type(data).__name__}, "
                                                    "not a chat completion object")
                    return data
                error = ProviderResponseError(
                    f"LLM endpoint {self.base_url} answered HTTP {resp.status_code}: {_snippet(resp.text)}")
                if resp.status_code in (400, 422) and "response_format" in payload:
                    raise _FormatRejected(resp.status_code, error)
                if resp.status_code in (400, 422) and "tools" in payload and re.search(r"tool|function", resp.text, re.I):
                    raise ToolsRejected(str(error))
                if resp.status_code not in RETRY_STATUS:
                    raise error
                failure, cause = error, None
                retry_after = _retry_after(resp.headers.get("Retry-After"))
            if attempt >= self.max_retries:
                if attempt:
                    failure = type(failure)(f"{failure} (after {attempt + 1} attempts)")
                raise failure from cause
            delay = min(MAX_BACKOFF, max(self.backoff * (2 ** attempt), retry_after or 0.0))
            log.info("LLM call failed (%s); retry %d/%d in %.2fs", failure, attempt + 1, self.max_retries, delay)
            time.sleep(delay)
            attempt += 1

    def _result(self, data: dict[str, Any]) -> ChatResult:
        try:
            choice = data["choices"][0]
            message = choice["message"]
            text = message.get("content")
        except (KeyError, IndexError, TypeError) as exc:
            raise ProviderResponseError(f"LLM endpoint {self.base_url} sent no choices[0].message") from exc
        if isinstance(text, list):  # some servers send content parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        if not isinstance(text, str):
            raise ProviderResponseError(f"LLM endpoint {self.base_url} sent a message without text content "
                                        f"(finish_reason={choice.get('finish_reason')!r})")
        return ChatResult(text=text, usage=_usage(data), model=str(data.get("model") or self.model))


def _usage(data: dict[str, Any]) -> dict[str, int]:
    got = data.get("usage")
    raw_usage: dict[str, Any] = got if isinstance(got, dict) else {}
    usage = {k: int(raw_usage[k]) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
             if isinstance(raw_usage.get(k), (int, float))}
    if "total_tokens" not in usage and usage:
        usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    return usage


class _FormatRejected(Exception):
    def __init__(self, status: int, error: ProviderResponseError):
        super().__init__(str(error))
        self.status = status
        self.error = error


def _response_format(kind: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema" and schema is not None:
        return {"type": "json_schema", "json_schema": {"name": str(schema.get("title") or "answer"),
                                                       "schema": schema}}
    return None


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
