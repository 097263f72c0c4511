"""benchmarks/report.py draws the charts from the benchmarks' JSON, each stating its command, date and machine."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "benchmarks" / "report.py"


def test_every_results_file_states_where_its_numbers_come_from():
    files = sorted((REPO / "benchmarks" / "results").glob("*.json"))
    assert len(files) >= 6
    for f in files:
        prov = json.loads(f.read_text(encoding="utf-8"))["provenance"]
        assert prov["command"] and prov["date"][:4].isdigit() and "cores" in prov["machine"], f.name


def test_the_charts_are_drawn_from_the_results_with_their_provenance(tmp_path: Path):
    out = subprocess.run([sys.executable, str(REPORT), "--out", str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    charts = {p.stem: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.svg")}
    assert set(charts) == {"quality", "latency", "mem0", "relevance-floor"}
    latency = json.loads((REPO / "benchmarks" / "results" / "search_latency.json").read_text(encoding="utf-8"))
    assert latency["provenance"]["date"] in charts["latency"]
    assert "memfold eval locomo" in charts["quality"] and "mem0_compare.py" in charts["mem0"]
    # a number from the results file is what the chart shows
    locomo = json.loads((REPO / "benchmarks" / "results" / "quality_locomo.json").read_text(encoding="utf-8"))
    assert f"{locomo['result']['recall']['10']:.2f}" in charts["quality"]


def test_wrap_records_the_command_date_and_machine(tmp_path: Path):
    src = tmp_path / "out.json"
    src.write_text(json.dumps({"recall": {"5": 0.5}}))
    dest = tmp_path / "result.json"
    out = subprocess.run([sys.executable, str(REPORT), "wrap", str(src), str(dest), "--command", "memfold eval x"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(dest.read_text())
    assert data["result"] == {"recall": {"5": 0.5}}
    assert data["provenance"]["command"] == "memfold eval x" and "cores" in data["provenance"]["machine"]
