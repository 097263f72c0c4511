"""Live metrics: the values after a known sequence of calls through ``Memory`` (with the scripted
LLM), the Prometheus exposition read back by prometheus_client's own parser, percentiles from the
histogram buckets, several worker processes added up through PROMETHEUS_MULTIPROC_DIR, and
``memfold stats --metrics``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import InvalidInputError
from memfold.metrics import exposition, prepare_multiprocess, summary
from memfold.metrics.exposition import percentile

from ..conftest import run_cli
from ..support.openai_server import Reply

REPO = Path(__file__).resolve().parents[2]


class CountingEmbedder:
    """The bundled embedder, counting the calls made to it."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.calls = inner, inner.name, inner.dim, 0

    def embed(self, texts):
        self.calls += 1
        return self.inner.embed(texts)


def _delta(before: dict, after: dict, op: str, key: str = "count") -> int:
    return after["operations"][op][key] - before["operations"][op][key]


def test_metrics_after_a_known_sequence_of_calls(root, embedder, llm_server):
    counting = CountingEmbedder(embedder)
    settings = load_settings(root, llm=dict(provider="openai", base_url=llm_server.base_url, model="scripted",
                                            timeout=2.0, max_retries=0))
    before = summary()
    with Memory(settings=settings, embedder=counting) as mem:
        mem.add("I like green tea in the morning", infer=False)
        mem.add("My dog is called Rex", infer=False, importance=0.9)
        llm_server.script(Reply(json.dumps({"memories": [{"memory_type": "fact", "content": "The user lives in Oslo",
                                                          "structured_data": {}, "importance_score": 0.7}]}),
                                usage={"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}))
        mem.add([{"role": "user", "content": "I moved to Oslo last year."}])
        for q in ("tea", "dog", "Oslo"):
            mem.search(q)
        with pytest.raises(InvalidInputError):
            mem.search("   ")
        mem.build_context("what do I drink?")
        mem.reindex()  # a maintenance job
        after = summary(mem)
        stats = mem.stats()
    assert _delta(before, after, "add") == 3
    assert _delta(before, after, "search") == 4 and _delta(before, after, "search", "errors") == 1
    assert _delta(before, after, "build_context") == 1
    jobs_before = before["maintenance_jobs"].get("reindex", {"count": 0})["count"]
    assert after["maintenance_jobs"]["reindex"]["count"] - jobs_before == 1
    assert _delta(before, after, "embed") == counting.calls > 0
    n_llm = len(llm_server.chat_requests())
    assert n_llm == 1 and _delta(before, after, "llm") == n_llm
    assert after["llm_tokens"]["prompt"] - before["llm_tokens"]["prompt"] == 120
    assert after["llm_tokens"]["completion"] - before["llm_tokens"]["completion"] == 30
    s = after["operations"]["search"]
    assert 0 < s["p50_ms"] <= s["p95_ms"] <= s["p99_ms"]
    # the repeated-query cache: each search looked up keyword and vector results once
    q = after["cache"]["by_kind"]["query"]
    assert q["hit"] + q["miss"] >= 3
    mems = after["memories"]["default"]
    assert mems["by_type"] == stats["by_type"] and {"preference": 1, "fact": 2}.items() <= mems["by_type"].items()
    assert mems["avg_importance"] == stats["avg_importance"]


def test_exposition_parses_and_matches_the_index(mem):
    mem.add("I like green tea", infer=False)
    mem.add("My dog is called Rex", infer=False, importance=0.9)
    mem.search("tea")
    body, ctype = exposition(mem)
    assert ctype.startswith("text/plain") and "version=" in ctype
    fams = {f.name: f for f in text_string_to_metric_families(body.decode("utf-8"))}
    ops = fams["memfold_operation_duration_seconds"]
    counts = {(s.labels["operation"], s.labels["outcome"]): s.value for s in ops.samples if s.name.endswith("_count")}
    assert counts[("search", "ok")] == summary()["operations"]["search"]["count"] - \
        summary()["operations"]["search"]["errors"]
    buckets = [s for s in ops.samples if s.name.endswith("_bucket") and s.labels["operation"] == "search"
               and s.labels["outcome"] == "ok"]
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == counts[("search", "ok")]
    by_type = {s.labels["memory_type"]: s.value for s in fams["memfold_memories"].samples
               if s.labels["user_id"] == "default"}
    stats = mem.stats()
    assert by_type == {k: float(v) for k, v in stats["by_type"].items()}
    [imp] = [s.value for s in fams["memfold_average_importance"].samples if s.labels["user_id"] == "default"]
    assert imp == pytest.approx(stats["avg_importance"])
    assert "memfold_cache_requests" in fams and "memfold_llm_tokens" in fams


def test_percentiles_from_buckets():
    # 90 observations in (0.5 ms, 1 ms], 10 in (40 ms, 50 ms]: interpolated within the bucket
    buckets = [(0.0005, 0.0), (0.001, 90.0), (0.04, 90.0), (0.05, 100.0), (float("inf"), 100.0)]
    assert percentile(buckets, 0.5) == pytest.approx(0.0005 + 0.0005 * 50 / 90)
    assert percentile(buckets, 0.95) == pytest.approx(0.045)
    assert percentile(buckets, 0.99) == pytest.approx(0.049)
    assert percentile([(0.1, 0.0), (float("inf"), 0.0)], 0.5) is None
    assert percentile([(0.1, 0.0), (float("inf"), 4.0)], 0.5) == 0.1  # beyond the last bound: that bound


WORKER = """
import sys
sys.path.insert(0, {repo!r})
from memfold import Memory
from tests.support.hash_embedder import HashEmbedder
with Memory(root={root!r}, embedder=HashEmbedder()) as m:
    m.add("worker {n} likes tea number {n}", infer=False)
    for q in ("tea", "coffee", "worker"):
        m.search(q)
"""


def test_several_worker_processes_add_up_and_stats_metrics_shows_them(tmp_path):
    folder = tmp_path / "prom"
    folder.mkdir()
    (folder / "histogram_4242.db").write_bytes(b"left by an earlier run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    saved = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    try:
        assert prepare_multiprocess(folder) == str(folder) and os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(folder)
    finally:
        os.environ.pop("PROMETHEUS_MULTIPROC_DIR")
        if saved is not None:
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = saved
    assert list(folder.iterdir()) == []  # an earlier run's values are not added in
    env["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    root = tmp_path / "ws"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER.format(repo=str(REPO), root=str(root), n=n)], env=env)
             for n in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    probe = ("from memfold.metrics import exposition; import sys; "
             "sys.stdout.write(exposition()[0].decode())")
    text = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    counts = {(s.labels["operation"], s.labels["outcome"]): s.value
              for s in fams["memfold_operation_duration_seconds"].samples if s.name.endswith("_count")}
    assert counts[("search", "ok")] == 6 and counts[("add", "ok")] == 2
    # the command line reads the workers' metrics from the shared folder (its own workspace: bundled embedder)
    cli = run_cli(tmp_path / "cli", "stats", "--metrics", "--json", env={"PROMETHEUS_MULTIPROC_DIR": str(folder)})
    assert cli.returncode == 0, cli.stderr
    got = json.loads(cli.stdout)
    assert got["scope"].startswith("all processes") and got["operations"]["search"]["count"] == 6
    assert got["operations"]["add"]["count"] == 2
    assert "memories" not in got and "no memfold workspace" in cli.stderr  # none made: the workers' metrics only
    assert not (tmp_path / "cli").exists()
    text_out = run_cli(tmp_path / "cli", "stats", "--metrics", env={"PROMETHEUS_MULTIPROC_DIR": str(folder)})
    assert text_out.returncode == 0 and "search" in text_out.stdout and "p99 ms" in text_out.stdout
