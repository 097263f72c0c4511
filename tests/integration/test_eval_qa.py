"""Answer accuracy through the real command line (``memfold eval locomo|longmemeval FILE --qa``)
against the scripted OpenAI-compatible server: the answering model reads memfold's context, the
judge's verdicts make the accuracy by category, the full-context baseline reads the whole
conversation, and the agentic mode runs the model's memory_search / memory_read calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..conftest import run_cli
from ..support.openai_server import Reply, ScriptedOpenAIServer, tool_call


def _locomo(tmp_path: Path) -> Path:
    conv = {"speaker_a": "Alice", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Alice", "dia_id": "D1:1", "text": "I started working as a baker in Lyon."},
                          {"speaker": "Bob", "dia_id": "D1:2", "text": "That sounds lovely, Alice!"}],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [{"speaker": "Alice", "dia_id": "D2:1", "text": "I play the cello every Sunday now."},
                          {"speaker": "Bob", "dia_id": "D2:2", "text": "I adopted a grey cat named Miso."}]}
    qa = [{"question": "Where does Alice work?", "answer": "a bakery in Lyon", "evidence": ["D1:1"], "category": 4},
          {"question": "What pet did Bob adopt?", "answer": "a cat", "evidence": ["D2:2"], "category": 1},
          {"question": "Which instrument does Bob play?", "answer": "none", "adversarial_answer": "the cello",
           "evidence": ["D2:1"], "category": 5},
          {"question": "When did Alice start as a baker?", "answer": "May 2023", "evidence": ["D1:1"], "category": 2}]
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conv, "qa": qa}]), encoding="utf-8")
    return path


def _lme(tmp_path: Path) -> Path:
    def session(text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": text, "has_answer": True},
                {"role": "assistant", "content": "Noted, thanks for telling me."}]

    q = {"question_id": "q7_abs", "question_type": "single-session-user", "question": "What is my sister's name?",
         "answer": "You did not mention your sister.", "question_date": "2023/06/01 (Thu) 10:00",
         "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
         "haystack_sessions": [session("My brother Tom moved to Berlin last year.")]}
    path = tmp_path / "tiny_lme.json"
    path.write_text(json.dumps([q]), encoding="utf-8")
    return path


def _qa(tmp_path: Path, data: Path, srv: ScriptedOpenAIServer, kind: str, *extra: str) -> dict[str, Any]:
    res = run_cli(tmp_path / "ws", "eval", kind, str(data), "--qa", "--llm", srv.base_url, "--model", "answerer",
                  "--judge-model", "grader", "--json", "--no-extract", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _messages(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request["body"]["messages"])


def test_locomo_accuracy_by_category_with_the_full_context_baseline(tmp_path: Path,
                                                                    llm_server: ScriptedOpenAIServer) -> None:
    llm_server.script("A bakery in Lyon.", "CORRECT",  # question 1 from memory, judged
                      "In Lyon.", "CORRECT",  # question 1 from the whole conversation, judged
                      "I don't know.", "INCORRECT", "A grey cat.", "**Correct**",
                      "May 2023", "Maybe, hard to say.", Reply(status=400, content="context too long"))
    report = _qa(tmp_path, _locomo(tmp_path), llm_server, "locomo", "--baseline", "full-context")
    assert report["n_questions"] == 3  # category 5 (adversarial) is left out
    assert report["accuracy"] == round(1 / 3, 4)
    assert report["by_category"] == {"1": {"n_questions": 1, "accuracy": 0.0}, "2": {"n_questions": 1, "accuracy": 0.0},
                                     "4": {"n_questions": 1, "accuracy": 1.0}}
    assert report["judge_unclear"] == 1 and report["answer_errors"] == 0
    base = report["baselines"]["full-context"]
    assert base["accuracy"] == round(2 / 3, 4) and base["answer_errors"] == 1
    assert base["context_tokens"]["mean"] > 0 and report["context_tokens"]["mean"] > 0
    assert report["llm_usage"]["answer"]["calls"] == 6 and report["llm_usage"]["judge"]["calls"] == 5
    reqs = llm_server.chat_requests()
    assert len(reqs) == 11
    first, judged, whole = reqs[0], reqs[1], reqs[2]
    assert first["body"]["model"] == "answerer" and judged["body"]["model"] == "grader"
    assert "I started working as a baker in Lyon." in _messages(first)  # memfold's context for the question
    assert "I adopted a grey cat" not in _messages(first)
    assert "Reference answer: a bakery in Lyon\nCandidate answer: A bakery in Lyon." in _messages(judged)
    assert "## Session of 2023-05-08" in _messages(whole) and "I adopted a grey cat named Miso." in _messages(whole)
    assert not any("Which instrument does Bob play?" in _messages(r) for r in reqs)
    rows = report["questions"]
    assert [r["verdict"] for r in rows] == ["CORRECT", "WRONG", None]


def test_agentic_mode_runs_the_read_tools(tmp_path: Path, llm_server: ScriptedOpenAIServer) -> None:
    llm_server.script(Reply(tool_calls=[tool_call("memory_search", {"query": "cello Sunday"}, "c1"),
                                        tool_call("memory_append", {"text": "Bob plays drums"}, "c2")]),
                      Reply(tool_calls=[tool_call("memory_read", {}, "c3")]),
                      "Alice plays the cello.", "CORRECT")
    data = _locomo(tmp_path)
    report = _qa(tmp_path, data, llm_server, "locomo", "--agentic", "--max-steps", "3", "--limit", "1")
    assert report["mode"] == "agentic" and report["n_questions"] == 1 and report["accuracy"] == 1.0
    assert report["questions"][0]["tool_calls"] == ["memory_search", "memory_append", "memory_read"]
    reqs = llm_server.chat_requests()
    offered = [t["function"]["name"] for t in reqs[0]["body"]["tools"]]
    assert offered == ["memory_search", "memory_read"]  # reading only: the run never writes
    tools = {m["tool_call_id"]: json.loads(m["content"]) for m in reqs[1]["body"]["messages"] if m["role"] == "tool"}
    assert tools["c1"]["ok"] and any("cello" in h["content"] for h in tools["c1"]["results"])
    assert tools["c2"]["ok"] is False and tools["c2"]["error"]["code"] == "unknown_tool"
    read = [json.loads(m["content"]) for m in reqs[2]["body"]["messages"] if m["role"] == "tool" and
            m["tool_call_id"] == "c3"][0]
    assert read["ok"] and "Bob plays drums" not in json.dumps(read)
    assert report["context_tokens"]["mean"] > 0


def test_longmemeval_abstention_is_judged_as_abstention(tmp_path: Path, llm_server: ScriptedOpenAIServer) -> None:
    llm_server.script("I don't know; you never told me.", "CORRECT")
    report = _qa(tmp_path, _lme(tmp_path), llm_server, "longmemeval", "--limit", "5")
    assert report["by_category"] == {"abstention": {"n_questions": 1, "accuracy": 1.0}}
    answer, judged = llm_server.chat_requests()
    assert "asked on 2023-06-01, Thursday" in _messages(answer)
    assert "cannot be answered" in judged["body"]["messages"][0]["content"]


def test_qa_options_are_checked(tmp_path: Path, llm_server: ScriptedOpenAIServer) -> None:
    data = _locomo(tmp_path)
    res = run_cli(tmp_path / "ws", "eval", "locomo", str(data), "--llm", llm_server.base_url)
    assert res.returncode == 1 and "--llm needs --qa" in res.stderr
    res = run_cli(tmp_path / "ws", "eval", "locomo", str(data), "--qa", "--llm", llm_server.base_url)
    assert res.returncode == 1 and "--qa needs --llm URL" in res.stderr
    res = run_cli(tmp_path / "ws", "eval", "locomo", str(data), "--qa", "--llm", llm_server.base_url, "--model", "m",
                  "--baseline", "oracle")
    assert res.returncode == 1 and "unknown baseline 'oracle'" in res.stderr
    assert not llm_server.chat_requests()
