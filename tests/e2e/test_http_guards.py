"""The server's guards over real HTTP (uvicorn on a loopback port, httpx): a busy server answers
503 with Retry-After and loses nothing, Host/Origin checks (DNS rebinding), /metrics keeps user ids
to admin scrapes, a chunked body over the limit is a 413, request types are strict, a NUL byte in a
tool path is a clear 4xx without a traceback."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memfold import Memory
from memfold.server import guards
from memfold.server.app import create_app
from memfold.server.guards import WorkGate
from memfold.server.keys import KeyStore

from ..support.live_server import LiveServer


def _serve(root: Path, embedder, config: str = "", **kw) -> Iterator[tuple[LiveServer, Memory, KeyStore]]:
    root.mkdir(parents=True, exist_ok=True)
    if config:
        (root / "config.toml").write_text(config, encoding="utf-8")
    mem = Memory(root=root, embedder=embedder)
    embedder.embed(["loaded before the clock of any request starts"])
    try:
        with LiveServer(create_app(mem, **kw)) as s:
            yield s, mem, KeyStore(mem.index)
    finally:
        mem.close()


@pytest.fixture
def live(root: Path, embedder):
    yield from _serve(root, embedder)


def _client(s: LiveServer, key: str | None = None, **headers: str) -> httpx.Client:
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.Client(base_url=s.url, headers=headers, timeout=60)


# ---- a cap on the work at once ---------------------------------------------------------------------
def test_a_busy_server_answers_503_with_retry_after_and_loses_no_write(root: Path, embedder):
    gen = _serve(root, embedder, "[server]\nmax_concurrent = 1\nbusy_wait_seconds = 0.5\n")
    s, mem, keys = next(gen)
    try:
        key = keys.create(["alice"])[0]
        entered, release = threading.Event(), threading.Event()
        real_search = mem.search

        def held_search(*a, **k):  # the one request at work holds its turn until the test lets it go
            entered.set()
            assert release.wait(30)
            return real_search(*a, **k)

        mem.search = held_search  # type: ignore[method-assign]
        first: dict[str, httpx.Response] = {}
        t = threading.Thread(target=lambda: first.setdefault(
            "r", _client(s, key).post("/v1/memories/search", json={"query": "tea"})))
        t.start()
        assert entered.wait(30)
        with _client(s, key) as c:
            busy = c.post("/v1/memories", json={"text": "I keep bees on the roof"})
            assert busy.status_code == 503, busy.text
            assert int(busy.headers["retry-after"]) >= 1
            assert busy.json()["error"]["code"] == "busy" and "max_concurrent" in busy.json()["error"]["message"]
            assert httpx.get(s.url + "/healthz").status_code == 200  # not an API request: not queued
            release.set()
            t.join(30)
            assert first["r"].status_code == 200
            mem.search = real_search  # type: ignore[method-assign]
            # a request that waits less than busy_wait_seconds gets its turn
            done = c.post("/v1/memories", json={"text": "I keep bees on the roof"})
            assert done.status_code == 200, done.text
        assert "bees" not in "".join(r.content for r in mem.get_all("alice")
                                     if r.id not in {m["id"] for m in done.json()["added"]})
        assert [r.content for r in mem.get_all("alice")].count("I keep bees on the roof") == 1
    finally:
        release.set()
        gen.close()


def test_requests_beyond_the_cap_wait_their_turn(root: Path, embedder):
    gen = _serve(root, embedder, "[server]\nmax_concurrent = 2\nbusy_wait_seconds = 60\n")
    s, mem, keys = next(gen)
    try:
        key = keys.create(["alice"])[0]
        results: list[int] = []
        lock = threading.Lock()

        def add(i: int) -> None:
            with _client(s, key) as c:
                r = c.post("/v1/memories", json={"text": f"fact number {i}: the lighthouse keeper owns {i} boats"})
            with lock:
                results.append(r.status_code)

        threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert results == [200] * 8
        assert len(mem.get_all("alice")) == 8
    finally:
        gen.close()


def test_no_wait_still_serves_a_free_turn(root: Path, embedder):
    gen = _serve(root, embedder, "[server]\nmax_concurrent = 1\nbusy_wait_seconds = 0\n")
    s, mem, keys = next(gen)
    try:
        with _client(s, keys.create(["alice"])[0]) as c:
            assert [c.post("/v1/memories/search", json={"query": "tea"}).status_code for _ in range(3)] == [200] * 3
    finally:
        gen.close()


def _trims(s: LiveServer) -> float:
    for fam in text_string_to_metric_families(httpx.get(s.url + "/metrics").text):
        if fam.name == "memfold_memory_trims":
            return sum(x.value for x in fam.samples if x.name.endswith("_total"))
    return 0.0


def test_memory_is_handed_back_once_a_burst_is_over(root: Path, embedder):
    """Requests that ran side by side, then a quiet moment: the worker asks the allocator to return
    its free memory to the system (counted at /metrics); a lone request does not trigger it."""
    gen = _serve(root, embedder)
    s, mem, keys = next(gen)
    try:
        key = keys.create(["alice"])[0]
        before = _trims(s)
        with _client(s, key) as c:  # one request at a time: no burst
            assert c.post("/v1/memories/search", json={"query": "tea"}).status_code == 200
        time.sleep(WorkGate.TRIM_AFTER * 2.5)
        assert _trims(s) == before
        both, release = threading.Barrier(3), threading.Event()
        real_search = mem.search

        def held_search(*a, **k):  # two requests at work at once
            both.wait(30)
            assert release.wait(30)
            return real_search(*a, **k)

        mem.search = held_search  # type: ignore[method-assign]
        codes: list[int] = []
        threads = [threading.Thread(target=lambda: codes.append(
            _client(s, key).post("/v1/memories/search", json={"query": "tea"}).status_code)) for _ in range(2)]
        for t in threads:
            t.start()
        both.wait(30)
        release.set()
        for t in threads:
            t.join(30)
        mem.search = real_search  # type: ignore[method-assign]
        assert codes == [200, 200]
        deadline = time.monotonic() + 30
        while _trims(s) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _trims(s) == before + 1
    finally:
        gen.close()


@pytest.mark.parametrize(("config", "applied"), [("", [1]), ("[server]\nmalloc_arenas = 2\n", [2]),
                                               ("[server]\nmalloc_arenas = 0\n", [])])
def test_a_worker_limits_its_malloc_heaps(root: Path, embedder, config: str, applied: list[int]):
    """The request threads of a worker share one C allocator heap unless told otherwise (0: the C
    library's default is left alone)."""
    if guards._malloc_trim() is None:
        pytest.skip("not glibc")
    root.mkdir(parents=True)
    (root / "config.toml").write_text(config, encoding="utf-8")
    guards.ARENAS_SET.clear()
    with Memory(root=root, embedder=embedder) as mem:
        create_app(mem)
    assert guards.ARENAS_SET == applied


@pytest.mark.parametrize("setting", ["max_concurrent = 0", "busy_wait_seconds = -1", "malloc_arenas = -1"])
def test_bad_cap_settings_are_refused(root: Path, embedder, setting: str):
    root.mkdir(parents=True)
    (root / "config.toml").write_text(f"[server]\n{setting}\n", encoding="utf-8")
    with Memory(root=root, embedder=embedder) as mem:
        with pytest.raises(Exception, match=setting.split()[0]):
            create_app(mem)


# ---- Host and Origin -------------------------------------------------------------------------------
def test_a_loopback_server_answers_only_local_names_and_its_own_pages(live):
    s, mem, keys = live
    key = keys.create(["alice"])[0]
    with _client(s, key) as c:
        assert c.get("/v1/whoami").status_code == 200
        for host in ("localhost", f"localhost:{s.port}", f"127.0.0.1:{s.port}"):
            assert c.get("/v1/whoami", headers={"Host": host}).status_code == 200, host
        r = c.get("/v1/whoami", headers={"Host": f"evil.example:{s.port}"})
        assert r.status_code == 421 and r.json()["error"]["code"] == "host_refused"
        assert "allowed_hosts" in r.json()["error"]["message"]
        r = c.post("/v1/memories", json={"text": "I like tea"}, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "origin_refused"
        assert c.post("/v1/memories", json={"text": "I like tea"},
                      headers={"Origin": f"http://127.0.0.1:{s.port}"}).status_code == 200
        assert c.get("/", headers={"Host": "evil.example"}).status_code == 421  # the page too
    assert [r.content for r in mem.get_all("alice")] == ["I like tea"]  # the refused add wrote nothing


def test_allowed_hosts_setting(root: Path, embedder):
    gen = _serve(root, embedder, '[server]\nallowed_hosts = "memory.example.com, [::2]"\n')
    s, mem, keys = next(gen)
    try:
        with _client(s, keys.create(["alice"])[0]) as c:
            assert c.get("/v1/whoami", headers={"Host": "memory.example.com"}).status_code == 200
            assert c.get("/v1/whoami", headers={"Host": "[::2]:80", "Origin": "https://memory.example.com"}
                         ).status_code == 200
            assert c.get("/v1/whoami", headers={"Host": "other.example.com"}).status_code == 421
    finally:
        gen.close()


def test_a_server_on_another_address_checks_names_only_when_told(root: Path, embedder):
    gen = _serve(root, embedder, host="0.0.0.0")
    s, mem, keys = next(gen)
    try:
        with _client(s, keys.create(["alice"])[0]) as c:
            assert c.get("/v1/whoami", headers={"Host": "memory.example.com"}).status_code == 200
    finally:
        gen.close()
    gen = _serve(root, embedder, '[server]\nallowed_hosts = "memory.example.com"\n', host="0.0.0.0")
    s, mem, keys = next(gen)
    try:
        with _client(s, keys.create(["alice"])[0]) as c:
            assert c.get("/v1/whoami", headers={"Host": "memory.example.com"}).status_code == 200
            assert c.get("/v1/whoami", headers={"Host": "127.0.0.1"}).status_code == 421
    finally:
        gen.close()


# ---- /metrics --------------------------------------------------------------------------------------
def _memories_samples(text: str) -> list[dict[str, str]]:
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    return [s.labels for s in fams["memfold_memories"].samples]


def _namespaces(text: str) -> float:
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    return fams["memfold_namespaces"].samples[0].value


def test_metrics_name_namespaces_only_for_an_admin_scrape(live):
    s, mem, keys = live
    writer = keys.create(["jane.doe"])[0]
    admin = keys.create(["*"], "admin")[0]
    with _client(s, writer) as c:
        assert c.post("/v1/memories", json={"text": "I like oolong tea"}).status_code == 200
    anonymous = httpx.get(s.url + "/metrics").text
    assert "jane.doe" not in anonymous
    assert all("user_id" not in labels for labels in _memories_samples(anonymous))
    assert sum(f.samples[0].value for f in text_string_to_metric_families(anonymous)
               if f.name == "memfold_memories") >= 1
    assert _namespaces(anonymous) == 1
    assert "jane.doe" not in httpx.get(s.url + "/metrics", headers={"Authorization": f"Bearer {writer}"}).text
    assert httpx.get(s.url + "/metrics", headers={"Authorization": "Bearer mfk_nope_nope"}).status_code == 401
    full = httpx.get(s.url + "/metrics", headers={"Authorization": f"Bearer {admin}"}).text
    assert {"user_id": "jane.doe", "memory_type": "preference"} in _memories_samples(full)

    # a namespace created after the server started is counted (and named to the admin) at once
    with _client(s, keys.create(["newcomer"])[0]) as c:
        assert c.post("/v1/memories", json={"text": "My cat is called Miso"}).status_code == 200
    assert _namespaces(httpx.get(s.url + "/metrics").text) == 2
    full = httpx.get(s.url + "/metrics", headers={"Authorization": f"Bearer {admin}"}).text
    assert "newcomer" in {labels.get("user_id") for labels in _memories_samples(full)}


def test_metrics_namespaces_setting(root: Path, embedder):
    gen = _serve(root, embedder, "[server]\nmetrics_namespaces = true\n")
    s, mem, keys = next(gen)
    try:
        mem.add("I like oolong tea", "jane.doe")
        assert "jane.doe" in httpx.get(s.url + "/metrics").text
    finally:
        gen.close()


# ---- smaller HTTP items ----------------------------------------------------------------------------
def test_a_chunked_body_over_the_limit_is_413(root: Path, embedder):
    gen = _serve(root, embedder, "[server]\nmax_body_bytes = 1000\n")
    s, mem, keys = next(gen)
    try:
        key = keys.create(["alice"])[0]

        def chunks() -> Iterator[bytes]:
            yield b'{"text": "'
            for _ in range(20):
                yield b"a" * 100
            yield b'"}'

        with _client(s, key, **{"Content-Type": "application/json"}) as c:
            r = c.post("/v1/memories", content=chunks())
            assert "content-length" not in r.request.headers  # really sent chunked
            assert r.status_code == 413, r.text
            assert r.json()["error"]["code"] == "body_too_large" and "max_body_bytes" in r.json()["error"]["message"]
            assert c.post("/v1/memories", json={"text": "a short one"}).status_code == 200
        assert [r.content for r in mem.get_all("alice")] == ["a short one"]
    finally:
        gen.close()


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/memories/search", {"query": "tea", "limit": "5"}, "limit"),
    ("/v1/memories/search", {"query": "tea", "limit": 5.5}, "limit"),
    ("/v1/memories/search", {"query": 5}, "query"),
    ("/v1/memories/search", {"query": "tea", "include_episodic": "yes"}, "include_episodic"),
    ("/v1/memories", {"text": "tea", "importance": "0.5"}, "importance"),
    ("/v1/memories", {"text": "tea", "infer": 1}, "infer"),
    ("/v1/memories/forget", {"query": "tea", "dry_run": "false"}, "dry_run"),
])
def test_request_values_of_another_type_are_refused(live, path: str, body: dict, field: str):
    s, mem, keys = live
    with _client(s, keys.create(["alice"])[0]) as c:
        r = c.post(path, json=body)
        assert r.status_code == 422, r.text
        assert r.json()["error"]["field"] == field
        assert c.post("/v1/memories/search", json={"query": "tea", "limit": 5}).status_code == 200
        assert c.post("/v1/memories", json={"text": "I like green tea", "importance": 1}).status_code == 200


@pytest.mark.parametrize(("tool", "args"), [
    ("memory_read", {"path": "MEMORY\x00.md"}),
    ("memory_edit", {"path": "memory/202501/20250101\x00.md", "old_text": "a", "new_text": "b"}),
])
def test_a_nul_byte_in_a_tool_path_is_a_clear_4xx(live, caplog, tool: str, args: dict):
    s, mem, keys = live
    caplog.set_level(logging.INFO)
    with _client(s, keys.create(["alice"])[0]) as c:
        r = c.post(f"/v1/tools/{tool}", json=args)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "path_refused" and "control character" in r.json()["error"]["message"]
    assert "Traceback" not in r.text and "Traceback" not in caplog.text
    assert not [rec for rec in caplog.records if rec.exc_info]
