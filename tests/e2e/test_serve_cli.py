"""``memfold serve`` as a user starts it: a subprocess with two worker processes on a loopback
port; keys made and revoked by other ``memfold keys`` processes; ``--no-auth`` only on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ..conftest import run_cli
from ..support.live_server import free_port


def start(root: Path, *args: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    proc = subprocess.Popen([sys.executable, "-m", "memfold", "--root", str(root), "serve", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"memfold serve exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise AssertionError("memfold serve did not answer /healthz")


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def test_two_workers_share_keys_and_data_and_see_a_revocation_at_once(root: Path):
    made = run_cli(root, "keys", "create", "--user", "alice", "--name", "two-workers")
    key = made.stdout.strip().splitlines()[-1]
    proc, url = start(root, "--workers", "2")
    try:
        def fresh(method: str, path: str, **kw) -> httpx.Response:  # a new connection each time: any worker
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
                return c.request(method, path, **kw)

        added = fresh("POST", "/v1/memories", json={"text": "我女儿在学小提琴"}).json()["added"][0]
        assert all(fresh("GET", f"/v1/memories/{added['id']}").status_code == 200 for _ in range(12))
        for _ in range(3):
            fresh("POST", "/v1/memories/search", json={"query": "小提琴"})
        # GET /metrics from any worker adds up both workers' values (PROMETHEUS_MULTIPROC_DIR set by serve)
        for _ in range(6):
            text = httpx.get(url + "/metrics", timeout=30).text
            fams = {f.name: f for f in text_string_to_metric_families(text)}
            counts = {(s.labels["operation"], s.labels["outcome"]): s.value
                      for s in fams["memfold_operation_duration_seconds"].samples if s.name.endswith("_count")}
            assert counts[("add", "ok")] == 1 and counts[("search", "ok")] == 3, counts
        revoked = run_cli(root, "keys", "revoke", key)
        assert revoked.returncode == 0, revoked.stderr
        codes = [fresh("GET", "/v1/whoami").status_code for _ in range(12)]
        assert codes == [401] * 12
    finally:
        err = stop(proc)
    assert "serving" in err and "Traceback" not in err


def test_no_auth_only_on_loopback_and_said_loudly(root: Path):
    refused = run_cli(root, "serve", "--host", "0.0.0.0", "--no-auth")
    assert refused.returncode == 1 and "--no-auth is refused on 0.0.0.0" in refused.stderr
    bad_port = run_cli(root, "serve", "--port", "70000")
    assert bad_port.returncode == 1 and "--port" in bad_port.stderr
    proc, url = start(root, "--no-auth")
    try:
        r = httpx.post(url + "/v1/memories", json={"text": "Ravi prefers aisle seats"}, params={"user_id": "ravi"})
        assert r.status_code == 200 and r.json()["added"][0]["user_id"] == "ravi"
        assert httpx.get(url + "/v1/whoami").json()["scope"] == "admin"
        # no key is checked, so the names are: a page of another site (DNS rebinding) reaches nothing
        r = httpx.post(url + "/v1/memories", json={"text": "the attacker was here"}, params={"user_id": "ravi"},
                       headers={"Host": "rebind.example:80"})
        assert r.status_code == 421 and r.json()["error"]["code"] == "host_refused"
        r = httpx.get(url + "/v1/memories", params={"user_id": "ravi"}, headers={"Origin": "http://rebind.example"})
        assert r.status_code == 403 and "Ravi" not in r.text
        assert "attacker" not in httpx.get(url + "/v1/memory-md", params={"user_id": "ravi"}).text
    finally:
        err = stop(proc)
    assert "NO API KEY IS CHECKED" in err and "WARNING" in err


def test_serve_logs_one_line_per_request_as_json_when_asked(root: Path):
    """``[server] log_format = "json"``: one JSON object per request on stderr (uvicorn's own access
    log is off), with the key's id and neither the key, the namespace nor the memory's words."""
    key = run_cli(root, "keys", "create", "--user", "mira").stdout.strip().splitlines()[-1]
    assert not (root / "config.toml").exists()
    (root / "config.toml").write_text('[server]\nlog_format = "json"\n', encoding="utf-8")
    key_id = key.split("_")[1]
    proc, url = start(root)
    try:
        h = {"Authorization": f"Bearer {key}"}
        assert httpx.post(url + "/v1/memories", headers=h, params={"user_id": "mira"},
                          json={"text": "Mira's passport is in the red drawer"}).status_code == 200
        assert httpx.get(url + "/v1/whoami", headers=h).status_code == 200
        assert httpx.get(url + "/v1/whoami").status_code == 401
    finally:
        err = stop(proc)
    assert key not in err and "passport" not in err and "mira" not in err.lower()
    access = []
    for line in err.splitlines():
        if line.startswith("{"):
            access.append(json.loads(line))
    lines = [(a["method"], a["path"], a["status"], a["key"]) for a in access if a.get("logger") == "memfold.access"
             and a["path"] != "/healthz"]
    assert lines == [("POST", "/v1/memories", 200, key_id), ("GET", "/v1/whoami", 200, key_id),
                     ("GET", "/v1/whoami", 401, "-")], err
    assert all(isinstance(a["ms"], float) for a in access if a.get("logger") == "memfold.access")
    assert "HTTP/1.1" not in err  # no uvicorn access line besides
