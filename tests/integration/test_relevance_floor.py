"""The relevance floor (policy key ``min_score``) through the CLI and the API: a query with nothing
relevant returns nothing and puts nothing into a context; a real hit still comes back."""

from __future__ import annotations

import json
from pathlib import Path

from memfold import Memory
from memfold.engine.read.relevance import coverage, relevance

from ..conftest import run_cli

FACTS = ["I live in Berlin with my wife Anna.", "My favourite food is ramen.",
         "I work as a nurse at the city hospital.", "We adopted a cat named Miso last spring.",
         "我每天早上喝一杯拿铁咖啡。"]


def _workspace(root: Path) -> None:
    for fact in FACTS:
        res = run_cli(root, "add", fact)
        assert res.returncode == 0, res.stderr


def test_cli_nothing_relevant_nothing_returned(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _workspace(root)
    res = run_cli(root, "search", "xyzzy", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == []
    res = run_cli(root, "context", "hello", "--json")
    assert res.returncode == 0, res.stderr
    system = json.loads(res.stdout)[0]["content"]
    for fact in FACTS:
        assert fact not in system  # "hello" is about none of them
    res = run_cli(root, "search", "What is my cat called?", "--json")
    hits = json.loads(res.stdout)
    assert hits and hits[0]["content"] == FACTS[3] and hits[0]["relevance"] >= 0.15
    assert all(h["relevance"] >= 0.15 for h in hits)
    res = run_cli(root, "context", "Remind me what my cat is called", "--json")
    assert FACTS[3] in json.loads(res.stdout)[0]["content"]


def test_floor_is_a_policy_key(tmp_path: Path, embedder) -> None:
    with Memory(root=tmp_path / "a", embedder=embedder) as m:
        for fact in FACTS:
            m.add(fact, "u")
        assert m.search("xyzzy", "u") == []
        assert m.search("我早上喝什么", "u")[0].record.content == FACTS[4]
    # with the floor off, every memory comes back again, each with its (low) relevance
    with Memory(root=tmp_path / "a", embedder=embedder, policy={"min_score": 0}) as m:
        hits = m.search("xyzzy", "u")
        assert len(hits) == len(FACTS) and all(h.relevance < 0.15 for h in hits)
    assert coverage(["cat", "miso"], "We adopted a cat named Miso") == 2 / 3
    assert relevance(0.0, ["cat"], "no such word") == 0.0
