"""The HTTP API fuzzed from its own OpenAPI description (schemathesis): every route, with bodies
and parameters that fit the schema and with ones that do not, against a real server. No answer
is a 500 or carries a stack trace, the server logs no exception, and no acknowledged write is
lost (every memory an add answered with is still there, or its history says what removed it; a
namespace the key does not cover is untouched). The run is bounded: a few examples per route and
mode, no shrinking."""

from __future__ import annotations

import logging
import threading
from typing import Any

import httpx
import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402  (after the importorskip)
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

from memfold import Memory  # noqa: E402
from memfold.server.app import create_app  # noqa: E402
from memfold.server.keys import KeyStore  # noqa: E402

from ..support.live_server import LiveServer  # noqa: E402

EXAMPLES = {GenerationMode.POSITIVE: 6, GenerationMode.NEGATIVE: 4}  # per route: about 40 s on 2 busy cores
FUZZ = "fuzz"


class _Exceptions(logging.Handler):
    """Every log record that carries an exception (a traceback in the server's log)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[logging.LogRecord] = []
        self.lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            with self.lock:
                self.seen.append(record)


def test_fuzz_every_route_from_the_openapi_description(root, embedder):
    kept = "I keep the spare key under the blue flowerpot"
    logs = _Exceptions()
    watched = [logging.getLogger(n) for n in ("memfold", "uvicorn", "uvicorn.error", "fastapi")]
    for lg in watched:
        lg.addHandler(logs)
    mem = Memory(root=root, embedder=embedder)
    try:
        keep_id = mem.add(kept, "other").added[0].id
        mem.add("I like green tea", FUZZ)
        key = KeyStore(mem.index).create([FUZZ, "default"], "write")[0]
        acknowledged: dict[str, str] = {}  # memory id -> namespace, from every add that answered 200
        problems: list[str] = []
        with LiveServer(create_app(mem)) as s:
            schema = schemathesis.openapi.from_url(s.url + "/openapi.json")
            operations = [r.ok() for r in schema.get_all_operations()]
            assert len([op for op in operations if op.path.startswith("/v1/")]) >= 25

            def check(case: Any) -> None:
                r = case.call(base_url=s.url, headers={"Authorization": f"Bearer {key}"})
                where = f"{case.method} {case.formatted_path} {case.query} {str(case.body)[:200]!r}"
                if r.status_code >= 500 or "Traceback" in r.text:
                    problems.append(f"{where}: {r.status_code} {r.text[:300]}")
                ctype = r.headers.get("content-type") or [""]
                ctype = ctype[0] if isinstance(ctype, list) else ctype  # schemathesis keeps each header's values in a list
                if r.status_code >= 400 and ctype.startswith("application/json"):
                    body = r.json()
                    if not (isinstance(body, dict) and isinstance(body.get("error"), dict)
                            and "message" in body["error"]):
                        problems.append(f"{where}: an error without the error shape: {r.text[:300]}")
                if case.method == "POST" and case.path == "/v1/memories" and r.status_code == 200:
                    uid = (case.query or {}).get("user_id") or FUZZ
                    for m in r.json().get("added", []):
                        acknowledged[m["id"]] = m.get("user_id", uid)

            for op in operations:
                has_user = any(p.name == "user_id" for p in op.query)
                for mode, n in EXAMPLES.items():
                    fixed = {"user_id": FUZZ} if has_user and mode is GenerationMode.POSITIVE else None
                    strategy = op.as_strategy(generation_mode=mode, query=fixed)

                    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
                              suppress_health_check=list(HealthCheck), derandomize=True)
                    @given(case=strategy)
                    def run(case: Any) -> None:
                        check(case)

                    try:
                        run()
                    except Unsatisfiable:  # nothing of this route can be made invalid (no parameter, no body)
                        assert mode is GenerationMode.NEGATIVE, f"{op.method} {op.path}"
            assert not problems, "\n".join(problems[:10])
            # nothing acknowledged is lost: still there, or its history names what removed it
            lost = []
            for rid, uid in acknowledged.items():
                try:
                    mem.get(rid, uid)
                    continue
                except Exception:
                    pass
                actions = [e.action for e in mem.history(rid, uid)]
                if actions in ([], ["add"]):
                    lost.append(rid)
            assert not lost
            assert [r.content for r in mem.get_all("other")] == [kept] and mem.get(keep_id, "other")
            assert httpx.get(s.url + "/healthz").status_code == 200
        assert not logs.seen, [f"{r.name}: {r.getMessage()}" for r in logs.seen[:5]]
    finally:
        for lg in watched:
            lg.removeHandler(logs)
        mem.close()
