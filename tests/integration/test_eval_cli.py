"""``memfold bench`` and ``memfold eval`` through the real command line (no timed assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import run_cli


def test_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    res = run_cli(tmp_path / "ws", "bench", "--n", "200", "--json", "--queries", "10", "--out", str(out))
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report == json.loads(out.read_text(encoding="utf-8"))
    run = report["runs"][0]
    assert run["n"] == 200 and run["stored"] == 200
    for key in ("search_ms", "search_no_embed_ms", "build_context_ms"):
        assert run[key]["p50"] > 0 and run[key]["p50"] <= run[key]["p95"] <= run[key]["p99"]
    assert run["ingest_batch_per_s"] > 0 and run["ingest_single_turn_per_s"] > 0
    # the model alone re-ran the texts the ingest embedded: the ingest cannot be cheaper than that
    assert run["model_alone_seconds"] > 0 and run["ingest_over_model"] == pytest.approx(
        run["ingest_batch_seconds"] / run["model_alone_seconds"], rel=0.05)
    assert run["cold_start"]["seconds"] > 0 and run["index_bytes"] > 0 and run["peak_rss_mb"] > 0
    assert (tmp_path / "ws" / "bench-200" / "index.db").exists()  # --root keeps the workspace


def test_bench_maintain_smoke_and_its_size_check(tmp_path: Path) -> None:
    out = tmp_path / "maintain.json"
    res = run_cli(tmp_path / "ws", "bench", "--maintain", "--n", "300", "--json", "--out", str(out))
    assert res.returncode == 0, res.stderr
    run = json.loads(res.stdout)["runs"][0]
    assert run["n"] == 300 and run["dry_run_seconds"] > 0 and run["total_seconds"] > 0
    assert run["jobs"]["tidy"]["status"] == "done" and run["jobs"]["tidy"]["archived"] > 0  # done todos, duplicates
    assert run["memory_md_chars_after"] < run["memory_md_chars_before"]
    assert (tmp_path / "ws" / "maintain-300").is_dir()  # --root keeps the workspace
    res = run_cli(tmp_path / "ws", "bench", "--maintain", "--n", "5")
    assert res.returncode != 0 and "--n needs sizes of at least 10 for --maintain, got [5]" in res.stderr


def test_eval_cli_errors_name_the_problem(tmp_path: Path) -> None:
    res = run_cli(tmp_path / "ws", "eval", "locomo", str(tmp_path / "nope.json"))
    assert res.returncode == 1 and "does not exist" in res.stderr
    res = run_cli(tmp_path / "ws", "eval", "madial", str(tmp_path), "--k", "x")
    assert res.returncode == 1 and "--k" in res.stderr
    res = run_cli(tmp_path / "ws", "bench", "--n", "0")
    assert res.returncode == 1 and "--n" in res.stderr
