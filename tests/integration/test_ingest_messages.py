"""Conversation messages that used to abort or vanish: a turn over the content limit is kept in
pieces carrying its turn id; an unknown role or a malformed message is reported by its index
and skipped while the other messages are stored (API and ``memfold ingest``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import InvalidInputError
from memfold.limits import MAX_CONTENT_CHARS
from memfold.models import EPISODIC

from ..conftest import run_cli

# about 35,000 characters of distinct sentences: over the 20,000-character limit of one turn
LONG = " ".join(f"On day {d} of the trip I walked through district {d} and noted its bakery number {d * 7}."
                for d in range(380))


def messages() -> list:
    return [
        {"role": "user", "content": "My sister Anna lives in Lisbon.", "turn_id": "t1"},
        {"role": "robot", "content": "beep boop", "turn_id": "t2"},
        {"role": "user", "turn_id": "t3"},  # no content
        "not a message",
        {"role": "user", "content": LONG, "turn_id": "t5"},
    ]


def test_long_turns_are_split_and_bad_messages_reported(mem: Memory):
    assert len(LONG) > MAX_CONTENT_CHARS
    res = mem.add(messages(), "alice", infer=False)
    turns = [r for r in res.added if r.file == EPISODIC]
    assert [r.source_ids for r in turns] == [("t1",), ("t5",), ("t5",)]
    pieces = [r.content for r in turns[1:]]
    assert all(len(p) <= MAX_CONTENT_CHARS for p in pieces)
    assert " ".join(pieces) == LONG and pieces[0].endswith(".")  # cut at a sentence end, nothing lost
    skipped = " | ".join(res.skipped)
    assert "message 1 (t2): unknown role 'robot'" in skipped
    assert "message 2: needs string fields 'role' and 'content'" in skipped
    assert "message 3: must be an object" in skipped
    assert "beep" not in " ".join(r.content for r in mem.get_all("alice"))
    # a call whose every message is malformed is still refused, naming the message
    with pytest.raises(InvalidInputError, match="message 0"):
        mem.add([{"role": "user"}], "alice")


def test_cli_ingest_keeps_long_messages_and_names_the_skipped_ones(root: Path, tmp_path: Path):
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(messages()), encoding="utf-8")
    r = run_cli(root, "ingest", str(conv), "--user", "u", "--no-extract")
    assert r.returncode == 0, r.stderr
    assert "u: 3 added" in r.stdout and "3 skipped" in r.stdout
    assert "message 1 (t2): unknown role 'robot'" in r.stderr and "message 3" in r.stderr
    hits = json.loads(run_cli(root, "search", "bakery number 2604 district 372", "--user", "u", "--json").stdout)
    assert hits and hits[0]["source_ids"] == ["t5"] and "district 372" in hits[0]["content"]
