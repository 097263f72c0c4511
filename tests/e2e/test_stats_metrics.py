"""``memfold stats --metrics`` run from a shell shows the metrics of the ``memfold serve`` and
``memfold mcp`` processes running on the same workspace, and says so plainly when none runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

from ..conftest import run_cli
from .test_serve_cli import start, stop


def metrics(root: Path) -> dict:
    out = run_cli(root, "stats", "--metrics", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def wait_for(cond, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def test_stats_metrics_shows_a_running_server_and_says_when_nothing_runs(root: Path):
    quiet = run_cli(root, "stats", "--metrics")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.startswith(f"no memfold serve or memfold mcp process is running on {root}")
    assert "p99 ms" not in quiet.stdout  # no table of zeros
    assert metrics(root)["running"] is False

    proc, url = start(root, "--no-auth")
    try:
        with httpx.Client(base_url=url, timeout=60) as c:
            for text in ("My sister Lena lives in Porto", "我每周三晚上去游泳"):
                assert c.post("/v1/memories", params={"user_id": "alice"}, json={"text": text}).status_code == 200
            for q in ("Lena", "游泳", "sister"):
                assert c.post("/v1/memories/search", params={"user_id": "alice"}, json={"query": q}).status_code == 200
        got = wait_for(lambda: (m := metrics(root))["operations"]["search"]["count"] >= 3 and m)
        assert got, metrics(root)
        assert got["running"] is True and [p["kind"] for p in got["processes"]] == ["serve"]
        assert got["operations"]["search"]["count"] == 3 and got["operations"]["add"]["count"] == 2
        assert got["scope"].startswith(f"1 running process of {root}: memfold serve (pid ")
        shown = run_cli(root, "stats", "--metrics").stdout
        assert shown.startswith("metrics of 1 running process") and "p99 ms" in shown
    finally:
        stop(proc)
    after = metrics(root)  # the server stopped: its file is gone, nothing is shown as running
    assert after["running"] is False and after["processes"] == [] and after["operations"]["search"]["count"] == 0
    assert not list((root / ".metrics").glob("*.json"))


def test_stats_metrics_shows_a_running_mcp_process(tmp_path: Path, embedder):
    mcp = pytest.importorskip("mcp")
    root = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "memfold", "--root", str(root), "mcp",
                                                                     "--user", "alice"], env=env)

    async def main() -> dict:
        async with mcp.Client(params) as client:
            await client.call_tool("memory_append", {"text": "My bike is a red Gazelle"})
            for q in ("bike", "Gazelle"):
                await client.call_tool("memory_search", {"query": q})
            return await anyio.to_thread.run_sync(
                lambda: wait_for(lambda: (m := metrics(root))["operations"]["search"]["count"] >= 2 and m))

    got = anyio.run(main)
    assert got, metrics(root)
    assert [p["kind"] for p in got["processes"]] == ["mcp"] and got["operations"]["search"]["count"] == 2
    assert wait_for(lambda: not list((root / ".metrics").glob("*.json")), 15)  # gone when the client closed it


def test_files_of_processes_that_are_gone_are_not_counted(root: Path):
    folder = root / ".metrics"
    folder.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    text = ('# TYPE memfold_operation_duration_seconds histogram\n'
            'memfold_operation_duration_seconds_bucket{le="+Inf",operation="search",outcome="ok"} 5.0\n'
            'memfold_operation_duration_seconds_count{operation="search",outcome="ok"} 5.0\n'
            'memfold_operation_duration_seconds_sum{operation="search",outcome="ok"} 0.1\n')
    doc = {"kind": "serve", "pid": int(dead.stdout), "host": socket.gethostname(), "metrics": text}
    (folder / "gone.json").write_text(json.dumps(doc), encoding="utf-8")
    got = metrics(root)
    assert got["running"] is False and got["operations"]["search"]["count"] == 0
    assert not (folder / "gone.json").exists()  # removed: the folder holds running processes only
