"""The OpenAI-compatible chat client against the scripted server: request shape, JSON mode and
its fallback, retries with backoff, error translation, config from the environment."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from memfold.config import LLMSettings, load_settings
from memfold.errors import ConfigError, ProviderError, ProviderResponseError, ProviderTimeout
from memfold.providers import openai_chat
from memfold.providers.chat import ChatModel, make_chat_model
from memfold.providers.openai_chat import OpenAIChatModel

from ..support.openai_server import Reply

SCHEMA = {"title": "probe", "type": "object", "properties": {"ok": {"type": "boolean"}}}
MSGS = [{"role": "user", "content": "Answer with JSON."}]


def _model(server, **kw) -> OpenAIChatModel:
    base = dict(provider="openai", base_url=server.base_url, model="test-model", timeout=2.0, max_retries=2,
                backoff=0.01)
    base.update(kw)
    return OpenAIChatModel(LLMSettings(**base))


def test_request_shape_key_from_env_and_usage(llm_server, monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", "sk-test-key-not-a-real-one-123456")
    llm_server.script(Reply('{"ok": true}', usage={"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}))
    chat = _model(llm_server, api_key_env="MY_LLM_KEY")
    assert isinstance(chat, ChatModel)
    res = chat.complete(MSGS, json_schema=SCHEMA, temperature=0.1)
    assert res.text == '{"ok": true}'
    assert res.usage == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    assert res.model == "test-model"
    req = llm_server.chat_requests()[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "test-model"
    assert req["body"]["messages"] == MSGS
    assert req["body"]["temperature"] == 0.1
    assert req["body"]["response_format"] == {"type": "json_object"}
    assert req["headers"]["Authorization"] == "Bearer sk-test-key-not-a-real-one-123456"
    # the key travels in the header only, never in the body
    assert "sk-test-key" not in req["raw"]


def test_no_schema_means_no_response_format_and_no_key_means_no_header(llm_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_server.script("plain text")
    assert _model(llm_server).complete(MSGS).text == "plain text"
    req = llm_server.chat_requests()[0]
    assert "response_format" not in req["body"]
    assert "Authorization" not in req["headers"]


def test_json_mode_falls_back_when_the_endpoint_rejects_response_format(llm_server):
    llm_server.script(Reply("response_format is not supported by this server", status=400), '{"ok": true}',
                      '{"ok": true}')
    chat = _model(llm_server)
    assert chat.complete(MSGS, json_schema=SCHEMA).text == '{"ok": true}'
    assert chat.last_json_mode == "off"
    first, second = llm_server.chat_requests()
    assert "response_format" in first["body"] and "response_format" not in second["body"]
    chat.complete(MSGS, json_schema=SCHEMA)  # remembered: not asked with the field again
    assert "response_format" not in llm_server.chat_requests()[2]["body"]


def test_json_schema_mode_steps_down_to_json_object(llm_server):
    llm_server.script(Reply("unknown type json_schema", status=422), '{"ok": true}')
    chat = _model(llm_server, json_mode="json_schema")
    chat.complete(MSGS, json_schema=SCHEMA)
    first, second = llm_server.chat_requests()
    assert first["body"]["response_format"]["type"] == "json_schema"
    assert first["body"]["response_format"]["json_schema"]["schema"] == SCHEMA
    assert second["body"]["response_format"] == {"type": "json_object"}


def test_json_mode_off_and_strict_json_object(llm_server):
    llm_server.script('{"ok": true}')
    _model(llm_server, json_mode="off").complete(MSGS, json_schema=SCHEMA)
    assert "response_format" not in llm_server.chat_requests()[0]["body"]
    llm_server.script(Reply("bad request", status=400))
    with pytest.raises(ProviderResponseError, match="HTTP 400"):
        _model(llm_server, json_mode="json_object").complete(MSGS, json_schema=SCHEMA)


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_retries_5xx_and_429_then_succeeds(llm_server, status):
    llm_server.script(Reply("busy", status=status), Reply("busy", status=status), '{"ok": true}')
    assert _model(llm_server).complete(MSGS).text == '{"ok": true}'
    assert len(llm_server.chat_requests()) == 3


def test_backoff_is_exponential(llm_server, monkeypatch):
    # the waits are recorded rather than timed: four retries tell doubling from any linear growth
    waits: list[float] = []
    monkeypatch.setattr(openai_chat, "time", SimpleNamespace(sleep=waits.append))
    llm_server.script(*[Reply(status=500)] * 4, "done")
    assert _model(llm_server, backoff=0.1, max_retries=4).complete(MSGS).text == "done"
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.8])
    assert len(llm_server.chat_requests()) == 5


def test_gives_up_after_max_retries_with_a_clear_error(llm_server):
    llm_server.script(*[Reply("overloaded", status=503)] * 5)
    with pytest.raises(ProviderResponseError, match=r"HTTP 503.*after 3 attempts"):
        _model(llm_server, max_retries=2).complete(MSGS)
    assert len(llm_server.chat_requests()) == 3


def test_timeout_is_retried_then_translated(llm_server):
    llm_server.script(Reply("late", delay=0.6), "in time")
    assert _model(llm_server, timeout=0.2, max_retries=1).complete(MSGS).text == "in time"
    llm_server.script(Reply("late", delay=0.6), Reply("late", delay=0.6))
    with pytest.raises(ProviderTimeout, match="did not answer"):
        _model(llm_server, timeout=0.2, max_retries=1).complete(MSGS)


@pytest.mark.parametrize("status", [401, 403, 404])
def test_client_errors_are_not_retried(llm_server, status):
    llm_server.script(Reply("nope", status=status), "never sent")
    with pytest.raises(ProviderResponseError, match=f"HTTP {status}"):
        _model(llm_server).complete(MSGS)
    assert len(llm_server.chat_requests()) == 1


@pytest.mark.parametrize("raw", [b"<html>502 bad gateway</html>", b'{"choices": []}', b'{"choices": [{"message": {}}]}',
                                 b"[1, 2]"])
def test_unusable_bodies_raise_provider_response_error(llm_server, raw):
    llm_server.script(Reply(raw=raw))
    with pytest.raises(ProviderResponseError):
        _model(llm_server).complete(MSGS)


def test_unreachable_endpoint_is_a_provider_error():
    chat = OpenAIChatModel(LLMSettings(provider="openai", base_url="http://127.0.0.1:9/v1", model="m",
                                       timeout=1.0, max_retries=0))
    with pytest.raises(ProviderError, match="unreachable"):
        chat.complete(MSGS)


def test_registry_and_config_errors(tmp_path: Path, llm_server, monkeypatch):
    assert make_chat_model(LLMSettings()) is None
    with pytest.raises(ConfigError, match="base_url and model"):
        make_chat_model(LLMSettings(provider="openai"))
    with pytest.raises(ConfigError, match="json_mode"):
        make_chat_model(LLMSettings(provider="openai", base_url="http://x/v1", model="m", json_mode="yes"))
    with pytest.raises(ConfigError, match="provider"):
        make_chat_model(LLMSettings(provider="anthropic"))
    monkeypatch.setenv("MEMFOLD_LLM__PROVIDER", "openai")
    monkeypatch.setenv("MEMFOLD_LLM__BASE_URL", llm_server.base_url)
    monkeypatch.setenv("MEMFOLD_LLM__MODEL", "env-model")
    monkeypatch.setenv("MEMFOLD_LLM__MAX_CALLS_PER_OPERATION", "3")
    settings = load_settings(tmp_path)
    assert settings.llm.max_calls_per_operation == 3
    chat = make_chat_model(settings.llm)
    assert isinstance(chat, OpenAIChatModel) and chat.name == "openai:env-model"
    llm_server.script("hi")
    chat.complete(MSGS)
    assert llm_server.chat_requests()[0]["body"]["model"] == "env-model"
    monkeypatch.setenv("MEMFOLD_LLM__MAX_CALLS_PER_OPERATION", "many")
    with pytest.raises(ConfigError, match="max_calls_per_operation"):
        load_settings(tmp_path)


def test_config_toml_llm_section(tmp_path: Path, llm_server):
    (tmp_path / "config.toml").write_text(
        f'[llm]\nprovider = "openai"\nbase_url = "{llm_server.base_url}"\nmodel = "qwen-plus"\n'
        'json_mode = "off"\nbackoff = 0.5\n', encoding="utf-8")
    s = load_settings(tmp_path).llm
    assert (s.model, s.json_mode, s.backoff) == ("qwen-plus", "off", 0.5)


def test_docs_give_an_example_for_every_endpoint_and_every_setting():
    from dataclasses import fields

    text = (Path(__file__).resolve().parents[2] / "docs" / "llm.md").read_text(encoding="utf-8")
    for name in ("OpenAI", "DeepSeek", "Qwen", "DashScope", "Ollama", "vLLM", "llama.cpp", "memfold doctor"):
        assert name in text, name
    for f in fields(LLMSettings):
        assert f"{f.name} =" in text, f.name
