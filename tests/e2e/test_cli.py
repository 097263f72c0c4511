"""The ``memfold`` command as a user runs it: its ``main()`` in the test process
(tests/e2e/test_cli_process.py starts real processes)."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import run_cli


def _ok(root: Path, *args: str) -> str:
    r = run_cli(root, *args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def test_issue_scenario_through_the_cli(root: Path):
    _ok(root, "init", "--lang", "zh", "--user", "alice")
    assert "## 偏好与习惯" in (root / "alice" / "MEMORY.md").read_text()
    added = json.loads(_ok(root, "add", "我喜欢喝无糖拿铁，大杯", "--type", "preference", "--user", "alice", "--json"))
    latte = added["added"][0]["id"]
    assert "[event] Project A is due on March 15" in _ok(root, "add", "Project A is due on March 15", "--user", "alice")
    hits = json.loads(_ok(root, "search", "咖啡偏好是什么", "--user", "alice", "--json"))
    assert hits[0]["id"] == latte and {"id", "content", "memory_type", "score"} <= hits[0].keys()
    hits = json.loads(_ok(root, "search", "when is project A due", "--user", "alice", "--json"))
    assert hits[0]["content"] == "Project A is due on March 15"
    assert json.loads(_ok(root, "search", "咖啡偏好是什么", "--user", "bob", "--json")) == []
    # rebuild from the files
    for p in root.glob("index.db*"):
        p.unlink()
    assert "alice: 2 memories indexed" in _ok(root, "reindex")
    hits = json.loads(_ok(root, "search", "咖啡偏好是什么", "--user", "alice", "--json"))
    assert hits[0]["content"] == "我喜欢喝无糖拿铁，大杯"
    # a hand edit changes what search returns
    path = root / "alice" / "MEMORY.md"
    path.write_text(path.read_text().replace("Project A is due on March 15", "Project A is due on April 30"))
    hits = json.loads(_ok(root, "search", "when is project A due", "--user", "alice", "--json"))
    assert hits[0]["content"] == "Project A is due on April 30"
    shown = _ok(root, "show", "--user", "alice")
    assert "April 30" in shown and "无糖拿铁" in shown
    got = json.loads(_ok(root, "get", latte, "--user", "alice"))
    assert got["memory_type"] == "preference"
    assert "add" in _ok(root, "history", latte, "--user", "alice")
    stats = json.loads(_ok(root, "stats", "--user", "alice", "--json"))
    assert stats["active"] == 2 and stats["by_type"]["preference"] == 1


def test_secret_is_refused_and_found_in_no_file(root: Path):
    r = run_cli(root, "add", "my password is s3cretPa55word")
    created, error = r.stderr.splitlines()  # the new workspace is named, then the one line of the error
    assert created == f"created a new memfold workspace in {root}"
    assert r.returncode == 1 and "password" in error and error.startswith("error: ")
    _ok(root, "add", "I like hiking")
    for p in root.rglob("*"):
        if p.is_file():
            assert b"s3cretPa55word" not in p.read_bytes(), p


def test_errors_are_one_clear_line(root: Path):
    r = run_cli(root, "get", "nope")
    assert r.returncode == 1 and r.stderr.startswith(f"error: no memfold workspace at {root}")
    assert r.stderr.count("\n") == 1 and not root.exists()
    _ok(root, "init")
    r = run_cli(root, "get", "nope")
    assert r.returncode == 1 and r.stderr.startswith("error: no memory 'nope'")
    r = run_cli(root, "add", "x", "--type", "bogus")
    assert r.returncode == 1 and "unknown memory type 'bogus'" in r.stderr
    r = run_cli(root, "ingest", str(root / "missing.json"))
    assert r.returncode == 1 and "does not exist" in r.stderr
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.toml").write_text("[memory]\nretrieve_limit = 0\n")
    r = run_cli(root, "search", "x")
    assert r.returncode == 1 and "retrieve_limit" in r.stderr


def test_usage_errors_exit_2_without_a_traceback(root: Path):
    for args, expected in ((("nosuch",), "No such command 'nosuch'"),
                           (("search",), "Missing argument"),
                           (("bench", "--bogus"), "No such option: --bogus")):
        r = run_cli(root, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert expected in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_ingest_forget_export_import(root: Path, tmp_path: Path):
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([
        {"role": "user", "content": "My sister Anna lives in Lisbon.", "turn_id": "t1"},
        {"role": "assistant", "content": "Nice city!"},
        {"role": "user", "content": "I prefer window seats on flights.", "turn_id": "t2"},
    ]))
    out = _ok(root, "ingest", str(conv), "--user", "u")
    assert "u: 4 added" in out  # two user turns + the extracted family fact and preference
    hits = json.loads(_ok(root, "search", "where does my sister live", "--user", "u", "--json"))
    assert "Lisbon" in hits[0]["content"] and hits[0]["source_ids"] == ["t1"]
    dump = tmp_path / "dump.jsonl"
    _ok(root, "export", str(dump))
    assert len(dump.read_text().splitlines()) == 4
    assert "forgot" in _ok(root, "forget", "window seats", "--user", "u")
    assert "window" not in (root / "u" / "MEMORY.md").read_text()
    other = tmp_path / "other"
    assert "imported 4 memories" in _ok(other, "import", str(dump))
    hits = json.loads(_ok(other, "search", "flights", "--user", "u", "--json"))
    assert any("window seats" in h["content"] for h in hits)


def test_ingest_locomo_format(root: Path, tmp_path: Path):
    f = tmp_path / "locomo.json"
    f.write_text(json.dumps([{"sample_id": "conv-x", "qa": [], "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a LGBTQ support group yesterday."},
                      {"speaker": "Melanie", "dia_id": "D1:2", "text": "That's great! I painted a sunrise last week."}],
    }}]))
    assert "conv-x: " in _ok(root, "ingest", str(f))
    hits = json.loads(_ok(root, "search", "what did Melanie paint", "--user", "conv-x", "--json"))
    assert hits[0]["source_ids"] == ["D1:2"] and hits[0]["created_at"].startswith("2023-05-08")


def test_demo_runs_offline(root: Path):
    out = _ok(root, "demo")
    assert "无糖拿铁" in out and "refused" in out and "MEMORY.md" in out
