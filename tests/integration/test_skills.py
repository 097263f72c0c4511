"""Skills in learnings.md: saved through the save_memory tool (and MCP), found by search and shown
in the context of a matching task (English and Chinese), their successes counted, hand edits
read back, bounds checked before anything is stored."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memfold import Memory
from memfold.errors import InvalidInputError, LimitExceededError
from memfold.text import skills as sk
from memfold.tools.dispatch import call

DOCS_STEPS = ["mkdocs build --strict", "rsync -a site/ web:/var/www/docs"]


def _system(mem: Memory, task: str, user: str) -> str:
    return mem.build_context(task, user)[0]["content"]


def test_a_skill_saved_through_the_tool_is_found_and_shown_for_a_matching_task(mem: Memory, root: Path) -> None:
    mem.init("alice", "en")
    mem.add("I like green tea", "alice")
    mem.add("My sister Lena lives in Porto", "alice")
    got = call(mem, "save_memory", {"content": "Publish the documentation site", "memory_type": "skill",
                                    "when_to_use": "the user asks to publish or refresh the docs",
                                    "steps": DOCS_STEPS, "tools": ["mkdocs", "rsync"],
                                    "outcome": "the new pages are online"}, user_id="alice")
    assert got["ok"], got
    (saved,) = got["stored"]
    assert saved["file"] == "learnings.md" and saved["memory_type"] == "skill"
    text = (root / "alice" / "learnings.md").read_text(encoding="utf-8")
    assert "## Skills" in text and "  When to use: the user asks to publish or refresh the docs" in text
    assert "  Steps:\n  1. mkdocs build --strict\n  2. rsync -a site/ web:/var/www/docs" in text
    assert "  Tools: mkdocs, rsync" in text and "  Outcome: the new pages are online" in text

    hits = mem.search("how do I publish the docs?", "alice", limit=3)
    assert hits and hits[0].record.id == saved["id"]
    system = _system(mem, "Please publish the docs site for me", "alice")
    assert "## Proven Skills\n- Publish the documentation site" in system
    assert "  1. mkdocs build --strict\n  2. rsync -a site/ web:/var/www/docs" in system  # the steps, under the name
    assert "Proven Skills" not in _system(mem, "What tea do I like?", "alice")  # another task: not shown

    ok = call(mem, "skill_success", {"memory_id": saved["id"]}, user_id="alice")
    ok = call(mem, "skill_success", {"memory_id": saved["id"]}, user_id="alice")
    assert ok["ok"] and ok["successes"] == 2 and ok["last_success"], ok
    (listed,) = mem.skills("alice")
    assert listed["steps"] == DOCS_STEPS and listed["tools"] == ["mkdocs", "rsync"] and listed["successes"] == 2
    assert f"  Successes: 2 (last {ok['last_success']})" in (root / "alice" / "learnings.md").read_text("utf-8")
    assert mem.get(saved["id"], "alice").structured_data == {}  # the day counted is no date of the skill
    assert "Successes: 2" in _system(mem, "publish the docs", "alice")

    tea = mem.search("tea", "alice")[0].record
    bad = call(mem, "skill_success", {"memory_id": tea.id}, user_id="alice")
    assert bad["error"]["code"] == "invalid_input" and "not a skill" in bad["error"]["message"]
    bad = call(mem, "save_memory", {"content": "I like tea", "memory_type": "fact", "steps": ["x"]}, user_id="alice")
    assert bad["error"]["code"] == "invalid_input" and "only a skill" in bad["error"]["message"]


def test_a_chinese_skill_is_found_and_shown_for_a_chinese_task(mem: Memory, root: Path) -> None:
    mem.init("wang", "zh")
    mem.add("我喜欢喝乌龙茶", "wang")
    got = call(mem, "save_memory", {"content": "给客户发周报", "memory_type": "skill",
                                    "when_to_use": "每周五下班前要发周报时", "steps": ["汇总本周的工单", "用模板写周报",
                                                                                "发邮件给客户"],
                                    "tools": ["工单系统", "邮件"], "outcome": "客户按时收到周报"}, user_id="wang")
    assert got["ok"], got
    sid = got["stored"][0]["id"]
    text = (root / "wang" / "learnings.md").read_text(encoding="utf-8")
    assert "## 技能" in text and "  适用场景：每周五下班前要发周报时" in text and "  2. 用模板写周报" in text
    assert "  工具：工单系统、邮件" in text
    assert mem.search("怎么写周报", "wang", limit=3)[0].record.id == sid
    system = _system(mem, "帮我把这周的周报发给客户", "wang")
    assert "## 已验证的技能\n- 给客户发周报" in system and "  3. 发邮件给客户" in system
    call(mem, "skill_success", {"memory_id": sid}, user_id="wang")
    assert "  成功次数：1（最近 " in (root / "wang" / "learnings.md").read_text(encoding="utf-8")
    assert mem.skills("wang")[0]["successes"] == 1


def test_a_hand_edit_of_a_skill_is_read_back(mem: Memory, root: Path) -> None:
    mem.init("alice", "en")
    r = mem.add_skill("Back up the photos", "alice", steps=["plug in the disk", "run rsync"], tools=["rsync"])
    path = root / "alice" / "learnings.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("  2. run rsync", "  2. run rsync -a ~/Photos /mnt/disk\n  3. eject the disk")
                    .replace("  Tools: rsync", "  Tools: rsync, udisksctl"), encoding="utf-8")
    (s,) = mem.skills("alice")
    assert s["id"] == r.added[0].id
    assert s["steps"] == ["plug in the disk", "run rsync -a ~/Photos /mnt/disk", "eject the disk"]
    assert s["tools"] == ["rsync", "udisksctl"]
    mem.skill_succeeded(s["id"], "alice")  # the edited steps stay as the person wrote them
    assert "  3. eject the disk" in path.read_text(encoding="utf-8")
    assert mem.skills("alice")[0]["successes"] == 1


def test_skill_fields_are_bounded_before_anything_is_stored(mem: Memory) -> None:
    with pytest.raises(LimitExceededError) as caught:
        mem.add_skill("Too many steps", "alice", steps=[f"step {i}" for i in range(sk.SKILL_STEPS.limit + 1)])
    assert caught.value.field == "steps"
    with pytest.raises(LimitExceededError):
        mem.add_skill("x" * (sk.SKILL_FIELD.limit + 1), "alice")
    with pytest.raises(InvalidInputError, match="needs a name"):
        mem.add_skill("   ", "alice")
    got = call(mem, "save_memory", {"content": "s", "memory_type": "skill", "tools": ["t"] * 21}, user_id="alice")
    assert got["error"]["code"] in ("limit_exceeded", "invalid_input") and got["error"]["field"] == "tools"
    assert mem.get_all("alice") == []


def test_the_skill_format_round_trips() -> None:
    s = sk.make("Deploy", when_to_use="on release day", steps=["build", "push"], tools=["docker"], outcome="live")
    for lang in ("en", "zh"):
        text = sk.render(s, lang)
        assert sk.parse(text).to_dict() == s.to_dict()
        again = sk.parse(sk.with_success(sk.with_success(text, "2026-01-02", lang), "2026-01-01", lang))
        assert (again.successes, again.last_success) == (2, "2026-01-02")  # the later day stays the last
    assert sk.parse("Deploy\nSteps: build → test → push").steps == ("build", "test", "push")  # typed inline


def test_save_a_skill_and_count_it_over_mcp(mem: Memory, root: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memfold.mcp_server import Namespace, build_server

    async def main() -> None:
        async with Client(build_server(mem, Namespace("alice"))) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"skill_success", "memory_relate"} <= names
            res = await c.call_tool("save_memory", {"content": "Renew the TLS certificate", "memory_type": "skill",
                                                    "steps": ["certbot renew", "systemctl reload nginx"]})
            assert not res.is_error, res.content
            sid = mem.skills("alice")[0]["id"]
            res = await c.call_tool("skill_success", {"memory_id": sid})
            assert not res.is_error and '"successes":1' in res.content[0].text.replace(" ", "")

    anyio.run(main)
    assert "  2. systemctl reload nginx" in (root / "alice" / "learnings.md").read_text(encoding="utf-8")
