"""Short user journeys of the first minutes with memfold: where the memory lives (a workspace that
is missing is said so, never made silently by a read), who it belongs to (user ids in any script),
and short Chinese questions answered by what they ask about. Each journey is a few calls through
the command line, the Python API, the agent tools or the HTTP API, and checks what a user sees."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import httpx
import pytest

from memfold import InvalidInputError, Memory
from memfold.server.app import create_app
from memfold.server.keys import KeyStore
from memfold.tools import MemoryTools

from ..support.live_server import LiveServer

CAT, BIRTHDAY = "我养了一只叫咪咪的橘猫", "我的生日是五月二十号"
CAR, SISTER = "我开一辆白色的特斯拉", "我的妹妹在北京当护士"
ZH_FACTS = (CAT, BIRTHDAY, CAR, SISTER, "我对花生过敏", "我下个月要去上海出差")


PYTHON = sys.executable  # replaced by the warm python (tests/support/warm_python.py): a new process, memfold imported


@pytest.fixture(autouse=True)
def _warm(warm_python) -> None:
    global PYTHON
    PYTHON = str(warm_python.command)


def memfold(cwd: Path, *args: str, env: dict[str, str] | None = None, input: str | None = None
            ) -> subprocess.CompletedProcess:
    """The real ``memfold`` command in a process of its own, run from ``cwd`` with no workspace named
    unless ``args`` or ``env`` do."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    full_env.update(env or {})
    return subprocess.run([PYTHON, "-m", "memfold", *args], cwd=cwd, capture_output=True,
                          text=True, env=full_env, input=input, timeout=300)


def contents(hits: list) -> list[str]:
    return [h.record.content if hasattr(h, "record") else h["content"] for h in hits]


def first_of(found: list[str], *texts: str) -> str:
    """Which of ``texts`` comes first among the results."""
    return min(texts, key=lambda t: found.index(t) if t in found else len(found))


@pytest.fixture
def xiaoming(mem: Memory) -> Memory:
    for text in ZH_FACTS:
        mem.add(text, "小明")
    return mem


@pytest.fixture
def srv(mem: Memory):
    with LiveServer(create_app(mem)) as s:
        s.keys = KeyStore(mem.index)
        yield s


def http(srv, *users: str) -> httpx.Client:
    key = srv.keys.create(list(users), "write")[0]
    return httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


# ---- a missing workspace is said so ---------------------------------------------------------------

def test_search_from_the_wrong_folder_says_there_is_no_workspace_and_creates_nothing(tmp_path: Path):
    res = memfold(tmp_path, "search", "anything")
    assert res.returncode == 1
    msg = res.stderr
    assert f"no memfold workspace at {tmp_path.resolve() / '.memfold'}" in msg
    assert "--root" in msg and "MEMFOLD_HOME" in msg and "memfold init" in msg
    assert "no memories found" not in res.stdout
    assert list(tmp_path.iterdir()) == []


def test_read_commands_name_the_workspace_they_were_pointed_at(tmp_path: Path):
    home = tmp_path / "记忆"
    res = memfold(tmp_path, "list", "--user", "小明", env={"MEMFOLD_HOME": str(home)})
    assert res.returncode == 1 and f"from MEMFOLD_HOME={home}" in res.stderr
    res = memfold(tmp_path, "--root", str(home), "stats")
    assert res.returncode == 1 and "given by --root" in res.stderr and f"memfold --root {home} init" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_init_then_chinese_search_works_where_it_failed_before(tmp_path: Path):
    ws = tmp_path / "ws"
    assert memfold(tmp_path, "--root", str(ws), "search", "生日", "--user", "小明").returncode == 1
    res = memfold(tmp_path, "--root", str(ws), "init", "--user", "小明", "--lang", "zh")
    assert res.returncode == 0, res.stderr
    assert f"created a new memfold workspace in {ws}" in res.stdout
    assert str(ws / "小明" / "MEMORY.md") in res.stdout and (ws / "小明" / "MEMORY.md").is_file()
    res = memfold(tmp_path, "--root", str(ws), "search", "生日", "--user", "小明")
    assert res.returncode == 0 and "no memories found" in res.stdout


def test_the_first_add_says_where_the_new_workspace_is(tmp_path: Path):
    first = memfold(tmp_path, "add", "I like green tea")
    assert first.returncode == 0, first.stderr
    assert f"created a new memfold workspace in {tmp_path.resolve() / '.memfold'}" in first.stderr
    assert "I like green tea" in first.stdout
    second = memfold(tmp_path, "add", "我喜欢喝乌龙茶")
    assert second.returncode == 0 and "created" not in second.stderr
    listed = memfold(tmp_path, "list")
    assert "I like green tea" in listed.stdout and "我喜欢喝乌龙茶" in listed.stdout


def test_adding_an_empty_text_is_an_error_and_makes_no_workspace(tmp_path: Path):
    for text in ("", "   "):
        res = memfold(tmp_path, "add", text)
        assert res.returncode == 1 and "empty" in res.stderr and "nothing to remember" in res.stderr
    res = memfold(tmp_path, "add", "-", input="\n  \n")
    assert res.returncode == 1 and "nothing to remember" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_python_add_of_blank_chinese_input_is_refused_and_nothing_is_stored(mem: Memory):
    mem.add(CAT, "小明")
    for blank in ("", " \n\t ", "\u3000"):  # the last: an ideographic space
        with pytest.raises(InvalidInputError, match="nothing to remember"):
            mem.add(blank, "小明")
    with pytest.raises(InvalidInputError, match="nothing to remember"):
        mem.add_note("  ", "小明")
    assert [r.content for r in mem.get_all("小明", include_episodic=False)] == [CAT]


def test_an_agent_appending_blank_text_gets_a_tool_error(mem: Memory):
    tools = MemoryTools(mem, user_id="小红")
    res = tools.call("memory_append", {"content": "   "})
    assert res["ok"] is False and "nothing to remember" in res["error"]["message"]
    assert tools.call("memory_search", {"query": "猫"})["results"] == []


# ---- user ids in any script -----------------------------------------------------------------------

def test_a_chinese_user_id_on_the_command_line(tmp_path: Path):
    ws = tmp_path / "ws"
    res = memfold(tmp_path, "--root", str(ws), "add", CAT, "--user", "小明")
    assert res.returncode == 0, res.stderr
    assert (ws / "小明" / "MEMORY.md").read_text(encoding="utf-8").count("咪咪") == 1
    res = memfold(tmp_path, "--root", str(ws), "list", "--user", "小明")
    assert res.returncode == 0 and CAT in res.stdout
    bad = memfold(tmp_path, "--root", str(ws), "list", "--user", "小明/..")
    assert bad.returncode == 1 and "path separator" in bad.stderr


def test_a_chinese_user_through_http_sees_only_their_memories(srv, mem: Memory):
    c = http(srv, "小明")
    r = c.post("/v1/memories", params={"user_id": "小明"}, json={"text": CAT})
    assert r.status_code == 200, r.text
    assert r.json()["added"][0]["user_id"] == "小明"
    found = c.post("/v1/memories/search", params={"user_id": "小明"}, json={"query": "猫"}).json()["results"]
    assert found[0]["content"] == CAT
    other = c.get("/v1/memories", params={"user_id": "小红"})
    assert other.status_code == 403 and "小红" in other.json()["error"]["message"]


def test_accented_names_typed_two_ways_are_one_user(mem: Memory, root: Path):
    composed = "José"
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    mem.add("I like window seats on long flights", composed)
    mem.add("My sister Anna lives in Berlin", decomposed)
    assert len(mem.get_all(decomposed, include_episodic=False)) == 2
    assert [p.name for p in root.iterdir() if p.is_dir()] == [composed]
    assert mem.users() == [composed]


def test_http_normalises_the_user_id_and_names_the_broken_rule(srv, mem: Memory):
    c = http(srv, "Ærø", "José")
    r = c.post("/v1/memories", params={"user_id": unicodedata.normalize("NFD", "José")},
               json={"text": "I prefer aisle seats"})
    assert r.status_code == 200, r.text
    assert r.json()["added"][0]["user_id"] == "José"
    assert c.get("/v1/memories", params={"user_id": "Ærø"}).json()["results"] == []
    for bad, rule in (("../x", "path separator"), ("CON", "reserved device name"), ("Ærø\u202e", "invisible")):
        r = c.get("/v1/memories", params={"user_id": bad})
        assert r.status_code == 422 and rule in r.json()["error"]["message"], r.text
        assert r.json()["error"]["field"] == "user_id"


def test_tools_refuse_an_unsafe_user_id_at_once(mem: Memory):
    for bad, rule in (("NUL", "reserved device name"), ("a\u200db", "invisible"), (".小明", "starts with '.'")):
        with pytest.raises(InvalidInputError, match=rule):
            MemoryTools(mem, user_id=bad)
    assert MemoryTools(mem, user_id="Ærø").call("memory_append", {"content": "I live in Copenhagen"})["ok"]


def test_user_ids_too_long_for_a_folder_name_are_refused_with_the_bound(mem: Memory):
    with pytest.raises(InvalidInputError, match="255"):
        mem.add("我喜欢喝茶", "明" * 86)
    mem.add("我喜欢喝茶", "明" * 85)
    assert mem.get_all("明" * 85)[0].content == "我喜欢喝茶"


# ---- short Chinese questions rank by what they ask about -------------------------------------------

def test_my_cat_finds_the_cat_not_the_birthday(xiaoming: Memory):
    found = contents(xiaoming.search("我的猫", "小明"))
    assert first_of(found, CAT, BIRTHDAY) == CAT
    assert found[0] == CAT


def test_my_car_finds_the_car(xiaoming: Memory):
    found = contents(xiaoming.search("我的车", "小明"))
    assert found[0] == CAR and first_of(found, CAR, BIRTHDAY, SISTER) == CAR


def test_a_yes_no_question_about_a_birthday_still_finds_the_birthday(xiaoming: Memory):
    assert contents(xiaoming.search("你的生日是不是五月", "小明"))[0] == BIRTHDAY
    assert contents(xiaoming.search("我妹妹在哪里工作", "小明"))[0] == SISTER


def test_an_agent_asking_about_my_cat_gets_the_cat_in_its_context(xiaoming: Memory):
    messages = xiaoming.build_context("我的猫叫什么名字？", "小明")
    system = messages[0]["content"]
    assert "咪咪" in system
    tools = MemoryTools(xiaoming, user_id="小明")
    assert tools.call("memory_search", {"query": "我的猫"})["results"][0]["content"] == CAT


def test_the_cat_comes_first_over_http_too(srv, xiaoming: Memory):
    c = http(srv, "小明")
    found = c.post("/v1/memories/search", params={"user_id": "小明"}, json={"query": "我的猫"}).json()["results"]
    assert found[0]["content"] == CAT
