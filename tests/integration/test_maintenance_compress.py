"""Long-term compression (seed 001 §1.6) and old-memory compression (seed 003) through the
scripted OpenAI-compatible server and without an LLM: what is written, what is archived and
found again, the 24-hour rule, and LLM faults (garbage, HTTP 500, timeout, invalid output) that
change nothing and are retried at the next run."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.models import FILE_MEMORY, MemoryRecord, MemoryType

from ..support.openai_server import Reply

NOW = datetime.now(timezone.utc).replace(microsecond=0)
OLD_FACTS = ["The user drinks coffee: an espresso every morning before work",
             "The user drinks coffee: a latte after lunch on weekdays",
             "The user drinks coffee: a decaf in the evening when reading",
             "The user drinks coffee: a cold brew on hot summer days"]


def llm_memory(root: Path, server, embedder, **policy: Any) -> Memory:  # type: ignore[no-untyped-def]
    cfg = dict(provider="openai", base_url=server.base_url, model="scripted", timeout=1.0, max_retries=0, backoff=0.01)
    return Memory(settings=load_settings(root, llm=cfg), embedder=embedder, policy=policy)


def record(user: str, content: str, days_ago: int, mtype: MemoryType = MemoryType.FACT, **kw: Any) -> dict[str, Any]:
    at = NOW - timedelta(days=days_ago)
    from memfold.engine.storage.records import new_id

    return MemoryRecord(id=new_id(), user_id=user, memory_type=mtype, content=content, created_at=at, updated_at=at,
                        **kw).to_dict()


def seed_long_memory(root: Path, embedder) -> tuple[list[str], str]:  # type: ignore[no-untyped-def]
    """Old preferences and notes plus one recent memory; returns (old ids, recent id)."""
    rows = [record("alice", f"Old note {i}: the Harbor project meeting number {i} was moved to room {100 + i}", 200)
            for i in range(6)]
    recent = record("alice", "Anna's flight lands at 14:30 on 2026-12-03 at gate B12", 0, MemoryType.EVENT)
    with Memory(root=root, embedder=embedder) as m:
        m.import_records(rows + [recent])
    return [r["id"] for r in rows], recent["id"]


def compressed_file(text: str, recent_line: str) -> str:
    """A plausible compression: the headings, one summary bullet, the recent entry word for word."""
    out = []
    for line in text.split("\n"):
        if line.startswith("#"):
            out.append(line)
            out.append("")
            if line.startswith("## Important Events"):
                out.append(recent_line)
                out.append("")
            if line.startswith("## Notes"):
                out.append("- 2026-05-01: Harbor project meetings 0-5 were moved to rooms 100-105")
                out.append("")
    return "\n".join(out)


def test_compression_with_the_llm_writes_a_validated_file_after_a_backup(root: Path, llm_server, embedder):
    old_ids, recent_id = seed_long_memory(root, embedder)
    mem = llm_memory(root, llm_server, embedder, long_term_compress_char_threshold=300, old_memory_days=0)
    before = mem.show("alice")
    assert len(before) > 300
    dry = mem.maintain("alice", dry_run=True, jobs=["compress_long_term"]).results[0]
    assert dry.status == "planned" and dry.chars_before == len(before) and llm_server.chat_requests() == []
    llm_server.script(json.dumps({"memory_md": compressed_file(before, "- 2026-11-25: Anna's flight lands at 14:30 "
                                                                        "on 2026-12-03 at gate B12")}))
    res = mem.maintain("alice", jobs=["compress_long_term"]).results[0]
    assert res.status == "done", res.reason
    (req,) = llm_server.chat_requests()
    prompt = req["body"]["messages"][1]["content"]
    assert "Old note 3" in prompt and "Keep every \"## \" section heading" in prompt
    assert "Anna's flight lands at 14:30" in prompt.split("MEMORY.md:")[0]  # named as a fact to keep
    after = mem.show("alice")
    assert res.chars_before == len(before) and res.chars_after == len(after) < len(before)
    assert "Harbor project meetings 0-5" in after and "Old note 3" not in after
    assert f"mf:{recent_id}" in after  # the entry left word for word keeps its id
    # a dated backup holds the old file
    (backup,) = mem._store("alice").space.backups()
    assert "Old note 3" in backup.read_text(encoding="utf-8")
    # the index agrees with the file: the old bullets archived, the summary indexed
    active = {r.content for r in mem.get_all("alice")}
    assert "Harbor project meetings 0-5 were moved to rooms 100-105" in active
    assert not any(c.startswith("Old note") for c in active)
    assert sorted(res.archived) == sorted(old_ids)
    assert mem.history(old_ids[0], "alice")[-1].action == "archive"
    hits = mem.search("Harbor project meeting room 103", "alice", include_archived=True, limit=20)
    assert old_ids[3] in [h.record.id for h in hits]
    # at most once per 24 hours; --force runs it again
    again = mem.maintain("alice", jobs=["compress_long_term"]).results[0]
    mem.close()
    assert again.status == "not_due" and "next run after" in again.reason and len(llm_server.chat_requests()) == 1


def test_threshold_zero_or_not_exceeded_means_no_compression(root: Path, llm_server, embedder):
    seed_long_memory(root, embedder)
    for threshold, why in ((0, "off"), (100_000, "not over 100000")):
        mem = llm_memory(root, llm_server, embedder, long_term_compress_char_threshold=threshold)
        res = mem.maintain("alice", jobs=["compress_long_term"]).results[0]
        mem.close()
        assert res.status == "not_due" and why in res.reason
    assert llm_server.chat_requests() == []


BAD = {
    "garbage": (Reply(content="Sure! Here is your memory, nicely compressed."), "unusable"),
    "http500": (Reply(status=500, content="upstream exploded"), "LLM call failed"),
    "timeout": (Reply(content="{}", delay=1.6), "LLM call failed"),
    "empty": (json.dumps({"memory_md": ""}), "empty"),
    "longer": ("LONGER", "not shorter"),
    "lost_section": ("NOSECTION", "lost the section"),
    "lost_recent_fact": ("NORECENT", "lost the facts of a pinned or recent memory"),
    "secret": ("SECRET", "contains"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_llm_answer_changes_nothing_and_is_retried_next_run(root: Path, llm_server, embedder, case: str):
    seed_long_memory(root, embedder)
    mem = llm_memory(root, llm_server, embedder, long_term_compress_char_threshold=300)
    text = (root / "alice" / FILE_MEMORY).read_bytes()
    rows = sorted((r.id, r.content) for r in mem.get_all("alice"))
    before = mem.show("alice")
    good = compressed_file(before, "- 2026-11-25: Anna's flight lands at 14:30 on 2026-12-03 at gate B12")
    reply, why = BAD[case]
    if reply == "LONGER":
        reply = json.dumps({"memory_md": before + "\n- 2026-01-01: padding " + "x" * 50})
    elif reply == "NOSECTION":
        reply = json.dumps({"memory_md": good.replace("## Todos & Commitments", "")})
    elif reply == "NORECENT":
        reply = json.dumps({"memory_md": good.replace("14:30 on 2026-12-03", "in the afternoon")})
    elif reply == "SECRET":
        reply = json.dumps({"memory_md": good + "\n- 2026-01-01: api key sk-proj-Zx81kQ2mV9rT4bN7cW3yL6pH0dF5jA8sE2uG\n"})
    llm_server.script(reply)
    res = mem.maintain("alice", jobs=["compress_long_term"]).results[0]
    assert res.status == "failed" and why in res.reason and "unchanged" in res.reason, res.reason
    assert (root / "alice" / FILE_MEMORY).read_bytes() == text
    assert sorted((r.id, r.content) for r in mem.get_all("alice")) == rows
    assert mem._store("alice").space.backups() == []
    # the failure does not count as a run: the next run tries again (and a good answer is written)
    llm_server.script(json.dumps({"memory_md": good}))
    res = mem.maintain("alice", jobs=["compress_long_term"]).results[0]
    mem.close()
    assert res.status == "done", res.reason


def test_a_hand_edit_made_while_the_llm_compresses_is_not_lost(root: Path, llm_server, embedder):
    seed_long_memory(root, embedder)
    mem = llm_memory(root, llm_server, embedder, long_term_compress_char_threshold=300)
    path = root / "alice" / FILE_MEMORY
    real = mem.chat_model

    class EditsWhileAsked:  # a person saves the file while the model is thinking
        name = "scripted-with-a-hand-edit"

        def complete(self, messages, **kw):  # type: ignore[no-untyped-def]
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace("## Notes\n", "## Notes\n\n- My locker code at the Harbor gym is 7781\n"),
                            encoding="utf-8")
            return real.complete(messages, **kw)

    mem.writer.llm.chat = EditsWhileAsked()  # type: ignore[assignment]
    before = mem.show("alice")
    llm_server.script(json.dumps({"memory_md": compressed_file(before, "- 2026-11-25: Anna's flight lands at 14:30 "
                                                                        "on 2026-12-03 at gate B12")}))
    res = mem.maintain("alice", jobs=["compress_long_term"]).results[0]
    assert res.status == "failed" and "changed while it was being compressed" in res.reason
    assert "locker code at the Harbor gym is 7781" in mem.show("alice")
    assert any("7781" in r.content for r in mem.get_all("alice"))
    mem.writer.llm.chat = real
    mem.close()


def seed_old_facts(root: Path, embedder, user: str = "bob") -> dict[str, str]:  # type: ignore[no-untyped-def]
    rows = [record(user, t, 200) for t in OLD_FACTS]
    rows.append(record(user, "The user's brother Tomas lives in Vilnius and teaches chemistry", 200))
    used = record(user, "The user drinks coffee: an espresso at the airport before flights", 200, access_count=7,
                  last_accessed_at=NOW - timedelta(days=120))
    fresh = record(user, "The user drinks coffee: a cortado at the new cafe", 10)
    with Memory(root=root, embedder=embedder) as m:
        m.import_records(rows + [used, fresh])
    return {"used": used["id"], "fresh": fresh["id"], "brother": rows[4]["id"],
            **{f"old{i}": rows[i]["id"] for i in range(4)}}


def test_old_memories_are_compressed_by_the_llm_and_archived_with_a_relation(root: Path, llm_server, embedder):
    ids = seed_old_facts(root, embedder)
    old = [ids[f"old{i}"] for i in range(4)]
    mem = llm_memory(root, llm_server, embedder)
    summary = "The user drinks coffee all day: espresso mornings, latte after lunch, decaf evenings, cold brew in summer"
    llm_server.script(json.dumps([{"content": summary, "importance_score": 0.7, "source_memory_ids": old}]))
    res = mem.maintain("bob", jobs=["compress_old_memories"]).results[0]
    assert res.status == "done", res.reason
    (req,) = llm_server.chat_requests()
    prompt = req["body"]["messages"][1]["content"]
    assert all(f"[{i}]" in prompt for i in old) and "1-3 core memories" in prompt and "source_memory_ids" in prompt
    assert ids["used"] not in prompt and ids["fresh"] not in prompt and ids["brother"] not in prompt
    (new_id,) = res.created
    new = mem.get(new_id, "bob")
    assert new.content == summary and new.is_active and set(new.source_ids) == set(old)
    for i in old:
        r = mem.get(i, "bob")
        assert not r.is_active and r.superseded_by == new_id
    assert {r["relation"] for r in mem.relations(new_id, "bob")} == {"summarizes"}
    text = mem.show("bob")
    assert summary in text and "espresso every morning" not in text
    for keep in ("used", "fresh", "brother"):  # used often, recent, or alone in its topic: kept as they are
        assert mem.get(ids[keep], "bob").is_active
    hits = mem.search("espresso every morning before work", "bob", include_archived=True, record_access=False)
    assert ids["old0"] in [h.record.id for h in hits]
    mem.close()


def test_old_memories_without_an_llm_are_merged_extractively(root: Path, embedder):
    """The hard stage (200 days unused): one shorter memory holding every fact, the repeats and the
    shared opening dropped, the originals' words listed in archive.md."""
    ids = seed_old_facts(root, embedder)
    mem = Memory(root=root, embedder=embedder)
    res = mem.maintain("bob", jobs=["compress_old_memories"]).results[0]
    assert res.status == "done", res.reason
    (new_id,) = res.created
    new = mem.get(new_id, "bob")
    assert new.content.count("The user drinks coffee") == 1 and len(new.content) < sum(len(t) for t in OLD_FACTS)
    for word in ("espresso every morning before work", "latte after lunch on weekdays", "decaf in the evening",
                 "cold brew on hot summer days"):
        assert word in new.content, new.content
    assert res.chars_after < res.chars_before
    assert all(mem.get(ids[f"old{i}"], "bob").superseded_by == new_id for i in range(4))
    assert mem.get(ids["used"], "bob").is_active and mem.get(ids["brother"], "bob").is_active
    archive = (root / "bob" / "archive.md").read_text(encoding="utf-8")
    assert all(t in archive for t in OLD_FACTS) and "(compressed)" in archive
    mem.close()


def test_the_merge_stage_drops_repeats_and_a_merged_memory_is_compressed_again_at_the_hard_stage(root: Path,
                                                                                                embedder):
    """45 days unused: the merge stage (old_memory_merge_days = 30) keeps each distinct fact once, writes
    nothing to archive.md and dates the result by its sources; at 90 days it is compressed alone."""
    rows = [record("eve", t, 45, MemoryType.EVENT) for t in (
        "Anna's flight to Lisbon lands at 14:30 on 2026-12-03 at gate B12.",
        "Anna's flight to Lisbon lands at 14:30 on 2026-12-03 at gate B12. She asked to be picked up.",
        "Anna's flight to Lisbon lands at 14:30 on 2026-12-03. Her bag is a red Samsonite.",
        "Anna's flight to Lisbon lands at 14:30. Anna will stay at Hotel Avenida for 3 nights.")]
    with Memory(root=root, embedder=embedder, background=False) as m:
        m.import_records(rows)
        res = m.maintain("eve", jobs=["compress_old_memories"]).results[0]
        assert res.status == "done", res.reason
        (new_id,) = res.created
        new = m.get(new_id, "eve")
        for fact in ("Lisbon", "14:30", "2026-12-03", "B12", "picked up", "Samsonite", "Hotel Avenida", "3 nights"):
            assert fact in new.content, new.content
        assert new.content.count("lands at 14:30") == 1 and res.chars_after < res.chars_before * 0.6
        assert new.structured_data["compressed"] == "merge" and (NOW - new.created_at).days == 45
        assert not (root / "eve" / "archive.md").exists()
        assert m.maintain("eve", jobs=["compress_old_memories"]).results[0].status == "nothing"  # not again
    with Memory(root=root, embedder=embedder, background=False, policy={"old_memory_days": 40,
                                                                        "old_memory_merge_days": 10}) as m:
        res = m.maintain("eve", jobs=["compress_old_memories"]).results[0]
        assert res.status == "done" and res.archived == [new_id], res.summary()
        hard = m.get(res.created[0], "eve")
        assert hard.structured_data["compressed"] == "hard" and len(hard.content) <= len(new.content)
        assert new.content in (root / "eve" / "archive.md").read_text(encoding="utf-8")
        assert m.maintain("eve", jobs=["compress_old_memories"]).results[0].status == "nothing"


def test_old_memory_policy_keys(root: Path, embedder):
    ids = seed_old_facts(root, embedder)
    with Memory(root=root, embedder=embedder, policy={"old_memory_days": 0}) as m:
        assert m.maintain("bob", jobs=["compress_old_memories"]).results[0].status == "not_due"
    with Memory(root=root, embedder=embedder, policy={"old_memory_days": 365, "old_memory_merge_days": 0}) as m:
        assert m.maintain("bob", jobs=["compress_old_memories"]).results[0].status == "nothing"  # 200 days: too new
    with Memory(root=root, embedder=embedder, policy={"old_memory_days": 365}) as m:  # the merge stage (30 days)
        res = m.maintain("bob", jobs=["compress_old_memories"], dry_run=True).results[0]
        assert res.status == "planned" and "merged" in res.changes[0]["reason"]
    with Memory(root=root, embedder=embedder, policy={"old_memory_days": 365, "old_memory_merge_days": 201}) as m:
        assert m.maintain("bob", jobs=["compress_old_memories"]).results[0].status == "nothing"
    with Memory(root=root, embedder=embedder, policy={"old_memory_access_below": 8}) as m:  # 7 uses: now "rare"
        res = m.maintain("bob", jobs=["compress_old_memories"], dry_run=True).results[0]
        assert ids["used"] in res.archived and ids["fresh"] not in res.archived


@pytest.mark.parametrize("reply", [Reply(content="not json at all"), Reply(status=500), Reply(content="[]", delay=1.6),
                                   Reply(content=json.dumps([{"content": ""}])),
                                   Reply(content=json.dumps([{"content": "a"}, {"content": "b"}, {"content": "c"},
                                                             {"content": "d"}]))])
def test_old_memory_compression_with_a_bad_answer_changes_nothing(root: Path, llm_server, embedder, reply: Reply):
    seed_old_facts(root, embedder)
    mem = llm_memory(root, llm_server, embedder)
    text = (root / "bob" / FILE_MEMORY).read_bytes()
    rows = sorted((r.id, r.content, r.is_active) for r in mem.get_all("bob", include_archived=True))
    llm_server.script(reply)
    res = mem.maintain("bob", jobs=["compress_old_memories"]).results[0]
    assert res.status == "failed" and "unusable" in res.reason and "nothing was changed" in res.reason
    assert (root / "bob" / FILE_MEMORY).read_bytes() == text
    assert sorted((r.id, r.content, r.is_active) for r in mem.get_all("bob", include_archived=True)) == rows
    # tried again at the next run
    llm_server.script(json.dumps([{"content": "The user drinks coffee several times a day", "importance_score": 0.6}]))
    res = mem.maintain("bob", jobs=["compress_old_memories"]).results[0]
    assert res.status == "done" and len(res.archived) == 4, res.reason
    mem.close()


def test_a_chinese_memory_is_compressed_with_the_chinese_prompt(root: Path, llm_server, embedder):
    rows = [record("li", f"旧笔记{i}：港口项目第{i}次会议改到了{100 + i}号房间", 200) for i in range(8)]
    with Memory(root=root, embedder=embedder) as m:
        m.init("li", language="zh")
        m.import_records(rows)
    mem = llm_memory(root, llm_server, embedder, long_term_compress_char_threshold=200)
    before = mem.show("li")
    new = "\n".join(ln for ln in before.split("\n") if ln.startswith("#")).replace(
        "## 笔记", "## 笔记\n\n- 2026-05-01：港口项目会议改到了100到107号房间")
    llm_server.script(json.dumps({"memory_md": new}, ensure_ascii=False))
    res = mem.maintain("li", jobs=["compress_long_term"]).results[0]
    assert res.status == "done", res.reason
    prompt = llm_server.chat_requests()[0]["body"]["messages"][1]["content"]
    assert "保留每个" in prompt and "旧笔记3" in prompt
    assert "港口项目会议改到了100到107号房间" in mem.show("li") and "旧笔记3" not in mem.show("li")
    mem.close()


def test_cli_maintain_exits_1_when_a_job_failed(root: Path, llm_server, embedder):
    from ..conftest import run_cli

    seed_long_memory(root, embedder)
    (root / "config.toml").write_text(
        f'[llm]\nprovider = "openai"\nbase_url = "{llm_server.base_url}"\nmodel = "scripted"\ntimeout = 1.0\n'
        f'max_retries = 0\n\n[memory]\nlong_term_compress_char_threshold = 300\n', encoding="utf-8")
    llm_server.script(Reply(status=500, content="down"))
    out = run_cli(root, "maintain", "--user", "alice", "--job", "compress_long_term")
    assert out.returncode == 1
    assert "alice: compress_long_term: failed" in out.stdout and "LLM call failed" in out.stdout


def test_an_add_over_the_threshold_starts_the_compression_in_the_background(root: Path, llm_server, embedder):
    seed_long_memory(root, embedder)
    mem = llm_memory(root, llm_server, embedder, long_term_compress_char_threshold=300)
    recent = ("- 2026-11-25: Anna's flight lands at 14:30 on 2026-12-03 at gate B12\n"
              "- 2026-11-25: The boiler was serviced on 2026-11-20 by Kettering Heating")
    llm_server.script(json.dumps({"memory_md": compressed_file(mem.show("alice"), recent)}))
    mem.add("The boiler was serviced on 2026-11-20 by Kettering Heating", "alice", memory_type="event")
    mem.close()  # waits for the background compression
    (req,) = llm_server.chat_requests()
    assert "Keep every \"## \" section heading" in req["body"]["messages"][1]["content"]
    with Memory(root=root, embedder=embedder, policy={"long_term_compress_char_threshold": 300}) as m:
        text = m.show("alice")
        assert "Harbor project meetings 0-5" in text and "Old note" not in text and "Kettering Heating" in text
        assert len(text) > 300  # still over the threshold
        assert m.index.get_state("alice", "maintenance", "compress_long_term")["last_status"] == "done"
    mem = llm_memory(root, llm_server, embedder, long_term_compress_char_threshold=300)
    mem.add("The plumber Mr. Osei comes on Thursday", "alice")  # still over, but it ran less than 24 h ago
    mem.close()
    assert len(llm_server.chat_requests()) == 1
