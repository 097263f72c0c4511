"""Cost control and diagnostics: token usage per operation in ``memfold stats``, and
``memfold doctor`` reporting which endpoints work."""

from __future__ import annotations

import json

from memfold import Memory
from memfold.config import load_settings

from ..conftest import run_cli
from ..support.openai_server import Reply, ScriptedOpenAIServer

EXTRACTED = json.dumps({"memories": [{"memory_type": "fact", "content": "The user owns a red bicycle",
                                      "structured_data": {}, "importance_score": 0.6}]})


def test_usage_is_recorded_per_operation(root, llm_server, embedder):
    mem = Memory(settings=load_settings(root, llm=dict(provider="openai", base_url=llm_server.base_url, model="m",
                                                       max_retries=0)), embedder=embedder)
    assert mem.stats()["llm_usage"]["calls"] == 0
    llm_server.script(Reply(EXTRACTED, usage={"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}))
    mem.add([{"role": "user", "content": "I ride my red bicycle to work."}])
    llm_server.script(Reply("nonsense", usage={"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102}),
                      Reply('{"memories": []}', usage={"prompt_tokens": 140, "completion_tokens": 4,
                                                       "total_tokens": 144}))
    mem.add([{"role": "user", "content": "Hello there!"}])
    mem.add("The user's bicycle is blue now", user_id="other")  # no similar memory there: no call
    usage = mem.stats()["llm_usage"]
    assert usage["operations"] == 2 and usage["calls"] == 3 and usage["failures"] == 1
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (360, 36, 396)
    assert usage["by_operation"]["add"]["total_tokens"] == 396
    assert usage["last"]["calls"] == 2 and usage["last"]["total_tokens"] == 246
    assert usage["last"]["purposes"] == {"extract": 2}
    assert mem.stats("other")["llm_usage"]["calls"] == 0  # per namespace
    mem.close()


def test_doctor_reports_what_works(tmp_path, llm_server):
    env = {"MEMFOLD_LLM__PROVIDER": "openai", "MEMFOLD_LLM__BASE_URL": llm_server.base_url,
           "MEMFOLD_LLM__MODEL": "tiny", "MEMFOLD_LLM__API_KEY_ENV": "DOCTOR_TEST_KEY",
           "DOCTOR_TEST_KEY": "sk-doctor-secret-value-0123456789"}
    llm_server.script('{"ok": true}')
    r = run_cli(tmp_path / "ws", "doctor", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   embedder" in r.stdout and "use-multilingual-v3" in r.stdout
    assert "ok   llm" in r.stdout and "answers JSON" in r.stdout and "json_object" in r.stdout
    assert "sk-doctor-secret" not in r.stdout + r.stderr
    req = llm_server.chat_requests()[-1]
    assert req["body"]["model"] == "tiny" and req["body"]["response_format"] == {"type": "json_object"}
    llm_server.script('{"ok": true}')
    data = json.loads(run_cli(tmp_path / "ws", "doctor", "--json", "--skip-embedder", env=env).stdout)
    (check,) = data["checks"]
    assert check["ok"] is True and check["api_key_env"] == "DOCTOR_TEST_KEY (set)" and check["usage"]["total_tokens"]


def test_doctor_fails_clearly_on_a_broken_endpoint(tmp_path):
    srv = ScriptedOpenAIServer().start()
    env = {"MEMFOLD_LLM__PROVIDER": "openai", "MEMFOLD_LLM__BASE_URL": srv.base_url, "MEMFOLD_LLM__MODEL": "m",
           "MEMFOLD_LLM__MAX_RETRIES": "0"}
    try:
        srv.script(Reply("model not found", status=404))
        r = run_cli(tmp_path / "ws", "doctor", "--skip-embedder", env=env)
        assert r.returncode == 1
        assert "FAIL llm" in r.stdout and "HTTP 404" in r.stdout and "model not found" in r.stdout
        srv.script("I am a chatty model, no JSON here")
        r = run_cli(tmp_path / "ws", "doctor", "--skip-embedder", env=env)
        assert r.returncode == 1 and "not with JSON" in r.stdout
    finally:
        srv.stop()
    r = run_cli(tmp_path / "ws", "doctor", "--skip-embedder", env=env)  # nobody listens any more
    assert r.returncode == 1 and "unreachable" in r.stdout


def test_doctor_without_llm_says_the_rules_are_used(tmp_path):
    r = run_cli(tmp_path / "ws", "doctor", "--skip-embedder")
    assert r.returncode == 0
    assert "no LLM configured" in r.stdout and "deterministic" in r.stdout


def test_doctor_reports_a_broken_embedder_endpoint(tmp_path):
    env = {"MEMFOLD_EMBEDDER__PROVIDER": "openai", "MEMFOLD_EMBEDDER__BASE_URL": "http://127.0.0.1:9/v1",
           "MEMFOLD_EMBEDDER__MODEL": "e", "MEMFOLD_EMBEDDER__TIMEOUT": "1"}
    r = run_cli(tmp_path / "ws", "doctor", env=env)
    assert r.returncode == 1 and "FAIL embedder" in r.stdout and "unreachable" in r.stdout
    assert "--   llm" in r.stdout
