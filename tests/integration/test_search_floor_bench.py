"""``benchmarks/search_floor.py`` end to end, small: every variant (the defaults down to every optional
search stage off, ``mem0_compare.FLOOR_POLICY``) is a valid policy and is asked every query; with the
cache on and off (no timed assertions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "search_floor.py"


@pytest.mark.parametrize("cache", ["memory", "off"])
def test_every_variant_is_measured(tmp_path: Path, cache: str) -> None:
    env = {**os.environ, "MEMFOLD_CACHE__BACKEND": cache}
    res = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path / "store"), "--n", "80", "--queries", "6"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout)
    assert report["cache"] == cache and report["n"] == 80 and report["queries"] == 6
    assert list(report["after_embedding_cpu_ms"]) == ["defaults", "feedback off", "feedback and speaker mask off",
                                                      "every optional stage off"]
    assert report["embedding_cpu_ms"] > 0
