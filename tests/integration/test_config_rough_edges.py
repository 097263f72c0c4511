"""Settings a new user gets wrong: the language of a user's prompts, environment variables, error texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import ConfigError, Memory, load_settings
from memfold.providers.chat import make_chat_model
from memfold.providers.openai_chat import OpenAIChatModel

from ..conftest import run_cli


def test_init_lang_zh_sticks_for_that_user_through_the_cli(root: Path):
    r = run_cli(root, "init", "--lang", "zh", "--user", "alice")
    assert r.returncode == 0, r.stderr
    assert not (root / "config.toml").exists()  # nothing but the user's MEMORY.md says "zh"
    r = run_cli(root, "context", "我喜欢什么", "--user", "alice", "--json")
    assert r.returncode == 0, r.stderr
    system = json.loads(r.stdout)[0]["content"]
    assert "你是一个拥有长期记忆的 AI 助手" in system and "MEMORY.md 是你的长期记忆" in system, system
    assert "You are an AI assistant" not in system


def test_each_user_keeps_the_language_of_their_own_memory_file(root: Path, embedder):
    with Memory(root=root, embedder=embedder) as m:
        m.init("alice", "zh")
        m.init("bob", "en")
        m.add("I like green tea", "bob")
    root.joinpath("config.toml").write_text('language = "zh"\n', encoding="utf-8")
    with Memory(root=root, embedder=embedder) as m:
        assert (m.language("alice"), m.language("bob"), m.language("carol")) == ("zh", "en", "zh")
        assert m.build_context("hello", "alice")[0]["content"].startswith("你是一个拥有长期记忆的 AI 助手")
        bob = m.build_context("what tea do I like", "bob")[0]["content"]
        assert bob.startswith("You are an AI assistant") and "# USER MEMORY" in bob
        assert "## Preferences & Habits" in m.show("bob")  # bob's file stays English


def test_memfold_language_variable(root: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMFOLD_LANGUAGE", "zh")
    assert load_settings(root).language == "zh"
    assert load_settings(root, language="en").language == "en"  # an argument still wins
    monkeypatch.setenv("MEMFOLD_LANGUAGE", "fr")
    with pytest.raises(ConfigError, match="MEMFOLD_LANGUAGE must be 'en' or 'zh', got 'fr'"):
        load_settings(root)


def test_errors_name_the_source_the_bad_key_came_from(root: Path, monkeypatch: pytest.MonkeyPatch):
    root.mkdir(parents=True)
    monkeypatch.setenv("MEMFOLD_MEMORY__RETREIVE_LIMIT", "5")
    with pytest.raises(ConfigError) as exc:
        load_settings(root)
    assert "'retreive_limit' in environment variable MEMFOLD_MEMORY__RETREIVE_LIMIT" in str(exc.value)
    assert "config.toml" not in str(exc.value)
    monkeypatch.delenv("MEMFOLD_MEMORY__RETREIVE_LIMIT")
    (root / "config.json").write_text(json.dumps({"memory": {"retrieve_limt": 5}}), encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_settings(root)
    assert f"'retrieve_limt' in {root / 'config.json'} [memory]" in str(exc.value)
    assert "config.toml" not in str(exc.value)
    (root / "config.json").write_text(json.dumps({"memory": {"retrieve_limit": "ten"}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config.json \[memory\] must be an int, got 'ten'"):
        load_settings(root)
    (root / "config.json").unlink()
    monkeypatch.setenv("MEMFOLD_INDEX__VECTOR_EXACT_MAX", "many")
    with pytest.raises(ConfigError, match="'vector_exact_max' in environment variable MEMFOLD_INDEX__VECTOR_EXACT_MAX "
                                          "must be an int, got 'many'"):
        load_settings(root)


def test_a_base_url_implies_the_openai_compatible_provider(root: Path, monkeypatch: pytest.MonkeyPatch, llm_server):
    monkeypatch.setenv("MEMFOLD_LLM__BASE_URL", llm_server.base_url)
    with pytest.raises(ConfigError) as exc:
        load_settings(root)
    assert "MEMFOLD_LLM__BASE_URL" in str(exc.value) and "model" in str(exc.value)
    monkeypatch.setenv("MEMFOLD_LLM__MODEL", "qwen-plus")
    settings = load_settings(root)
    assert settings.llm.provider == "openai"
    chat = make_chat_model(settings.llm)
    assert isinstance(chat, OpenAIChatModel) and chat.base_url == llm_server.base_url.rstrip("/")
    llm_server.script("pong")
    assert chat.complete([{"role": "user", "content": "ping"}]).text == "pong"
    monkeypatch.delenv("MEMFOLD_LLM__BASE_URL")
    assert load_settings(root).llm.provider == ""  # a model alone is no endpoint: still no LLM


def test_init_with_another_language_keeps_the_existing_file_and_its_language(root: Path, embedder):
    with Memory(root=root, embedder=embedder) as m:
        m.init("dan", "en")
        m.init("dan", "zh")  # the file exists: it is kept, and so is its language
        assert m.language("dan") == "en" and "## Notes" in m.show("dan")
        m.add("I will call the plumber tomorrow", "dan")
        assert "待办" not in m.show("dan")
