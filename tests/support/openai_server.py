"""A scripted OpenAI-compatible HTTP server for tests (chat completions and embeddings).

A test queues answers; the server records every request. Answers can be text, garbage,
delays or HTTP error codes. Real sockets on 127.0.0.1, no mocks."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    """One scripted answer. ``content`` is the assistant text; ``status`` != 200 sends an error;
    ``raw`` sends these bytes as the body verbatim; ``delay`` sleeps first (for timeouts)."""

    content: str = ""
    status: int = 200
    raw: bytes | None = None
    delay: float = 0.0
    tool_calls: list[dict[str, Any]] | None = None  # OpenAI-format tool calls (finish_reason "tool_calls")
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5,
                                                           "total_tokens": 15})


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str = "") -> dict[str, Any]:
    """One OpenAI-format tool call for ``Reply(tool_calls=[...])``; a str is sent as the arguments verbatim."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id or f"call_{name}_{abs(hash(args)) % 10_000}", "type": "function",
            "function": {"name": name, "arguments": args}}


class ScriptedOpenAIServer:
    def __init__(self, embed_fn: Callable[[list[str]], list[list[float]]] | None = None):
        self.chat_replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"}
        self.default_reply: Reply | None = None
        self.embed_fn = embed_fn or (lambda texts: [[float(len(t) % 7), 1.0, float(sum(map(ord, t)) % 13)]
                                                    for t in texts])
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                        "raw": raw.decode("utf-8", "replace")})
                if self.path.rstrip("/").endswith("/embeddings"):
                    texts = body.get("input") or []
                    texts = [texts] if isinstance(texts, str) else texts
                    data = [{"object": "embedding", "index": i, "embedding": v}
                            for i, v in enumerate(server.embed_fn(list(texts)))]
                    self._send(200, {"object": "list", "data": data, "model": body.get("model", "")})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = server.chat_replies.popleft() if server.chat_replies else server.default_reply
                if reply is None:
                    self._send(500, {"error": {"message": "no scripted reply left"}})
                    return
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.raw is not None:
                    self._send_bytes(reply.status, reply.raw)
                    return
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.content or "scripted error"}})
                    return
                message: dict[str, Any] = {"role": "assistant", "content": reply.content}
                if reply.tool_calls is not None:
                    message = {"role": "assistant", "content": reply.content or None, "tool_calls": reply.tool_calls}
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                                 "message": message}],
                    "usage": reply.usage,
                })

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self._send_bytes(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"))

            def _send_bytes(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply | str) -> None:
        for r in replies:
            self.chat_replies.append(Reply(content=r) if isinstance(r, str) else r)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].rstrip("/").endswith("/chat/completions")]

    def start(self) -> "ScriptedOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
