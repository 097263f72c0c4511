"""What sessions and the context builder need from the engine, as narrow protocols.

``Session`` and ``ContextBuilder`` depend on these, not on the ``Memory`` facade: they
retrieve memories (``Retrieves``), send folded messages to long-term extraction (``Ingests``)
and read an agent's pin list (``Pins``). ``Memory`` satisfies all three."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from ...models import AddResult, Retrieval
from ...providers.embedder import Embedder
from ..storage.pin import PinList


class Retrieves(Protocol):
    def retrieve(self, query: str | None, user_id: str = "default", *, limit: int | None = None) -> Retrieval: ...


class Ingests(Protocol):
    def add(self, data: str | Sequence[Any], user_id: str = "default", *, agent_id: str | None = None,
            session_id: str | None = None) -> AddResult: ...


class SessionState(Protocol):
    """The index's state rows (where a session's buffer and summary persist)."""

    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None: ...
    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None: ...
    def delete_state(self, user_id: str, kind: str, key: str) -> None: ...
    def list_state(self, user_id: str, kind: str) -> list[str]: ...


class Pins(Protocol):
    def pins(self, agent_id: str, user_id: str = "default") -> PinList: ...


class MessageHook(Protocol):
    """Told after a session saved a message (policy evolution counts them; its reflection runs in
    the background); ``conversation`` gives the session's summary and buffer when it is needed."""

    def message_added(self, user_id: str,
                      conversation: Callable[[], tuple[str, Sequence[dict[str, Any]]]]) -> Any: ...


@dataclass(frozen=True)
class SessionPorts:
    """What a session uses: retrieval, ingestion, pin lists, the embedder (relevant history),
    the state rows, a per-namespace lock held while a session changes (None: a lock of this
    process only), the namespace's memory switch and what to tell after each message."""

    retriever: Retrieves
    ingest: Ingests
    pins: Pins
    embedder: Embedder
    state: SessionState
    lock: Callable[[str], AbstractContextManager[Any]] | None = None
    enabled: Callable[[str], bool] | None = None  # memory on for a namespace, read fresh (None: always on)
    after_message: MessageHook | None = None
    file_chars: Callable[[str], int | None] | None = None  # a namespace's MEMORY.md size as the model reads it
