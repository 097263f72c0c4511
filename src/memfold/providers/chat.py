"""The ChatModel protocol: what the engine needs from an LLM.

A concrete OpenAI-compatible implementation lives in ``openai_chat.py``; it is chosen by
``[llm] provider = "openai"`` in the registry (``make_chat_model``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..config import LLMSettings


@dataclass(frozen=True)
class ChatResult:
    text: str
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens, total_tokens
    model: str = ""


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the JSON text it sent (maybe malformed)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolReply:
    """A chat answer that may hold tool calls; ``message`` is the assistant message to send back."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    model: str = ""

    @property
    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            msg["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in self.tool_calls]
        return msg


@runtime_checkable
class ChatModel(Protocol):
    name: str

    def complete(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None,
                 temperature: float = 0.3) -> ChatResult: ...


def make_chat_model(settings: "LLMSettings") -> ChatModel | None:
    """The configured chat model, or None when no LLM is configured (deterministic paths)."""
    provider = (settings.provider or "").lower()
    if not provider:
        return None
    if provider == "openai":
        from .openai_chat import OpenAIChatModel  # type: ignore[import-not-found]

        return OpenAIChatModel(settings)
    from ..errors import ConfigError

    raise ConfigError(f"setting [llm] provider must be '' (none) or 'openai', got {settings.provider!r}")
