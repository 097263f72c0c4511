"""The guard (seed 002): no secret reaches the LLM, and "forget this / 忘了这个 / 别记" in added
messages deletes what they point at (file and index at once, with a backup and history)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.models import EPISODIC
from memfold.text.forget import find_request

from ..support.openai_server import Reply

SECRETS = ["Hunter2Hunter2", "sk-proj-abcdefghijklmnopqrstuvwx123456", "4111 1111 1111 1111", "4111111111111111",
           "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "110101199003071234"]


def llm_memory(root: Path, server, embedder, **policy) -> Memory:
    return Memory(settings=load_settings(root, llm=dict(provider="openai", base_url=server.base_url, model="m",
                                                        timeout=1.0, max_retries=0)),
                  embedder=embedder, policy=policy or None)


def assert_no_secret_sent(server) -> None:
    assert server.chat_requests(), "the test should have made LLM calls"
    for req in server.requests:
        for s in SECRETS:
            assert s not in req["raw"], f"{s!r} was sent to the LLM"


def test_no_secret_in_any_request_body(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    conversation = [
        {"role": "user", "content": "I moved to Lisbon in May."},
        {"role": "user", "content": "my password is Hunter2Hunter2 by the way"},
        {"role": "assistant", "content": "Use the key sk-proj-abcdefghijklmnopqrstuvwx123456 for the API."},
        {"role": "user", "content": "Pay with card 4111 1111 1111 1111 please."},
        {"role": "user", "content": "My GitHub token is ghp_abcdefghijklmnopqrstuvwxyz0123456789, and I love surfing."},
        {"role": "user", "content": "我的身份证号是110101199003071234"},
    ]
    # an invalid first answer that echoes a secret: the retry must not send it back
    llm_server.script('{"memories": [{"memory_type": "credential", "content": "password Hunter2Hunter2"}]}',
                      Reply("down", status=500))
    res = mem.add(conversation)
    assert len(res.refused) == 4 and len(res.redacted) == 1  # the token's message says more than the token
    assert_no_secret_sent(llm_server)
    prompt = llm_server.chat_requests()[0]["body"]["messages"][1]["content"]
    assert "Lisbon" in prompt and "My GitHub token is [redacted], and I love surfing." in prompt
    assert "Hunter2" not in prompt and "身份证" not in prompt  # a message that is mostly a secret is not sent
    assert "[redacted]" in llm_server.chat_requests()[1]["body"]["messages"][2]["content"]
    # the note kept after the failure holds no secret either
    for r in mem.get_all(include_archived=True):
        assert not any(s in r.content for s in SECRETS)
    assert "Lisbon" in " ".join(r.content for r in res.added)
    mem.close()


def test_a_hand_edited_secret_is_redacted_in_the_merge_prompt(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder, dedupe_threshold=0.6)
    mem.init()
    path = mem.workspace.user("default").dir / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("## Notes\n", "## Notes\n\n- 2026-01-05: The user works at TechCorp as a data "
                                               "engineer, card 4111 1111 1111 1111\n"), encoding="utf-8")
    llm_server.script(json.dumps({"action": "keep_both", "reason": "different"}))
    mem.add("The user works at TechCorp as a data engineer")
    (req,) = llm_server.chat_requests()
    assert "card [redacted]" in req["body"]["messages"][1]["content"]
    assert_no_secret_sent(llm_server)
    mem.close()


def test_forget_this_drops_the_previous_turn_before_the_llm_sees_it(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    llm_server.script(json.dumps({"memories": [{"memory_type": "preference", "content": "The user likes hiking",
                                                "structured_data": {}, "importance_score": 0.6}]}))
    res = mem.add([
        {"role": "user", "content": "I like hiking in the Alps."},
        {"role": "user", "content": "My ex is called Anna."},
        {"role": "assistant", "content": "Anna, noted."},
        {"role": "user", "content": "Actually, forget this."},
    ])
    prompt = llm_server.chat_requests()[0]["body"]["messages"][1]["content"]
    assert "hiking" in prompt and "Anna" not in prompt and "forget this" not in prompt
    assert all("Anna" not in r.content and "forget" not in r.content for r in mem.get_all(include_archived=True))
    assert sum("forget" in s for s in res.skipped) == 3
    mem.close()


def test_forget_this_in_a_later_add_deletes_what_the_last_add_stored(mem):
    first = mem.add([{"role": "user", "content": "My bank is Northwind and I prefer paper statements."}])
    assert first.added
    mem.add("The user has two cats")
    mem.add([{"role": "user", "content": "I prefer aisle seats."}])
    backups = len(mem.stats()["files"]) and mem.stats()["backups"]
    res = mem.add([{"role": "user", "content": "忘了这个"}])
    gone = {r.content for r in res.forgotten}
    assert "I prefer aisle seats." in gone
    contents = [r.content for r in mem.get_all()]
    assert not any("aisle" in c for c in contents)
    assert "The user has two cats" in contents and any("Northwind" in c for c in contents)
    assert "aisle" not in mem.show()
    assert mem.stats()["backups"] > backups
    forgotten = next(r for r in res.forgotten if r.file != EPISODIC)
    assert mem.history(forgotten.id)[-1].action == "forget"


def test_forget_that_x_deletes_matching_memories_but_spares_later_turns(mem):
    mem.add("I like sushi")
    mem.add("The user lives in Oslo")
    res = mem.add([{"role": "user", "content": "Please forget that I like sushi."},
                   {"role": "user", "content": "I like sushi with wasabi though."}])
    assert "I like sushi" in {r.content for r in res.forgotten}
    contents = [r.content for r in mem.get_all()]
    assert "I like sushi" not in contents and "The user lives in Oslo" in contents
    assert any("wasabi" in c for c in contents)  # said after the request: kept
    assert not any("forget" in c.lower() for c in contents)


def test_bie_ji_with_an_object_and_as_plain_text(mem):
    mem.add("我的生日是五月三日")
    mem.add("我喜欢爬山")
    res = mem.add([{"role": "user", "content": "别记我的生日"}])
    assert [r.content for r in res.forgotten] == ["我的生日是五月三日"]
    assert [r.content for r in mem.get_all()] == ["我喜欢爬山"]
    res = mem.add("忘掉我喜欢爬山")
    assert [r.content for r in res.forgotten] == ["我喜欢爬山"] and not res.added
    assert mem.get_all() == []


def test_a_message_that_asks_not_to_be_remembered_is_not_stored(mem):
    mem.add("The user lives in Oslo")
    res = mem.add([{"role": "user", "content": "我刚和老板吵架了，这个别记。"}])
    assert not res.added and not res.forgotten
    assert [r.content for r in mem.get_all()] == ["The user lives in Oslo"]


def test_dont_forget_is_a_memory_not_a_forget_request(mem):
    res = mem.add([{"role": "user", "content": "Don't forget my dentist appointment on Friday."}])
    assert res.added and not res.forgotten
    res = mem.add("别忘了明天下午三点开会")
    assert res.added and not res.forgotten


@pytest.mark.parametrize("text, query", [
    ("forget this", None), ("Okay. Forget it.", None), ("Forget that I like sushi.", "I like sushi"),
    ("Can you forget my birthday?", "my birthday"), ("Please delete my address from your memory", "my address"),
    ("don't remember that my salary is 5k", "my salary is 5k"), ("Don't remember this", None),
    ("Don't save this one.", None), ("Don't record that in your memory", None),
    ("忘了这个", None), ("好的，忘了这个吧", None), ("忘掉我的生日", "我的生日"), ("别记", None),
    ("别记我的手机号", "我的手机号"), ("我的生日别记", "我的生日"), ("把这件事忘了", None), ("不要记住这个", None),
    ("删掉关于咖啡的记忆", "咖啡"),
])
def test_forget_phrases(text, query):
    req = find_request(text)
    assert req is not None and req.query == query


@pytest.mark.parametrize("text", ["I always forget my keys", "Don't forget to call mom", "I forgot my password",
                                  "Did you forget my birthday?", "delete this file", "别忘了明天开会", "我又忘了带钥匙",
                                  "我忘了", "删掉这个文件", "I like coffee",
                                  "Don't store passwords in plain text", "Never keep cash at home", "我不要存钱",
                                  "别记仇", "不要记错时间", "Don't keep me waiting"])
def test_not_forget_requests(text):
    assert find_request(text) is None


def test_rest_of_the_message_is_what_this_means():
    req = find_request("My ex is called Anna. Forget this.")
    assert req is not None and req.query is None and req.rest == "My ex is called Anna." and not req.points_back
    req = find_request("我刚和老板吵架了，这个别记")
    assert req is not None and req.rest == "我刚和老板吵架了"
