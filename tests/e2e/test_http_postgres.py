"""The HTTP API over a shared PostgreSQL index: two servers (as two workers or two machines would
be) serve the same data and keys; concurrent searches on both never deadlock on the access
statistics they update."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from memfold import Memory
from memfold.config import load_settings
from memfold.models import utcnow
from memfold.server.app import create_app
from memfold.server.keys import KeyStore

from ..support.hash_embedder import HashEmbedder
from ..support.live_server import LiveServer


def pg_memory(root: Path, dsn: str) -> Memory:
    settings = load_settings(root, index={"backend": "postgres", "dsn": dsn})
    return Memory(settings=settings, embedder=HashEmbedder(), policy={"dedupe_threshold": 0.99})


def test_two_servers_share_data_keys_and_revocation(pg_dsn: str, tmp_path: Path):
    root = tmp_path / "ws"
    m1, m2 = pg_memory(root, pg_dsn), pg_memory(root, pg_dsn)
    try:
        key, info = KeyStore(m1.index).create(["alice"], "write")
        with LiveServer(create_app(m1)) as s1, LiveServer(create_app(m2)) as s2:
            h = {"Authorization": f"Bearer {key}"}
            added = httpx.post(s1.url + "/v1/memories", headers=h, json={"text": "我家的狗叫豆豆"}).json()["added"][0]
            got = httpx.get(f"{s2.url}/v1/memories/{added['id']}", headers=h)
            assert got.status_code == 200 and got.json()["content"] == "我家的狗叫豆豆"
            httpx.post(s2.url + "/v1/sessions", headers=h, json={"session_id": "s", "agent_id": "a"})
            httpx.post(s2.url + "/v1/sessions/s/messages", headers=h, json={"role": "user", "content": "你好"})
            assert httpx.get(s1.url + "/v1/sessions/s", headers=h).json()["messages"][0]["content"] == "你好"
            KeyStore(m2.index).revoke(info.key_id)
            assert httpx.get(s1.url + "/v1/whoami", headers=h).status_code == 401
            assert httpx.get(s2.url + "/v1/whoami", headers=h).status_code == 401
    finally:
        m1.close()
        m2.close()


def test_access_statistics_of_concurrent_searches_never_deadlock(pg_dsn: str, tmp_path: Path):
    """Two connections update the same rows' access counts in opposite rank orders (two searches
    ranking the same memories differently); rows are locked in id order, so neither waits on the other
    in a cycle and PostgreSQL never aborts one as a deadlock."""
    root = tmp_path / "ws"
    m1, m2 = pg_memory(root, pg_dsn), pg_memory(root, pg_dsn)
    try:
        ids = [r.id for i in range(40) for r in m1.add(f"fact number {i} about topic {i * 7}", "u", infer=False).added]
        assert len(ids) == 40
        failures: list[BaseException] = []

        def hammer(mem: Memory, order: list[str]) -> None:
            try:
                for _ in range(40):
                    mem.index.record_access("u", order, utcnow())
                    mem.index.flush_access()  # each search's accesses written in a transaction of their own
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=hammer, args=(m1, ids)), threading.Thread(target=hammer, args=(m2, ids[::-1]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures, failures[0]
        assert {r.access_count for r in m1.index.get("u", ids)} == {80}
    finally:
        m1.close()
        m2.close()
