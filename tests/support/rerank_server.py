"""A scripted re-ranker for tests: a real local HTTP server speaking the ``/rerank`` shape
(POST {model, query, documents, top_n} → {"results": [{"index", "relevance_score"}]}).

By default it scores each document by the words it shares with the query; a test can queue
raw answers (bodies, status codes, delays) instead. Every request is recorded."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class RerankReply:
    body: Any = None  # sent as JSON (bytes: verbatim); None: the word-overlap scores
    status: int = 200
    delay: float = 0.0


def overlap_scores(query: str, documents: list[str]) -> dict[str, Any]:
    """The default answer: each document scored by the query words it holds, best first."""
    words = set(query.lower().replace("?", " ").split())
    scored = [(len(words & set(d.lower().replace(".", " ").split())), i) for i, d in enumerate(documents)]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return {"results": [{"index": i, "relevance_score": float(s)} for s, i in scored],
            "usage": {"total_tokens": sum(len(d.split()) for d in documents)}}


class ScriptedRerankServer:
    def __init__(self) -> None:
        self.replies: deque[RerankReply] = deque()
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if not self.path.rstrip("/").endswith("/rerank"):
                    return self._send(404, b'{"error": "no route"}')
                reply = server.replies.popleft() if server.replies else RerankReply()
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if reply.body is not None else overlap_scores(body["query"], body["documents"])
                self._send(reply.status, payload if isinstance(payload, bytes) else json.dumps(payload).encode())

            def _send(self, status: int, data: bytes) -> None:
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
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1/rerank"

    def script(self, *replies: RerankReply) -> None:
        self.replies.extend(replies)

    def start(self) -> "ScriptedRerankServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
