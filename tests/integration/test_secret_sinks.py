"""Secrets never reach a file, the index, the history, a session, an export, a backup, a log or
an LLM request: every secret of the corpus is pushed through every entry point, then every sink
is searched for it. Around a secret, the rest of what the user said is kept."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from memfold import Memory, SecretRefusedError
from memfold.config import LLMSettings, load_settings
from memfold.models import EPISODIC
from memfold.providers.chat import make_chat_model

from ..support.openai_server import Reply
from ..support.secrets_corpus import CASES

POSITIVE = [c for c in CASES if c.positive]


def _distinctive(s: str) -> bool:
    """Secrets long or odd enough that finding them anywhere is not a coincidence (a 4-digit PIN
    may well be part of a timestamp); the short ones are covered by the corpus unit test."""
    return len(s) >= 6 and (not s.isdigit() or len(s) >= 10) or not s.isascii()


NEEDLES = sorted({s for c in POSITIVE for s in c.secrets if _distinctive(s)})
PLANTED = {"hunter2xyz", "Zx9!kLm2", "sk-abcdefghijklmnopqrstuvwx12", "4111 1111 1111 1111"}


def _forms(s: str) -> list[str]:
    return list(dict.fromkeys([s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]]))


def _leaks(text: str) -> list[str]:
    return [s for s in NEEDLES + sorted(PLANTED) if any(f in text for f in _forms(s))]


def llm_memory(root: Path, server, embedder) -> Memory:
    return Memory(settings=load_settings(root, llm=dict(provider="openai", base_url=server.base_url, model="m",
                                                        timeout=2.0, max_retries=0)), embedder=embedder)


def _chat(server):
    return make_chat_model(LLMSettings(provider="openai", base_url=server.base_url, model="m", max_retries=0,
                                       timeout=2.0))


def _sinks(root: Path, mem: Memory, server, caplog) -> dict[str, str]:
    """Everything memfold wrote, sent or logged, as text per sink."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():  # MEMORY.md, learnings.md, daily notes, backups, index.db (+ WAL), snapshots, config
            out[str(p.relative_to(root))] = p.read_bytes().decode("utf-8", "replace")
    db = sqlite3.connect(root / "index.db")
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        rows = db.execute(f'SELECT * FROM "{table}"').fetchall()
        out[f"table {table}"] = "\n".join(
            " | ".join(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row) for row in rows)
    db.close()
    out["export"] = json.dumps(list(mem.export()), ensure_ascii=False)
    out["history"] = json.dumps([h.to_dict() for r in mem.export() for u in [r["user_id"]]
                                 for h in mem.index.history(u, r["id"])], ensure_ascii=False)
    out["logs"] = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    out["LLM requests"] = "\n".join(r["raw"] for r in server.requests)
    return out


def test_every_secret_through_every_entry_point_reaches_no_sink(root, embedder, llm_server, caplog):
    caplog.set_level(logging.DEBUG)
    # the LLM answers with a secret of its own in content and structured data: guarded too
    llm_server.default_reply = Reply(json.dumps({"memories": [
        {"memory_type": "fact", "content": "The user's backup card is 4111 1111 1111 1111 and they like tea",
         "structured_data": {"pw": "Zx9!kLm2"}, "importance_score": 0.6}]}))
    mem = Memory(root=root, embedder=embedder)
    mem.init("rules")
    texts = [c.text for c in POSITIVE]
    refused = stored = 0
    for t in texts:  # add(text): refused when mostly a secret, else stored redacted
        try:
            mem.add(t, "rules")
            stored += 1
        except SecretRefusedError:
            refused += 1
        try:
            mem.add_note(t, "rules")
        except SecretRefusedError:
            pass
    assert refused and stored
    res = mem.add([m for t in texts for m in ({"role": "user", "content": t}, {"role": "assistant", "content": t})],
                  "rules")
    assert res.refused and res.redacted
    target = mem.add("The user keeps notes in a blue notebook", "rules").added[0]
    for t in texts:  # update(content=...)
        try:
            target = mem.update(target.id, "rules", content=f"notes: {t}")
        except SecretRefusedError:
            pass
    mem.forget(f"forget {texts[0]}", "rules")
    s = mem.session("s1", "rules", "helper", policy={"session_summary_message_threshold": 6})
    for t in texts:
        s.add_message("user", t)
        s.add_message("assistant", "noted")
    s.summarize()
    # hand-added bullets in MEMORY.md, learnings.md and a daily note
    udir = mem.workspace.user("rules").dir
    for md in [udir / "MEMORY.md", udir / "learnings.md", *udir.glob("memory/*/*.md")]:
        md.write_text(md.read_text(encoding="utf-8").rstrip("\n") + "\n" + "".join(
            f"- {' '.join(c.text.splitlines())}\n" for c in POSITIVE), encoding="utf-8")
    mem.search("password", "rules")
    mem.update(target.id, "rules", importance=0.9)  # a backup after the hand edit
    rows = [r for r in mem.export("rules") if r["file"] != EPISODIC][:5]
    n = mem.import_records([dict(r, id=r["id"][:-1] + "z", content=f"Imported {i}: the router pw Zx9!kLm2x, "
                                 "the printer is on floor 2", context="pw Zx9!kLm2x") for i, r in enumerate(rows)])
    assert n == 5
    with pytest.raises(SecretRefusedError, match="record 1"):
        mem.import_records([dict(rows[0], id="importedzz01", content="wifi pw hunter2xyz")])
    with pytest.raises(SecretRefusedError, match=r"record 1 \(importedzz02\): structured_data\['pw'\]"):
        mem.import_records([dict(rows[0], id="importedzz02", structured_data={"pw": "Zx9!kLm2"})])
    # the LLM paths: extraction, merge decisions, LLM summaries
    lm = llm_memory(root, llm_server, embedder)
    lres = lm.add([{"role": "user", "content": t} for t in texts] + [{"role": "user", "content": "I like tea"}], "llm")
    assert any(r.file != EPISODIC and r.content == "The user's backup card is [redacted] and they like tea"
               and r.structured_data == {"pw": "[redacted]"} for r in lres.added)
    ls = lm.session("s2", "llm", chat_model=_chat(llm_server), policy={"session_summary_message_threshold": 6})
    for t in texts[:12]:
        ls.add_message("user", t)
    ls.summarize()
    lm.close()
    mem.close()
    mem = Memory(root=root, embedder=embedder)
    sinks = _sinks(root, mem, llm_server, caplog)
    mem.close()
    assert llm_server.chat_requests() and "[redacted]" in sinks["LLM requests"]
    for name in ("rules/MEMORY.md", "rules/learnings.md"):
        assert sinks[name].count("[redacted]") >= len(POSITIVE), name
    assert any(k.startswith("rules/memory/") and "[redacted]" in v for k, v in sinks.items())
    assert any(k.startswith("rules/backups/") for k in sinks)
    leaks = {name: _leaks(text) for name, text in sinks.items()}
    leaks = {k: v for k, v in leaks.items() if v}
    where = {k: [t[max(0, t.find(v[0]) - 150): t.find(v[0]) + 60] for t in [sinks[k]]] for k, v in leaks.items()}
    assert not leaks, where


def test_a_turn_with_a_secret_keeps_the_rest(mem: Memory):
    res = mem.add([{"role": "user", "content": "Remember that my dog is called Bob. My password is Tr0ub4dor&3 "
                                               "and I prefer green tea.", "turn_id": "t1"}], "alice")
    contents = [r.content for r in res.added]
    assert "Remember that my dog is called Bob. My password is [redacted] and I prefer green tea." in contents
    assert "my dog is called Bob" in contents and "I prefer green tea" in contents
    assert res.redacted == ("t1: a password redacted",) and not res.refused
    hits = mem.search("what is my dog called", "alice")
    assert hits and all("Tr0ub4dor" not in h.record.content for h in hits)
    # a single text that says more than the secret is stored redacted; one that is only a secret is refused
    r = mem.add("我的密码是abc12345，我喜欢绿茶", "alice")
    assert r.added[0].content == "我的密码是[redacted]，我喜欢绿茶" and r.redacted
    with pytest.raises(SecretRefusedError, match="password"):
        mem.add("the passcode for the door is 482913", "alice")
    assert "abc12345" not in mem.show("alice") and "482913" not in mem.show("alice")


def test_the_llm_sees_the_rest_of_a_turn_with_a_secret(root, llm_server, embedder):
    llm_server.script(json.dumps({"memories": [{"memory_type": "fact", "content": "The user's dog is called Bob",
                                                "structured_data": {}, "importance_score": 0.6}]}))
    mem = llm_memory(root, llm_server, embedder)
    mem.add([{"role": "user", "content": "My dog is called Bob. wifi pw hunter2xyz, and I prefer green tea."}])
    prompt = llm_server.chat_requests()[0]["body"]["messages"][1]["content"]
    assert "My dog is called Bob. wifi pw [redacted], and I prefer green tea." in prompt
    assert "hunter2xyz" not in llm_server.requests[0]["raw"]
    mem.close()


@pytest.mark.parametrize("field, value, where", [
    ("structured_data", {"note": "sk-abcdefghijklmnopqrstuvwx12"}, "structured_data['note']"),
    ("structured_data", {"wifi": {"password": "hunter2xyz"}}, "structured_data['wifi']['password']"),
    ("structured_data", {"cards": ["visa", "4111 1111 1111 1111"]}, "structured_data['cards'][1]"),
    ("source_ids", ["t1", "ghp_abcdefghijklmnopqrstuv"], "source_ids[1]"),
    ("agent_id", "sk-abcdefghijklmnopqrstuvwx12", "agent_id"),
    ("session_id", "password=hunter2xyz", "session_id"),
])
def test_a_secret_in_a_structured_field_is_refused_naming_the_field(mem: Memory, root: Path, field, value, where):
    for data in ("The user likes tea", [{"role": "user", "content": "I like tea"}]):
        with pytest.raises(SecretRefusedError) as err:
            mem.add(data, "alice", **{field: value})
        assert where in str(err.value)
        assert not any(s in str(err.value) for s in PLANTED | {"ghp_abcdefghijklmnopqrstuv"})
    assert mem.get_all("alice") == []
    if field == "structured_data":
        r = mem.add("The user likes tea", "alice").added[0]
        with pytest.raises(SecretRefusedError, match=r"structured_data\["):
            mem.update(r.id, "alice", structured_data=value)
        assert mem.get(r.id, "alice").structured_data == r.structured_data
    for p in root.rglob("*"):
        if p.is_file():
            assert not _leaks(p.read_bytes().decode("utf-8", "replace")), p


def test_a_session_with_a_secret_id_or_agent_is_refused(mem: Memory):
    with pytest.raises(SecretRefusedError, match="session_id"):
        mem.session("token ghp_abcdefghijklmnopqrstuv", "alice")
    with pytest.raises(SecretRefusedError, match="agent_id"):
        mem.session("s1", "alice", agent_id="sk-abcdefghijklmnopqrstuvwx12")


def test_session_messages_are_kept_redacted(mem: Memory, root: Path):
    s = mem.session("s1", "alice")
    s.add_message("user", "login: admin / admin12345, and the meeting is at 10:30")
    assert s.messages[0]["content"] == "login: admin / [redacted], and the meeting is at 10:30"
    assert "10:30" in s.build_context("when is the meeting?")[-2]["content"]
    mem.close()
    db = sqlite3.connect(root / "index.db")
    dump = "\n".join(str(row) for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
                     for row in db.execute(f'SELECT * FROM "{t}"'))
    db.close()
    assert "admin12345" not in dump and "[redacted]" in dump


def test_a_hand_added_bullet_with_a_secret_is_redacted_in_the_file(mem: Memory):
    mem.init("alice")
    path = mem.workspace.user("alice").dir / "MEMORY.md"
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") +
                    "\n- the office wifi pw hunter2xyz, ask Dana for the guest one\n"
                    "- card 4111.1111.1111.1111\n", encoding="utf-8")
    assert not any("hunter2xyz" in h.record.content for h in mem.search("wifi pw hunter2xyz", "alice"))
    text = path.read_text(encoding="utf-8")
    assert "hunter2xyz" not in text and "4111.1111" not in text
    assert "the office wifi pw [redacted], ask Dana for the guest one <!-- mf:" in text
    assert ": card [redacted] <!-- mf:" in text
    rec = next(r for r in mem.get_all("alice") if "Dana" in r.content)
    (entry,) = mem.history(rec.id, "alice")
    assert entry.detail["redacted"] == ["password"] and entry.new_content == rec.content
    assert not list(mem.workspace.user("alice").dir.glob("backups/*"))  # the secret was never backed up
    # an existing line edited by hand to hold a secret
    path.write_text(path.read_text(encoding="utf-8").replace("ask Dana", "token sk-abcdefghijklmnopqrstuvwx12 from Dana"),
                    encoding="utf-8")
    assert mem.get(rec.id, "alice").content == "the office wifi pw [redacted], token [redacted] from Dana for the guest one"
    assert "sk-abc" not in path.read_text(encoding="utf-8")
    assert mem.history(rec.id, "alice")[-1].action == "edit"
